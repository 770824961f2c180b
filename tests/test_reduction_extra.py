"""Reduction behaviour beyond the registry's samples: accumulation dtypes and precision, return
types, tie-breaking, numerical stability, and error messages."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _both(data, dtype):
    return ember.tensor(np.asarray(data), dtype=getattr(ember, dtype)), \
        torch.tensor(np.asarray(data), dtype=getattr(torch, dtype))


def test_integer_sums_accumulate_in_int64():
    e, t = _both([100, 100, 100], "int8")
    assert ember.sum(e).item() == torch.sum(t).item() == 300
    assert ember.cumsum(e, 0).tolist() == torch.cumsum(t, 0).tolist() == [100, 200, 300]
    assert ember.prod(e).dtype is ember.int64
    # an explicit dtype wraps like torch
    assert ember.sum(e, dtype=ember.int8).item() == torch.sum(t, dtype=torch.int8).item()


def test_half_precision_sums_accumulate_in_float32():
    e, t = _both(np.full(10000, 0.1, np.float32), "float16")
    assert ember.sum(e).item() == torch.sum(t).item()
    assert abs(ember.sum(e).item() - 1000.0) < 1.0  # a float16 accumulator would stall at 256
    assert ember.mean(e).item() == pytest.approx(torch.mean(t).item(), rel=1e-3)
    big, tbig = _both([30000.0] * 3, "float16")
    assert ember.mean(big).item() == torch.mean(tbig).item() == 30000.0  # no overflow in the mean
    assert ember.sum(big).item() == torch.sum(tbig).item() == float("inf")


def test_return_types_have_named_fields():
    x = ember.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]])
    r = ember.max(x, 1)
    assert r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0]
    v, i = x.min(dim=0, keepdim=True)
    assert v.shape == (1, 3) and i.tolist() == [[0, 1, 0]]
    assert type(r).__name__ == "max"
    c = ember.cummax(x, 1)
    assert c.values.tolist() == [[1, 5, 5], [7, 7, 7]] and c.indices.tolist() == [[0, 1, 1], [0, 0, 2]]
    vm = ember.var_mean(x, 1)
    assert vm.var.shape == vm.mean.shape == (2,)
    mm = ember.aminmax(x)
    assert (mm.min.item(), mm.max.item()) == (0.0, 7.0)


def test_ties_match_torch():
    """argmax/max pick the first extreme, cummax/cummin the latest, as PyTorch's CPU kernels do."""
    data = np.array([[3, 1, 3, 1, 3], [0, 0, 0, 0, 0], [2, 5, 5, 1, 5]])
    e, t = _both(data, "int64")
    assert ember.argmax(e, 1).tolist() == torch.argmax(t, 1).tolist()
    assert ember.argmin(e, 1).tolist() == torch.argmin(t, 1).tolist()
    assert ember.max(e, 1).indices.tolist() == torch.max(t, 1).indices.tolist()
    assert ember.cummax(e, 1).indices.tolist() == torch.cummax(t, 1).indices.tolist()
    assert ember.cummin(e, 1).indices.tolist() == torch.cummin(t, 1).indices.tolist()


def test_nan_is_the_extreme():
    data = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 2.0, 9.0, 1.0]], np.float32)
    e, t = _both(data, "float32")
    for fn in ("argmax", "argmin"):
        assert getattr(ember, fn)(e, 1).tolist() == getattr(torch, fn)(t, 1).tolist()
    np.testing.assert_array_equal(ember.max(e, 1).values.numpy(), torch.max(t, 1).values.numpy())
    assert np.isnan(ember.amax(e).item()) and np.isnan(ember.min(e).item())
    assert ember.cummax(e, 1).indices.tolist() == torch.cummax(t, 1).indices.tolist()


def test_logsumexp_is_stable():
    for data in ([1000.0, 1000.0], [-1000.0, -1000.0], [float("inf"), 1.0], [-float("inf")] * 2, [3.0, float("nan")]):
        e, t = _both(data, "float32")
        np.testing.assert_allclose(ember.logsumexp(e, 0).numpy(), torch.logsumexp(t, 0).numpy(), rtol=1e-6)


def test_var_with_correction_past_the_count():
    e, t = _both([[1.0, 2.0], [3.0, 3.0]], "float64")
    for c in (2, 3, 0.5, 1.5):
        np.testing.assert_allclose(ember.var(e, 1, correction=c).numpy(), torch.var(t, 1, correction=c).numpy())


def test_keepdim_shapes_and_negative_dims():
    x = ember.ones(2, 3, 4)
    assert ember.sum(x, (-1, 0), keepdim=True).shape == (1, 3, 1)
    assert ember.amax(x, -2).shape == (2, 4)
    assert ember.argmax(x, -1, keepdim=True).shape == (2, 3, 1)
    assert ember.argmax(x, keepdim=True).shape == (1, 1, 1)
    assert ember.std(x, dim=(0, 1)).shape == (4,)
    assert ember.all(x, -1).shape == (2, 3)


def test_errors_name_the_op():
    with pytest.raises(IndexError, match=r"sum.*\[-3, 2\].*5"):
        ember.sum(ember.ones(2, 3, 4), 5)
    with pytest.raises(RuntimeError, match=r"max\(\).*numel\(\) == 0"):
        ember.max(ember.ones(0, 3))
    with pytest.raises(IndexError, match=r"amax\(\).*dim 0"):
        ember.amax(ember.ones(0, 3), 0)
    with pytest.raises(RuntimeError, match=r"mean\(\).*Long|mean\(\).*Int64"):
        ember.mean(ember.ones(3, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        ember.sum(ember.ones(2, 3), (1, -1))
    with pytest.raises(RuntimeError, match="argmax.*bool"):
        ember.argmax(ember.ones(3, dtype=ember.bool))


def test_all_any_keep_uint8():
    e, t = _both([[0, 3], [1, 1]], "uint8")
    for fn in ("all", "any"):
        r, w = getattr(ember, fn)(e, 1), getattr(torch, fn)(t, 1)
        assert r.dtype is ember.uint8 and r.tolist() == w.tolist()


def test_reductions_of_views_and_expanded():
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    e, t = ember.tensor(base).permute(2, 0, 1)[::2], torch.tensor(base).permute(2, 0, 1)[::2]
    np.testing.assert_allclose(ember.sum(e, (0, 2)).numpy(), torch.sum(t, (0, 2)).numpy())
    np.testing.assert_allclose(ember.cumsum(e, 1).numpy(), torch.cumsum(t, 1).numpy())
    ex, tx = ember.tensor([1.0, 2.0]).expand(3, 2), torch.tensor([1.0, 2.0]).expand(3, 2)
    np.testing.assert_allclose(ember.var(ex, 0).numpy(), torch.var(tx, 0).numpy())
