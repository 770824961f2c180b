"""Indexing beyond the registry: random keys against PyTorch, out-of-range indices everywhere,
views versus copies, and assignment corner cases."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._indexing import IndexOutOfRange

torch = pytest.importorskip("torch")


def _pair(shape=(3, 4, 5), dtype="float32"):
    data = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    return ember.tensor(data), torch.tensor(data)


def _random_key(rng, shape):
    """A random mix of ints, slices, None, Ellipsis, index lists and masks that is valid for shape."""
    items, d, used_ellipsis = [], 0, False
    while d < len(shape) and rng.random() < 0.85:
        n = shape[d]
        r = rng.random()
        if r < 0.2:
            items.append(int(rng.integers(-n, n)))
        elif r < 0.45:
            a, b = sorted(rng.integers(-n - 1, n + 2, size=2))
            items.append(slice(int(a) if rng.random() < 0.8 else None, int(b) if rng.random() < 0.8 else None,
                               int(rng.integers(1, 4)) if rng.random() < 0.5 else None))
        elif r < 0.55:
            items.append(None)
            continue
        elif r < 0.62 and not used_ellipsis:
            items.append(Ellipsis)
            used_ellipsis = True
            d = max(d, len(shape) - 1 - int(rng.integers(0, 2)))
            continue
        elif r < 0.85:
            items.append(rng.integers(-n, n, size=int(rng.integers(1, 4))).tolist())
        else:
            items.append(rng.random(n) < 0.5)
        d += 1
    return tuple(items)


def _convert(key, lib):
    return tuple(lib.tensor(k) if isinstance(k, np.ndarray) else k for k in key)


@pytest.mark.parametrize("seed", range(6))
def test_random_keys_match_torch(seed):
    rng = np.random.default_rng(seed)
    e, t = _pair()
    for _ in range(60):
        key = _random_key(rng, e.shape)
        try:
            want = t[_convert(key, torch)]
        except IndexError:
            with pytest.raises(IndexError):
                e[_convert(key, ember)]
            continue
        got = e[_convert(key, ember)]
        assert tuple(got.shape) == tuple(want.shape), key
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=str(key))


@pytest.mark.parametrize("seed", range(4))
def test_random_setitem_matches_torch(seed):
    rng = np.random.default_rng(100 + seed)
    e, t = _pair()
    for i in range(40):
        key = _random_key(rng, e.shape)
        # skip keys whose advanced indices repeat a position: the winning write is unspecified
        try:
            target = t[_convert(key, torch)]
        except IndexError:
            continue
        marker = torch.arange(t.numel(), dtype=torch.float32).reshape(t.shape)
        if marker[_convert(key, torch)].flatten().unique().numel() != target.numel():
            continue
        value = float(-i - 1)
        t[_convert(key, torch)] = value
        e[_convert(key, ember)] = value
        np.testing.assert_array_equal(e.numpy(), t.numpy(), err_msg=str(key))


OUT_OF_RANGE = {
    "getitem-int": lambda lib, x: x[3],
    "getitem-second-dim": lambda lib, x: x[0, -5],
    "getitem-list": lambda lib, x: x[[0, 3]],
    "getitem-tensor": lambda lib, x: x[:, lib.tensor([4])],
    "setitem-int": lambda lib, x: x.__setitem__(3, 1.0),
    "setitem-tensor": lambda lib, x: x.__setitem__(lib.tensor([-4]), 1.0),
    "index_select": lambda lib, x: x.index_select(1, lib.tensor([4])),
    "index_select-negative": lambda lib, x: x.index_select(1, lib.tensor([-1])),
    "gather": lambda lib, x: x.gather(1, lib.tensor([[4]])),
    "scatter": lambda lib, x: x.scatter(0, lib.tensor([[3]]), 1.0),
    "scatter_add": lambda lib, x: x.scatter_add(0, lib.tensor([[3]]), x),
    "scatter_reduce": lambda lib, x: x.scatter_reduce(1, lib.tensor([[9]]), x, "amax"),
    "index_add": lambda lib, x: x.index_add(0, lib.tensor([3]), x[:1]),
    "index_copy": lambda lib, x: x.index_copy(0, lib.tensor([3]), x[:1]),
    "index_fill": lambda lib, x: x.index_fill(1, lib.tensor([4]), 0.0),
    "index_put": lambda lib, x: x.index_put((lib.tensor([0]), lib.tensor([4])), lib.tensor(1.0)),
    "index_put-accumulate": lambda lib, x: x.index_put((lib.tensor([3]),), lib.tensor(1.0), accumulate=True),
    "take": lambda lib, x: x.take(lib.tensor([12])),
    "take-negative": lambda lib, x: x.take(lib.tensor([-13])),
    "take_along_dim-flat": lambda lib, x: lib.take_along_dim(x, lib.tensor([12])),
    "narrow-start": lambda lib, x: x.narrow(0, 4, 0),
    "select": lambda lib, x: x.select(1, 4),
}


@pytest.mark.parametrize("name", list(OUT_OF_RANGE))
def test_out_of_range_raises_index_error(name):
    """Every out-of-range index raises IndexError (the issue's rule) and whatever torch raises."""
    fn = OUT_OF_RANGE[name]
    e, t = _pair((3, 4))
    with pytest.raises(Exception) as torch_err:
        fn(torch, t)
    with pytest.raises(IndexError) as ember_err:
        fn(ember, e)
    assert isinstance(ember_err.value, type(torch_err.value)), (type(ember_err.value), type(torch_err.value))


def test_take_along_dim_out_of_range_never_reads_garbage():
    """PyTorch reads outside the tensor here; ember refuses."""
    e, _ = _pair((3, 4))
    with pytest.raises(IndexError, match="out of bounds"):
        ember.take_along_dim(e, ember.tensor([[5, 0, 0, 0]]), 0)
    with pytest.raises(IndexError):
        ember.take_along_dim(e, ember.tensor([[-4]]), 0)
    got = ember.take_along_dim(e, ember.tensor([[-1, 0, 1, 2]]), 0)  # negatives count from the end
    np.testing.assert_array_equal(got.numpy(), [[8, 1, 6, 11]])


def test_index_out_of_range_error_is_both_kinds():
    e = ember.zeros(3)
    with pytest.raises(IndexOutOfRange) as err:
        e.gather(0, ember.tensor([5]))
    assert isinstance(err.value, IndexError) and isinstance(err.value, RuntimeError)
    assert "5" in str(err.value) and "size 3" in str(err.value)


def test_basic_indexing_views_advanced_copies():
    e, t = _pair((3, 4))
    basic, adv, masked = e[1:, ::2], e[[0, 2]], e[e > 5]
    assert basic._base is e and adv._base is None and masked._base is None
    adv.fill_(-1)
    masked.fill_(-1)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    basic.fill_(-1)
    t[1:, ::2] = -1
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_setitem_casts_and_broadcasts_like_torch():
    e, t = _pair((3, 4), "int64")
    for lib, x in ((ember, e), (torch, t)):
        x[0] = 2.7                                            # float into int: truncation
        x[1] = lib.tensor([1.9, -1.9, 0.5, 7.0])              # tensor of another dtype
        x[2, 1:] = lib.tensor([True, False, True])            # bool into int
        x[:, 0] = lib.tensor(-5)                              # 0-d tensor broadcasts
        x[x > 5] = 0                                          # mask from a comparison
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_setitem_from_python_and_numpy_values():
    e, t = _pair((3, 4))
    e[0] = [1, 2, 3, 4]
    t[0] = torch.tensor([1, 2, 3, 4])
    e[1:, :2] = np.full((2, 2), 9.5)
    t[1:, :2] = torch.full((2, 2), 9.5)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_index_put_accumulate_sums_duplicates():
    e, t = _pair((5,))
    idx = [0, 0, 4, 0, 4]
    for lib, x in ((ember, e), (torch, t)):
        x.index_put_((lib.tensor(idx),), lib.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), accumulate=True)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert e[0].item() == 0 + 1 + 2 + 4


def test_list_of_sequences_is_a_tuple_key():
    e, t = _pair((3, 4))
    for key in ([[0, 1], [1, 2]], [slice(None), 1], [None, 1], [0, 2], [True, False, True]):
        np.testing.assert_array_equal(e[key].numpy(), t[key].numpy(), err_msg=str(key))


def test_zero_dim_indexing():
    e, t = ember.tensor(3.5), torch.tensor(3.5)
    for key in (None, Ellipsis, (), True, False, (None, None)):
        assert tuple(e[key].shape) == tuple(t[key].shape), key
    assert tuple(e[ember.tensor(True)].shape) == (1,)
    assert tuple(e[ember.tensor(False)].shape) == (0,)
    with pytest.raises(IndexError, match="0-dim"):
        e[0]
    e[...] = 1.0
    assert e.item() == 1.0


def test_index_dtypes():
    e, t = _pair((3, 4))
    np.testing.assert_array_equal(e[ember.tensor([2, 0], dtype=ember.int32)].numpy(),
                                  t[torch.tensor([2, 0], dtype=torch.int32)].numpy())
    with pytest.warns(UserWarning):  # PyTorch reads uint8 index tensors as masks (deprecated)
        want = t[torch.tensor([1, 0, 1], dtype=torch.uint8)]
    np.testing.assert_array_equal(e[ember.tensor([1, 0, 1], dtype=ember.uint8)].numpy(), want.numpy())
    for bad in (ember.int8, ember.int16, ember.float32):
        with pytest.raises(IndexError, match="long, int, byte or bool"):
            e[ember.tensor([0], dtype=bad)]


def test_integer_index_next_to_advanced_is_basic():
    """x[0, :, idx]: PyTorch applies the int first (a view), unlike numpy's advanced-int rule."""
    e, t = _pair((2, 3, 4))
    idx = [3, 0]
    assert tuple(e[0, :, idx].shape) == tuple(t[0, :, idx].shape) == (3, 2)
    np.testing.assert_array_equal(e[0, :, idx].numpy(), t[0, :, idx].numpy())


def test_scatter_and_gather_int32_indices():
    e, t = _pair((3, 4))
    for lib, x in ((ember, e), (torch, t)):
        i = lib.tensor([[2, 0, 1, 1]], dtype=lib.int32)
        x.scatter_(0, i, x[:1].clone() * 10)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    np.testing.assert_array_equal(e.gather(1, ember.tensor([[3], [0], [1]], dtype=ember.int32)).numpy(),
                                  t.gather(1, torch.tensor([[3], [0], [1]], dtype=torch.int32)).numpy())
