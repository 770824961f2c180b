"""Exchange with numpy and PyTorch: DLPack both ways, __array__, numpy(), from_numpy, numpy operators."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.utils.dlpack

import ember

DTYPES = {  # ember name -> (numpy dtype, torch dtype)
    "bool": (np.bool_, torch.bool), "uint8": (np.uint8, torch.uint8), "int8": (np.int8, torch.int8),
    "int16": (np.int16, torch.int16), "int32": (np.int32, torch.int32), "int64": (np.int64, torch.int64),
    "float16": (np.float16, torch.float16), "bfloat16": (ml_dtypes.bfloat16, torch.bfloat16),
    "float32": (np.float32, torch.float32), "float64": (np.float64, torch.float64),
}


def sample(name: str, shape=(2, 3)) -> np.ndarray:
    n = int(np.prod(shape))
    if name == "bool":
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) % 7 - (0 if name == "uint8" else 3)).astype(DTYPES[name][0]).reshape(shape)


def as_np(t: torch.Tensor) -> np.ndarray:
    """A torch tensor's values on the host (bfloat16 through its bits)."""
    if t.dtype is torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


# ---- DLPack: ember -> torch / numpy -------------------------------------------------------------
@pytest.mark.parametrize("name", DTYPES)
def test_export_to_torch_shares_memory(name):
    e = ember.from_numpy(sample(name))
    t = torch.from_dlpack(e)
    assert t.dtype is DTYPES[name][1] and tuple(t.shape) == (2, 3)
    np.testing.assert_array_equal(as_np(t), e.numpy())
    # a write through torch shows in ember, and one through ember shows in torch
    one = True if name == "bool" else 1
    t[0, 0] = one
    assert e[0, 0].item() == one
    e[1, 2] = 0
    assert t[1, 2].item() == 0


@pytest.mark.parametrize("view", ["transposed", "strided", "expanded", "zero_dim", "empty", "offset"])
def test_export_views_keep_strides(view):
    base = ember.arange(24, dtype=ember.float32).reshape(4, 6)
    tbase = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    fns = {
        "transposed": lambda x: x.T, "strided": lambda x: x[::2, 1::2], "expanded": lambda x: x[0:1].expand(3, 6),
        "zero_dim": lambda x: x[1, 2], "empty": lambda x: x[:, 0:0], "offset": lambda x: x[2:, 3:],
    }
    e, want = fns[view](base), fns[view](tbase)
    t = torch.from_dlpack(e)
    assert t.shape == want.shape and (t.numel() == 0 or t.stride() == want.stride())
    assert torch.equal(t, want)
    if t.numel():
        assert t.data_ptr() == e.data_ptr()


def test_dlpack_device_and_capsules():
    e = ember.ones(3)
    assert e.__dlpack_device__() == (1, 0) == tuple(int(v) for v in torch.ones(3).__dlpack_device__())
    legacy = e.__dlpack__()
    assert "dltensor" in repr(legacy)
    assert torch.equal(torch.utils.dlpack.from_dlpack(legacy), torch.ones(3))
    versioned = e.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    assert torch.equal(torch.from_dlpack(versioned), torch.ones(3))


def test_bfloat16_export():
    e = ember.tensor([1.5, -2.25, 3.0], dtype=ember.bfloat16)
    t = torch.from_dlpack(e)
    assert t.dtype is torch.bfloat16 and t.tolist() == [1.5, -2.25, 3.0]
    t[0] = 8.0
    assert e[0].item() == 8.0
    # numpy has no bfloat16 in DLPack: it refuses both ember's and torch's the same way
    with pytest.raises((RuntimeError, BufferError), match="Unsupported dtype"):  # numpy 2.5 raises BufferError
        np.from_dlpack(e)
    with pytest.raises((RuntimeError, BufferError), match="Unsupported dtype"):  # numpy 2.5 raises BufferError
        np.from_dlpack(torch.ones(2, dtype=torch.bfloat16))
    tr = torch.from_dlpack(ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ember.bfloat16).T)
    assert tr.stride() == (1, 2) and tr.tolist() == [[1.0, 3.0], [2.0, 4.0]]


@pytest.mark.parametrize("name", [n for n in DTYPES if n != "bfloat16"])
def test_numpy_imports_ember(name):
    e = ember.from_numpy(sample(name))
    a = np.from_dlpack(e)
    np.testing.assert_array_equal(a, e.numpy())
    assert np.shares_memory(a, e.numpy())


# ---- DLPack: torch / numpy -> ember -------------------------------------------------------------
@pytest.mark.parametrize("name", DTYPES)
def test_import_from_torch_shares_memory(name):
    t = torch.from_numpy(sample("int64")).to(DTYPES[name][1])
    e = ember.from_dlpack(t)
    assert e.dtype.name == name and e.shape == (2, 3)
    np.testing.assert_array_equal(e.numpy(), as_np(t))
    one = True if name == "bool" else 1
    t[1, 1] = one
    assert e[1, 1].item() == one
    e[0, 2] = 0
    assert t[0, 2].item() == 0


def test_import_views_and_shapes():
    t = torch.arange(24.0).reshape(4, 6)
    for view in (t.T, t[::2, 1::3], t[1:, 2:], t[0, 0], t[:, :0], t.expand(2, 4, 6)):
        e = ember.from_dlpack(view)
        assert e.shape == view.shape
        np.testing.assert_array_equal(e.numpy(), view.numpy())
        if view.numel():
            assert e.stride() == view.stride()
    t[0, 0] = -7
    assert ember.from_dlpack(t.T)[0, 0].item() == -7


def test_import_other_producers():
    a = np.arange(6.0).reshape(2, 3)
    e = ember.from_dlpack(a)
    a[0, 0] = 42
    assert e[0, 0].item() == 42
    assert ember.equal(ember.from_dlpack(torch.ones(2).__dlpack__()), ember.ones(2))  # a bare capsule
    x = ember.arange(3)
    y = ember.from_dlpack(x)
    y[0] = 9
    assert x[0].item() == 9
    assert ember.from_dlpack(x, copy=True).data_ptr() != x.data_ptr()
    assert ember.from_dlpack(a, device="cpu").device == "cpu"


def test_import_read_only():
    ro = np.arange(4.0)
    ro.flags.writeable = False
    e = ember.from_dlpack(ro)  # the versioned protocol carries the read-only flag
    assert e.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError):
        e[0] = 5.0
    assert ro[0] == 0.0


def test_import_errors():
    with pytest.raises(TypeError, match="__dlpack__"):
        ember.from_dlpack([1, 2, 3])
    capsule = torch.ones(2).__dlpack__()
    ember.from_dlpack(capsule)
    with pytest.raises(BufferError, match="already consumed"):
        ember.from_dlpack(capsule)
    with pytest.raises(TypeError, match="uint16"):
        ember.from_dlpack(torch.zeros(2, dtype=torch.uint16))
    with pytest.raises(TypeError, match="complex64"):
        ember.from_dlpack(torch.zeros(2, dtype=torch.complex64))

    class OnGpu:
        def __dlpack__(self, **kw):
            raise AssertionError("must not be asked for data")

        def __dlpack_device__(self):
            return (2, 1)

    with pytest.raises(RuntimeError, match="cuda:1"):
        ember.from_dlpack(OnGpu())

    class OnOddDevice(OnGpu):
        def __dlpack_device__(self):
            return (99, 0)

    with pytest.raises(RuntimeError, match="unknown DLPack device type 99"):
        ember.from_dlpack(OnOddDevice())


def test_export_from_backend_without_dlpack():
    from ember.backend.numpy import Numpy

    class Opaque(Numpy):  # a non-CPU backend with no DLPack hooks
        device_type = "opaque"

    e = ember.ones(2, device=ember.Device("opaque", 0, backend=Opaque()))
    with pytest.raises(BufferError, match="cpu"):
        e.__dlpack__()
    with pytest.raises(BufferError, match="cpu"):
        e.__dlpack_device__()


# ---- numpy(): __array__, from_numpy ---------------------------------------------------------------
@pytest.mark.parametrize("name", DTYPES)
def test_numpy_round_trip_every_dtype(name):
    a = sample(name)
    e = ember.from_numpy(a)
    assert e.dtype.name == name
    assert e.numpy().dtype == a.dtype
    np.testing.assert_array_equal(np.asarray(e), a)
    assert np.array(e).dtype == a.dtype


def test_memory_sharing_both_ways():
    a = np.zeros((2, 3), dtype=np.float32)
    e = ember.from_numpy(a)
    a[0, 1] = 5
    assert e[0, 1].item() == 5
    e.add_(1)
    assert a[0, 1] == 6 and a[1, 2] == 1
    n = e.numpy()
    n[1, 0] = -1
    assert e[1, 0].item() == -1
    assert np.shares_memory(np.asarray(e), a)
    assert not np.shares_memory(np.array(e), a)  # np.array copies
    assert np.asarray(e, dtype=np.float64).dtype == np.float64
    t = torch.from_numpy(a)
    assert torch.equal(t, torch.from_numpy(e.numpy()))


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")
def test_from_numpy_non_contiguous():
    a = np.arange(24, dtype=np.int64).reshape(4, 6)
    for view in (a.T, a[:, ::2], a[1:3, 2:5], a[::2, ::3], np.broadcast_to(a[0], (3, 6))):
        e, t = ember.from_numpy(view), torch.from_numpy(view)
        assert e.stride() == t.stride() and e.shape == t.shape
        np.testing.assert_array_equal(e.numpy(), view)
        assert ember.equal(e.contiguous(), ember.tensor(np.ascontiguousarray(view)))
    sub = ember.from_numpy(a[:, 1::2])
    a[0, 1] = 100
    assert sub[0, 0].item() == 100


def test_from_numpy_zero_dim_and_empty():
    assert ember.from_numpy(np.array(3.5)).shape == () and ember.from_numpy(np.array(3.5)).item() == 3.5
    assert ember.from_numpy(np.zeros((0, 4), dtype=np.int32)).shape == (0, 4)


def test_from_numpy_read_only():
    ro = np.arange(6.0).reshape(2, 3)
    ro.flags.writeable = False
    e = ember.from_numpy(ro)
    assert ember.equal(e * 2, ember.tensor(ro * 2))
    with pytest.raises(RuntimeError):
        e.add_(1)
    assert ro[0, 0] == 0.0


def test_from_numpy_rejects():
    for bad in (np.zeros(2, dtype=np.complex64), np.zeros(2, dtype=np.uint32), np.array(["a"])):
        with pytest.raises(TypeError, match=str(bad.dtype)):
            ember.from_numpy(bad)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        ember.from_numpy([1, 2])


def test_numpy_on_other_device_needs_force():
    from ember.backend.numpy import Numpy
    e = ember.ones(2, device=ember.Device("cuda", 0, backend=Numpy()))
    with pytest.raises(TypeError, match="cpu"):
        e.numpy()
    assert e.numpy(force=True).tolist() == [1.0, 1.0]


# ---- numpy operators defer to ember ----------------------------------------------------------------
OPS = [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b, lambda a, b: a ** b,
    lambda a, b: a == b, lambda a, b: a < b, lambda a, b: a >= b, lambda a, b: a // b, lambda a, b: a % b,
]


@pytest.mark.parametrize("i", range(len(OPS)))
@pytest.mark.parametrize("arr", [np.arange(1.0, 4.0), np.arange(1, 4, dtype=np.int32),
                                 np.ones((2, 3), dtype=np.float32), np.array(2.0)], ids=["f64", "i32", "f32_2d", "0d"])
def test_numpy_array_with_tensor_gives_tensor(i, arr):
    op = OPS[i]
    e = ember.tensor([1.0, 2.0, 3.0])
    t = torch.tensor([1.0, 2.0, 3.0])
    for got, want in ((op(arr, e), op(torch.from_numpy(arr), t)), (op(e, arr), op(t, torch.from_numpy(arr)))):
        assert isinstance(got, ember.Tensor)
        assert str(got.dtype).replace("ember", "torch") == str(want.dtype)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_numpy_scalars_are_weak():
    e = ember.ones(3)
    for s in (np.float64(2.0), np.int64(3), np.float32(1.5)):
        got, want = s * e, s * torch.ones(3)
        assert isinstance(got, ember.Tensor) and str(got.dtype).replace("ember", "torch") == str(want.dtype)
    assert (np.int64(3) + ember.ones(3, dtype=ember.int32)).dtype is ember.int32


def test_numpy_ufuncs_refuse_tensors():
    # __array_ufunc__ = None: numpy hands binary operators to ember and refuses to run ufuncs on tensors
    with pytest.raises(TypeError):
        np.add(np.ones(3), ember.ones(3))
    assert np.asarray(ember.ones(3)).sum() == 3.0
