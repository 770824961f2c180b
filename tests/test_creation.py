"""Creation and conversion beyond the registry: range lengths, memory sharing, default dtype,
dtype inference, and whole-tensor comparisons, all against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.numpy() if isinstance(t, ember.Tensor) else t.detach().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64", None])
def test_arange_float_steps_length_and_values(dtype):
    """Random float ranges: the length (ceil((end - start) / step) in double) and values match."""
    rng = np.random.default_rng(0)
    ed = None if dtype is None else getattr(ember, dtype)
    td = None if dtype is None else getattr(torch, dtype)
    cases = [(0, 1, 0.1), (0.1, 0.3, 0.1), (-0.3, 0, 0.1), (1, 0, -0.1), (0, 1, 1 / 3), (0, 0.7, 0.07)]
    for _ in range(150):
        start = round(float(rng.uniform(-5, 5)), int(rng.integers(0, 3)))
        step = round(float(rng.choice([-1, 1]) * rng.uniform(0.01, 2)), int(rng.integers(1, 4)))
        end = start + step * float(rng.integers(0, 40)) + round(float(rng.uniform(-0.5, 0.5)) * step, 2)
        if step == 0 or (end - start) * step < 0:
            continue
        cases.append((start, end, step))
    for start, end, step in cases:
        want = torch.arange(start, end, step, dtype=td)
        got = ember.arange(start, end, step, dtype=ed)
        assert tuple(got.shape) == tuple(want.shape), (start, end, step)
        assert got.dtype.name == str(want.dtype).removeprefix("torch.")
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-6, atol=1e-6, err_msg=str((start, end, step)))


def test_arange_integer_ranges():
    for args in [(10,), (3, 17, 4), (17, 3, -4), (-5, 5), (0, 0), (7, 3, -1)]:
        want, got = torch.arange(*args), ember.arange(*args)
        assert got.dtype is ember.int64
        np.testing.assert_array_equal(_np(got), _np(want))
    np.testing.assert_array_equal(_np(ember.arange(ember.tensor(4))), _np(torch.arange(torch.tensor(4))))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int32", "int64", "uint8"])
def test_linspace_and_logspace_grid(dtype):
    ed, td = getattr(ember, dtype), getattr(torch, dtype)
    tol = {"float16": 2e-3, "bfloat16": 1e-2}.get(dtype, 1e-6)
    for start, end, steps in [(0, 1, 11), (-3, 7, 6), (5, 5, 4), (2, -2, 9), (0, 200, 37), (1, 3, 2)]:
        if dtype == "uint8" and min(start, end) < 0:
            continue
        want = torch.linspace(start, end, steps, dtype=td)
        got = ember.linspace(start, end, steps, dtype=ed)
        np.testing.assert_allclose(_np(got.float()), _np(want.float()), rtol=tol, atol=tol)
    if dtype.startswith("float") or dtype == "bfloat16":
        for start, end, steps, base in [(0, 3, 4, 10.0), (-2, 2, 5, 2.0), (0, 1, 1, 3.0)]:
            want = torch.logspace(start, end, steps, base=base, dtype=td)
            got = ember.logspace(start, end, steps, base=base, dtype=ed)
            np.testing.assert_allclose(_np(got.float()), _np(want.float()), rtol=tol)


def test_default_dtype_applies_to_float_creation():
    old = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        torch.set_default_dtype(torch.float64)
        made = {
            "zeros": (ember.zeros(2), torch.zeros(2)), "ones": (ember.ones(2), torch.ones(2)),
            "empty": (ember.empty(2), torch.empty(2)), "tensor-float": (ember.tensor([1.5]), torch.tensor([1.5])),
            "tensor-int": (ember.tensor([1]), torch.tensor([1])),
            "arange-float": (ember.arange(0.0, 1), torch.arange(0.0, 1)),
            "arange-int": (ember.arange(3), torch.arange(3)),
            "linspace": (ember.linspace(0, 1, 3), torch.linspace(0, 1, 3)),
            "full-float": (ember.full((2,), 1.5), torch.full((2,), 1.5)), "eye": (ember.eye(2), torch.eye(2)),
        }
        for name, (e, t) in made.items():
            assert e.dtype.name == str(t.dtype).removeprefix("torch."), name
    finally:
        ember.set_default_dtype(old)
        torch.set_default_dtype(torch.float32)


def test_tensor_copies_and_as_tensor_shares():
    a = np.arange(6, dtype=np.float32)
    copied, shared, converted = ember.tensor(a), ember.as_tensor(a), ember.as_tensor(a, dtype=ember.float64)
    from_np = ember.from_numpy(a)
    a[0] = 100
    assert copied[0].item() == 0 and converted[0].item() == 0
    assert shared[0].item() == 100 and from_np[0].item() == 100
    t = ember.arange(3)
    assert ember.as_tensor(t) is t and ember.as_tensor(t, dtype=ember.int64) is t
    assert ember.as_tensor(t, dtype=ember.float32).dtype is ember.float32


def test_tensor_dtype_inference_matches_torch():
    for data in ([1, 2], [1.0, 2], [True, 1], [True, False], [[1, 2.5], [3, 4]], 3, 3.5, False, (1, 2.0),
                 [[1], [2]], [np.float32(1.5), 2], np.array([1, 2], np.int16), [], [[]], np.float16(1.0)):
        want, got = torch.tensor(data), ember.tensor(data)
        assert got.dtype.name == str(want.dtype).removeprefix("torch."), data
        assert tuple(got.shape) == tuple(want.shape), data
        np.testing.assert_array_equal(_np(got), _np(want))


def test_tensor_rejects_bad_data():
    with pytest.raises(ValueError):
        ember.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        ember.tensor("abc")
    with pytest.raises(TypeError):
        ember.tensor({1: 2})
    with pytest.raises(RuntimeError, match="overflow"):
        ember.tensor([1000], dtype=ember.int8)


def test_empty_and_like_ops_keep_shape_dtype_device():
    x = ember.arange(12, dtype=ember.int16).reshape(3, 4).t()
    for fn in (ember.empty_like, ember.zeros_like, ember.ones_like):
        y = fn(x)
        assert tuple(y.shape) == (4, 3) and y.dtype is ember.int16 and y.device == x.device
    assert ember.full_like(x, 7).tolist() == [[7] * 3] * 4
    assert ember.zeros_like(x, dtype=ember.bool).dtype is ember.bool
    e = ember.empty(2, 0, 3)
    assert tuple(e.shape) == (2, 0, 3) and e.numel() == 0


def test_clone_and_to_are_independent_copies():
    x = ember.arange(6.0).reshape(2, 3)
    c, d, same = x.clone(), x.to(ember.float64), x.to(ember.float32)
    assert same is x and x.to(ember.float32, copy=True) is not x
    c.fill_(-1)
    d.fill_(-1)
    assert x.sum().item() == 15
    assert x.to("cpu") is x and x.to(x).dtype is x.dtype
    assert x.to(ember.zeros(1, dtype=ember.int32)).dtype is ember.int32


def test_type_names_and_casts_match_torch():
    x = np.array([[-1.7, 0.0, 2.5], [3.9, -0.2, 100.0]], dtype=np.float32)
    e, t = ember.tensor(x), torch.tensor(x)
    for name in ("float", "double", "half", "bfloat16", "long", "int", "short", "char", "bool"):
        ge, gt = getattr(e, name)(), getattr(t, name)()
        assert ge.dtype.name == str(gt.dtype).removeprefix("torch."), name
        np.testing.assert_array_equal(_np(ge.float()), _np(gt.float()), err_msg=name)
    assert e.type() == "ember.FloatTensor" and t.type() == "torch.FloatTensor"
    assert e.type(ember.int64).dtype is ember.int64


def test_metadata_queries():
    e, t = ember.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    assert e.numel() == t.numel() == ember.numel(e) == 24
    assert e.dim() == e.ndim == 3
    assert e.size() == t.size() and e.shape == t.shape and e.size(-2) == 3
    assert isinstance(e.shape, tuple) and e.shape.numel() == 24
    assert repr(e.shape) == "ember.Size([2, 3, 4])"
    with pytest.raises(IndexError):
        e.size(3)


def test_allclose_isclose_equal_semantics():
    a = ember.tensor([1.0, float("nan"), float("inf"), -2.0])
    b = ember.tensor([1.0 + 1e-7, float("nan"), float("inf"), -2.1])
    ta, tb = torch.tensor(a.numpy()), torch.tensor(b.numpy())
    np.testing.assert_array_equal(ember.isclose(a, b).numpy(), torch.isclose(ta, tb).numpy())
    np.testing.assert_array_equal(ember.isclose(a, b, equal_nan=True, rtol=0.1).numpy(),
                                  torch.isclose(ta, tb, equal_nan=True, rtol=0.1).numpy())
    assert ember.allclose(a[:1], b[:1]) and not ember.allclose(a, b)
    assert ember.allclose(a[[0, 2]], b[[0, 2]])
    assert ember.allclose(ember.ones(2, 3), ember.tensor(1.0))  # broadcasting
    assert ember.equal(ember.tensor([1, 2]), ember.tensor([1.0, 2.0]))  # values, not dtypes
    assert not ember.equal(ember.ones(2), ember.ones(1, 2))  # no broadcasting
    assert not ember.equal(a, a)  # NaN != NaN
    assert a.equal(a.clone()) is False and a[:1].allclose(b[:1]) is True
    with pytest.raises(RuntimeError, match="did not match"):
        ember.isclose(ember.ones(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(TypeError):
        ember.allclose(ember.ones(2), 1.0)
    ints = ember.tensor([100, 200], dtype=ember.uint8)
    np.testing.assert_array_equal(ember.isclose(ints, ember.tensor([101, 0], dtype=ember.uint8), rtol=0.05).numpy(),
                                  [True, False])
