"""Tensor printing: repr(ember tensor) must read exactly like PyTorch's, with 'ember' for 'torch'."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
import torch

import ember
from ember.backend.numpy import Numpy

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


@pytest.fixture(autouse=True)
def _reset_print_options():
    yield
    ember.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    ember.set_default_dtype(ember.float32)
    torch.set_default_dtype(torch.float32)


def pair(a: np.ndarray):
    """The same data as an ember tensor and a torch tensor (bfloat16 travels as its bits)."""
    if a.dtype == ml_dtypes.bfloat16:
        tt = torch.from_numpy(np.array(a, order="C").view(np.uint16)).view(torch.bfloat16)
    else:
        tt = torch.from_numpy(np.array(a, order="C"))
    return ember.tensor(a), tt


def check(a: np.ndarray, **opts):
    ember.set_printoptions(**opts)
    torch.set_printoptions(**opts)
    e, t = pair(a)
    got, want = repr(e).replace("ember", "torch"), repr(t)
    assert got == want, f"\nember: {got}\ntorch: {want}"
    assert str(e) == repr(e)


def arr(values, dtype="float32", shape=None):
    npd = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    with np.errstate(all="ignore"):
        a = np.asarray(values, dtype=np.float64 if "float" in dtype else None).astype(npd)
    return a if shape is None else a.reshape(shape)


# ---- hand-picked cases ---------------------------------------------------------------------------
NAN, INF = math.nan, math.inf
FLOAT_CASES = [
    [1.0, 2.0, 3.0], [0.5, -1.25], [1e-5, 1.0], [1e-4, 1.0], [1e-3, 1.0], [1.0, 1000.0], [1.0, 1001.0],
    [1e8, 1.0], [1.5e8, 2.0], [1e9], [123456789.0], [0.0, 0.0], [-0.0, 0.0], [NAN], [INF, -INF, NAN],
    [NAN, 1.0, -INF], [NAN, 1e10, -INF], [0.1, NAN, 2.5], [1e-10, 1e10], [-1e-20], [3.14159265],
    [1e300, -1e-300], [0.0, 1e-5], [100.0, 200.5], [-7.0, 7.0], [2.0**24 + 1], [0.00012345],
]


@pytest.mark.parametrize("values", FLOAT_CASES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_float_formatting(values, dtype):
    check(arr(values, dtype))
    check(arr(values[:1], dtype, ()))  # 0-d


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0), (2, 0, 4), (1, 0)])
def test_empty(dtype, shape):
    check(np.zeros(shape, dtype=ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_dim_every_dtype(dtype):
    for v in (0, 1, 5, -3, 127):
        if dtype in ("uint8", "bool") and v < 0:
            continue
        check(arr(v, dtype, ()))


def test_ints_and_bools():
    check(np.array([1, -22, 333, -4444], dtype=np.int64))
    check(np.array([[7, 8], [9, 10]], dtype=np.int32))
    check(np.array([True, False, True]))
    check(np.array([True, True]))
    check(np.array([[False]]))
    check(np.array([0, 255, 7], dtype=np.uint8))
    check(np.array([-(2**63), 2**63 - 1], dtype=np.int64))


@pytest.mark.parametrize("shape", [(1,), (5,), (2, 3), (3, 1), (1, 3), (2, 3, 4), (2, 1, 2, 3), (1, 1, 1, 1, 2)])
def test_nd_layout(shape):
    rng = np.random.default_rng(sum(shape))
    n = math.prod(shape)
    check(rng.standard_normal(n).astype(np.float32).reshape(shape))
    check(rng.integers(-50, 50, n).reshape(shape))
    check((rng.random(n) < 0.5).reshape(shape))


@pytest.mark.parametrize("shape", [(1001,), (2000,), (4, 300), (300, 4), (11, 11, 11), (1, 2000), (2, 3, 200)])
def test_summarized(shape):
    n = math.prod(shape)
    check(np.arange(n, dtype=np.int64).reshape(shape))
    check((np.arange(n, dtype=np.float64) / 7).reshape(shape))
    check(np.linspace(-1e-6, 1e6, n).astype(np.float32).reshape(shape))


def test_line_wrapping():
    check(np.arange(100, dtype=np.float32) / 3)
    check(np.arange(60, dtype=np.int64) * 1001)
    check((np.arange(120, dtype=np.float64) / 7).reshape(2, 60))
    # a non-default dtype suffix moves to its own line when the last line is long
    check(np.arange(19, dtype=np.int32) * 10**6)
    check(np.arange(12, dtype=np.float16) / 3)
    check(np.full((70,), 0.5, dtype=np.float64), linewidth=50)


def test_views_print_their_own_elements():
    base = np.arange(24, dtype=np.float32).reshape(4, 6) / 4
    e, t = pair(base)
    for fn in (lambda x: x.T, lambda x: x[::2, 1::3], lambda x: x[1], lambda x: x[:, 0],
               lambda x: x[0:1].expand(3, 6), lambda x: x.reshape(2, 2, 6).permute(2, 0, 1)):
        assert repr(fn(e)).replace("ember", "torch") == repr(fn(t))


@pytest.mark.parametrize("opts", [
    {"precision": 2}, {"precision": 0}, {"precision": 8}, {"threshold": 5}, {"threshold": 5, "edgeitems": 1},
    {"edgeitems": 0}, {"edgeitems": 0, "threshold": 3}, {"linewidth": 20}, {"linewidth": 200},
    {"sci_mode": True}, {"sci_mode": False}, {"profile": "short"}, {"profile": "full"},
    {"profile": "short", "precision": 5},
], ids=str)
def test_print_options(opts):
    rng = np.random.default_rng(7)
    for a in (rng.standard_normal((3, 7)).astype(np.float32) * 100, np.arange(2000, dtype=np.float64),
              np.array([1e-5, 1.0, 3.0]), np.array([1.0, 2.0, 1e10]), np.array([0.0, 0.0]), np.array(1.5),
              np.arange(30, dtype=np.int64).reshape(5, 6), np.array([NAN, 2.0])):
        check(a, **opts)


def test_sci_mode_is_reset_by_each_call():
    ember.set_printoptions(sci_mode=True)
    ember.set_printoptions(precision=4)
    torch.set_printoptions(sci_mode=True)
    torch.set_printoptions(precision=4)
    e, t = pair(np.array([1.5, 2.0], dtype=np.float32))
    assert repr(e).replace("ember", "torch") == repr(t) == "tensor([1.5000, 2.0000])"


def test_bad_profile():
    with pytest.raises(ValueError, match="profile"):
        ember.set_printoptions(profile="bogus")


def test_default_dtype_float64():
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    for a in (np.array([1.5, 2.0]), np.array([1.5, 2.0], dtype=np.float32), np.zeros((0,), dtype=np.float32),
              np.zeros((0,)), np.array(2.0, dtype=np.float32)):
        check(a)


# ---- generated cases -----------------------------------------------------------------------------
def _random_case(rng):
    nd = int(rng.integers(0, 5))
    sizes = [0, 1, 2, 3, 5, 7, 11, 40, 1001] if nd == 1 else [0, 1, 2, 3, 4, 7, 9, 13]
    shape = tuple(int(rng.choice(sizes)) for _ in range(nd))
    if math.prod(shape) > 5000:
        shape = shape[:2]
    dtype = str(rng.choice(DTYPES))
    n = math.prod(shape)
    if dtype == "bool":
        data = rng.random(n) < 0.5
    elif dtype in ("int64", "int32", "int16", "int8", "uint8"):
        hi = {"int8": 127, "uint8": 255, "int16": 30000, "int32": 2**31 - 1}.get(dtype, 10 ** int(rng.integers(1, 18)))
        data = rng.integers(0 if dtype == "uint8" else -hi, hi, n)
    else:
        scale = 10.0 ** int(rng.integers(-9, 12))
        kind = int(rng.integers(0, 4))
        if kind == 0:
            data = rng.integers(-100, 100, n).astype(np.float64)
        elif kind == 1:
            data = rng.standard_normal(n) * scale
        elif kind == 2:
            data = rng.random(n) * scale
        else:
            data = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)
        if n and rng.random() < 0.3:
            idx = rng.integers(0, n, max(1, n // 5))
            data[idx] = rng.choice([NAN, INF, -INF, 0.0, -0.0], len(idx))
    opts = {}
    if rng.random() < 0.3:
        opts = dict(precision=int(rng.integers(0, 8)), threshold=int(rng.choice([5, 50, 1000])),
                    edgeitems=int(rng.integers(0, 5)), linewidth=int(rng.choice([10, 40, 80, 120])),
                    sci_mode=[None, True, False][int(rng.integers(0, 3))])
    return arr(data, dtype, shape), opts


@pytest.mark.parametrize("seed", range(8))
def test_generated(seed):
    rng = np.random.default_rng(1000 + seed)
    for _ in range(60):
        a, opts = _random_case(rng)
        check(a, **opts)
        ember.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


# ---- str, format, devices, sync ------------------------------------------------------------------
def test_format_of_zero_dim_tensors():
    for v, spec in ((2.5, ".3f"), (2.5, ""), (1.0, ""), (1 / 3, ".2e"), (7.0, "8.2f")):
        assert f"{ember.tensor(v):{spec}}" == f"{torch.tensor(v):{spec}}"
    assert f"{ember.tensor(3):d}" == f"{torch.tensor(3):d}" == "3"
    assert f"{ember.tensor(True)}" == f"{torch.tensor(True)}"
    assert f"{ember.tensor(1.5, dtype=ember.bfloat16):.2f}" == "1.50"
    assert f"{ember.ones(2)}" == str(ember.ones(2))
    with pytest.raises(TypeError):
        f"{ember.ones(2):.3f}"
    with pytest.raises(TypeError):
        f"{torch.ones(2):.3f}"


def test_device_suffix():
    dev = ember.Device("cuda", 0, backend=Numpy())  # a stand-in accelerator backed by numpy
    assert repr(ember.tensor([1.0, 2.0], device=dev)) == "tensor([1., 2.], device='cuda:0')"
    assert repr(ember.tensor([1, 2], dtype=ember.int32, device=dev)) == \
        "tensor([1, 2], device='cuda:0', dtype=ember.int32)"
    assert repr(ember.zeros(0, 3, device=dev)) == "tensor([], device='cuda:0', size=(0, 3))"
    assert repr(ember.tensor(1.5, device=dev)) == "tensor(1.5000, device='cuda:0')"


class _CountingNumpy(Numpy):
    """A numpy backend that records how many elements each host read moves."""

    def __init__(self):
        super().__init__()
        self.reads = []

    def read(self, handle):
        self.reads.append(handle.size)
        return handle


def test_summarized_print_reads_only_shown_elements():
    backend = _CountingNumpy()
    dev = ember.Device("spy", None, backend=backend)
    e = ember.tensor(np.arange(1_000_000, dtype=np.float32).reshape(1000, 1000), device=dev)
    t = torch.arange(1_000_000, dtype=torch.float32).reshape(1000, 1000)
    backend.reads.clear()
    text = repr(e)
    assert max(backend.reads) <= 36  # the 6 x 6 corner elements, never the whole tensor
    assert text.replace(", device='spy'", "").replace("ember", "torch") == repr(t)
