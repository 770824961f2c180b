"""View semantics against PyTorch: which ops alias their input, strides and contiguity of every
view kind, writes through views, copies where a view is impossible, and refused writes into
expanded tensors."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _pair(shape=(3, 4), dtype="float32"):
    data = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    return ember.tensor(data), torch.tensor(data)


# (name, fn(lib, x) -> view of x) for every op that returns a view in PyTorch
VIEWS = [
    ("int", lambda lib, x: x[1]),
    ("neg-int", lambda lib, x: x[-1]),
    ("slice", lambda lib, x: x[1:]),
    ("slice-cols", lambda lib, x: x[:, 1:3]),
    ("step", lambda lib, x: x[::2]),
    ("step-cols", lambda lib, x: x[:, 1::2]),
    ("none", lambda lib, x: x[None]),
    ("ellipsis-none", lambda lib, x: x[..., None]),
    ("int-col", lambda lib, x: x[:, 2]),
    ("select", lambda lib, x: x.select(1, 0)),
    ("narrow", lambda lib, x: x.narrow(1, 1, 2)),
    ("view", lambda lib, x: x.view(2, 6)),
    ("view-flat", lambda lib, x: x.view(-1)),
    ("view_as", lambda lib, x: x.view_as(lib.zeros(6, 2))),
    ("reshape-viewable", lambda lib, x: x.reshape(4, 3)),
    ("flatten", lambda lib, x: x.flatten()),
    ("unflatten", lambda lib, x: x.unflatten(1, (2, 2))),
    ("squeeze", lambda lib, x: x[:1].squeeze(0)),
    ("unsqueeze", lambda lib, x: x.unsqueeze(1)),
    ("t", lambda lib, x: x.t()),
    ("T", lambda lib, x: x.T),
    ("mT", lambda lib, x: x.mT),
    ("transpose", lambda lib, x: x.transpose(0, 1)),
    ("permute", lambda lib, x: x.permute(1, 0)),
    ("movedim", lambda lib, x: x.movedim(0, 1)),
    ("diagonal", lambda lib, x: x.diagonal()),
    ("diagonal-offset", lambda lib, x: x.diagonal(1)),
    ("diagonal-neg", lambda lib, x: x.diagonal(-1)),
    ("unbind", lambda lib, x: x.unbind(1)[2]),
    ("split", lambda lib, x: x.split(2, 1)[1]),
    ("split-sizes", lambda lib, x: x.split([1, 3], 1)[1]),
    ("chunk", lambda lib, x: x.chunk(2, 0)[1]),
    ("tensor_split", lambda lib, x: x.tensor_split(3, 1)[2]),
    ("as_strided", lambda lib, x: x.as_strided((2, 2), (1, 2), 1)),
    ("view-of-view", lambda lib, x: x.t()[1:]),
    ("int-of-transposed", lambda lib, x: x.t()[2]),
    ("empty-slice", lambda lib, x: x[:, :0]),
]


@pytest.mark.parametrize("name,fn", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_layout_matches_torch(name, fn):
    """Shape, strides, contiguity, storage offset and values of the view, as in PyTorch."""
    e, t = _pair()
    ve, vt = fn(ember, e), fn(torch, t)
    assert tuple(ve.shape) == tuple(vt.shape)
    assert ve.stride() == vt.stride(), f"{name}: strides {ve.stride()} vs torch {vt.stride()}"
    assert ve.is_contiguous() == vt.is_contiguous()
    assert ve.storage_offset() == vt.storage_offset()
    np.testing.assert_array_equal(ve.numpy(), vt.numpy())


@pytest.mark.parametrize("name,fn", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_base_is_root(name, fn):
    """``_base`` of a view (and of a view of a view) is the tensor that owns the memory."""
    e, t = _pair()
    ve, vt = fn(ember, e), fn(torch, t)
    assert (ve._base is e) == (vt._base is t) == True  # noqa: E712 - both must hold
    assert e._base is None


@pytest.mark.parametrize("name,fn", [v for v in VIEWS if v[0] != "empty-slice"], ids=[v[0] for v in VIEWS
                                                                                      if v[0] != "empty-slice"])
def test_write_through_view_changes_base(name, fn):
    """In-place writes into a view show up in the base tensor, exactly where PyTorch puts them."""
    e, t = _pair()
    for lib, x in ((ember, e), (torch, t)):
        v = fn(lib, x)
        v.mul_(-1)
        v.add_(100)
        v[(0,) * v.ndim] = -7
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("op", ["setitem", "fill_", "zero_", "copy_", "masked_fill_", "index_fill_", "scatter_"])
def test_inplace_ops_through_slices(op):
    e, t = _pair((4, 5))
    for lib, x in ((ember, e), (torch, t)):
        v = x[1:3, ::2]
        if op == "setitem":
            v[0, 1] = 42
        elif op == "fill_":
            v.fill_(3)
        elif op == "zero_":
            v.zero_()
        elif op == "copy_":
            v.copy_(lib.ones(3))
        elif op == "masked_fill_":
            v.masked_fill_(lib.tensor([True, False, True]), -1)
        elif op == "index_fill_":
            v.index_fill_(1, lib.tensor([2]), 9)
        else:
            v.scatter_(1, lib.tensor([[0], [2]]), lib.tensor([[5.0], [6.0]]))
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_unbind_pieces_share_memory():
    e, t = _pair()
    for lib, x in ((ember, e), (torch, t)):
        rows = x.unbind(0)
        rows[0].fill_(-1)
        rows[2][1] = -2
        cols = lib.unbind(x, 1)
        cols[3].add_(1000)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_setitem_through_chained_views():
    e, t = _pair((2, 3, 4))
    for x in (e, t):
        x[1][2][3] = -5
        x.permute(2, 0, 1)[0, 1, 1] = -6
        x.transpose(0, 2)[:, 1].diagonal().fill_(-9)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


RESHAPE_COPIES = [
    ("transposed-flat", lambda lib, x: x.t().reshape(-1)),
    ("cols-merge", lambda lib, x: x[:, :2].reshape(6)),
    ("expanded", lambda lib, x: x[:1].expand(3, 4).reshape(12)),
    ("permuted-3d", lambda lib, x: x.view(2, 2, 3).permute(2, 0, 1).reshape(12)),
]


@pytest.mark.parametrize("name,fn", RESHAPE_COPIES, ids=[r[0] for r in RESHAPE_COPIES])
def test_reshape_of_unviewable_layout_copies(name, fn):
    e, t = _pair()
    re_, rt = fn(ember, e), fn(torch, t)
    assert rt._base is None  # torch copies here: the layout can't be viewed with the new shape
    np.testing.assert_array_equal(re_.numpy(), rt.numpy())
    assert re_.is_contiguous()
    assert re_._base is None
    re_.fill_(0)
    rt.fill_(0)
    np.testing.assert_array_equal(e.numpy(), t.numpy())  # the bases are untouched
    assert e.numpy().sum() == np.arange(12).sum()


@pytest.mark.parametrize("fn", [lambda x: x.t().view(-1), lambda x: x[:, :2].view(6),
                                lambda x: x[:1].expand(3, 4).view(12), lambda x: x.t().view(2, 6)])
def test_view_raises_where_torch_does(fn):
    e, t = _pair()
    with pytest.raises(RuntimeError):
        fn(t)
    with pytest.raises(RuntimeError, match="reshape"):
        fn(e)


@pytest.mark.parametrize("fn", [lambda x: x.t().view(2, 2, 3), lambda x: x[:, ::2].view(3, 2, 1),
                                lambda x: x[:1].expand(3, 4).view(3, 2, 2), lambda x: x[:, 1:3].view(3, 1, 2)])
def test_view_succeeds_where_torch_does(fn):
    e, t = _pair()
    ve, vt = fn(e), fn(t)
    assert ve.stride() == vt.stride()
    assert ve._base is e
    np.testing.assert_array_equal(ve.numpy(), vt.numpy())


# in-place ops that PyTorch refuses on a tensor whose elements share memory
INPLACE_ON_EXPANDED = [
    lambda x: x.add_(1), lambda x: x.mul_(2), lambda x: x.clamp_(0, 1), lambda x: x.copy_(x.clone() + 1),
    lambda x: x.sub_(x), lambda x: x.neg_(),
]
# PyTorch lets these through (every write stores the same value); ember refuses them as well
# rather than write through a read-only broadcast view
EMBER_REFUSES_ON_EXPANDED = [
    lambda x: x.fill_(0), lambda x: x.zero_(), lambda x: x.__setitem__(0, 5.0),
    lambda x: x.__setitem__((slice(None), 1), 5.0), lambda x: x.masked_fill_(x > -1, 2.0),
]


@pytest.mark.parametrize("i", range(len(INPLACE_ON_EXPANDED)))
def test_inplace_on_expanded_raises_clearly(i):
    fn = INPLACE_ON_EXPANDED[i]
    e, t = _pair((3, 1))
    with pytest.raises(RuntimeError):
        fn(t.expand(3, 4))
    with pytest.raises(RuntimeError, match="clone"):
        fn(e.expand(3, 4))
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("i", range(len(EMBER_REFUSES_ON_EXPANDED)))
def test_fills_on_expanded_are_refused(i):
    e, _ = _pair((3, 1))
    with pytest.raises(RuntimeError, match="clone"):
        EMBER_REFUSES_ON_EXPANDED[i](e.expand(3, 4))
    np.testing.assert_array_equal(e.numpy(), np.arange(3, dtype=np.float32).reshape(3, 1))
    EMBER_REFUSES_ON_EXPANDED[i](e.expand(3, 4).clone())  # the suggested fix works


def test_expand_without_broadcast_is_writable():
    e, t = _pair((3, 4))
    for x in (e, t):
        x.expand(3, 4).add_(1)
        x.expand_as(x)[0, 0] = -1
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_clone_contiguous_and_copies_do_not_alias():
    e, _ = _pair()
    copies = [e.clone(), e.t().contiguous(), e.flip(0), e.roll(1), e.repeat(1, 1), e.tril(), e[[0, 1]],
              e[e > 3], e.index_select(0, ember.tensor([0])), e.to(ember.float64), ember.cat([e]),
              ember.stack([e])[0]]
    for c in copies:
        assert c._base is None or c._base is not e
        c.fill_(-1)
    np.testing.assert_array_equal(e.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))


def test_contiguous_returns_self_when_already_contiguous():
    e, t = _pair()
    assert e.contiguous() is e and t.contiguous() is t
    assert e.t().contiguous() is not e


def test_getitem_int_fast_path_is_a_view():
    e, t = _pair((3, 4))
    row = e[2]
    assert row._base is e and row.stride() == t[2].stride() and row.storage_offset() == 8
    row[0] = -1
    assert e[2, 0].item() == -1
    with pytest.raises(IndexError):
        e[3]
    with pytest.raises(IndexError):
        e[-4]


def test_error_messages_name_the_op_and_shapes():
    a, b = ember.zeros(2, 3), ember.zeros(2, 4)
    with pytest.raises(RuntimeError, match=r"cat.*\[2, 3\].*\[2, 4\]"):
        ember.cat([a, b])
    with pytest.raises(RuntimeError, match=r"stack.*\[2, 3\].*\[2, 4\]"):
        ember.stack([a, b])
    with pytest.raises(RuntimeError, match=r"expand.*\[3\]"):
        ember.zeros(3).expand(4)
    with pytest.raises(RuntimeError, match=r"\[3, 4\].*12|12.*\[5\]|invalid for input of size 12"):
        ember.zeros(3, 4).view(5)


def test_as_strided_on_a_dtype_view_of_a_byte_buffer():
    # storage offsets and strides count elements of the tensor's dtype, not of the buffer's
    raw = np.arange(16, dtype=np.float32).tobytes()
    t = ember.from_numpy(np.frombuffer(raw, np.uint8).copy().view(np.float32))
    ref = torch.arange(16, dtype=torch.float32)
    assert t.as_strided((2, 2), (4, 2), 1).tolist() == ref.as_strided((2, 2), (4, 2), 1).tolist()
