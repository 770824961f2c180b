"""The CUDA backend's op code, run without a GPU: ``Cuda._with_array_module(numpy)`` executes the same
op functions on numpy arrays (registered here as the device type "cudasim"), through the whole op
registry and its gradient checks. On a machine with CuPy and a GPU, tests/test_registry.py runs the
registry on the real "cuda" device as well."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.backend.autodiff import Autodiff
from ember.backend.cuda import Cuda
from tests import test_registry, test_registry_grad

ember.register_device("cudasim", lambda index: Autodiff(Cuda._with_array_module(np)))
SIM = "cudasim"
# samples that build some arguments on the CPU whatever the device (a registry matter, not a backend one)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# the dtypes whose code paths differ in this backend (half-precision upcasts, integer checks, bool); the
# other integer and float widths take the same paths, and the CPU registry covers them against PyTorch
_DTYPES = {"float32", "float64", "bfloat16", "float16", "int64", "int32", "bool"}
CASES = [c for c in test_registry.CASES if c[1] in _DTYPES]


@pytest.mark.parametrize("case", CASES, ids=[test_registry._id(c) for c in CASES])
def test_registry_op_on_cuda_code(case):
    test_registry.test_op_matches_torch(case, SIM)


@pytest.mark.parametrize("op", test_registry_grad.GRAD_OPS, ids=[op.name for op in test_registry_grad.GRAD_OPS])
def test_registry_grad_on_cuda_code(op):
    test_registry_grad.test_grad_matches_torch(op, SIM)


def test_host_ops_are_primitives_the_reference_has():
    b = Cuda._with_array_module(np)
    from ember.backend.base import PRIMITIVES
    assert b.host_ops() <= PRIMITIVES
    # every primitive is available, on the GPU or through the host path
    assert PRIMITIVES <= set(b._ops) | b.host_ops()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_random_streams_are_the_reference_streams(dtype):
    """rand/randn/randint/bernoulli of the CUDA code reproduce the CPU streams bit for bit (on the GPU the
    same words come from the Philox kernel, which checks itself against numpy's on first use)."""
    d = getattr(ember, dtype)
    draws = (lambda dev: ember.rand(1001, dtype=d, device=dev), lambda dev: ember.randn(3, 333, dtype=d, device=dev),
             lambda dev: ember.randint(-(2 ** 40), 2 ** 40, (77,), device=dev),
             lambda dev: ember.bernoulli(ember.full((5, 9), 0.3, dtype=d, device=dev)))
    for draw in draws:
        ember.manual_seed(2024)
        a = draw("cpu").float().numpy()
        ember.manual_seed(2024)
        b = draw(SIM).float().cpu().numpy()
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("device", [SIM] + (["cuda"] if ember.cuda.is_available() else []))
def test_batchnorm_relu_block_trains_like_the_cpu(device):
    """Batch norm's one-launch running-statistics update (running_update_), the in-place relu recorded
    on its own buffer and relu_backward give the CPU's values on the CUDA op code (and on a GPU)."""
    from ember import nn

    def run(dev):
        ember.manual_seed(0)
        net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                            nn.Conv2d(4, 2, 1), nn.BatchNorm2d(2, momentum=0.3)).to(dev)
        opt = ember.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        rng = np.random.default_rng(0)
        for _ in range(3):
            x = ember.tensor(rng.standard_normal((5, 3, 6, 6)).astype(np.float32), device=dev)
            opt.zero_grad()
            (net(x) ** 2).mean().backward()
            opt.step()
        return {k: v.cpu().numpy() for k, v in net.state_dict().items()}

    cpu, sim = run("cpu"), run(device)
    assert cpu.keys() == sim.keys()
    for k in cpu:
        np.testing.assert_allclose(sim[k], cpu[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_relu_backward_and_running_update_on_the_cuda_code():
    b = Cuda._with_array_module(np)
    y = np.array([-1.0, 0.0, 2.0, np.nan, -0.0], np.float32)
    g = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    np.testing.assert_array_equal(b.run("relu_backward", (y, g), {}), [0.0, 0.0, 3.0, 4.0, 0.0])
    stat = np.array([1.0, 2.0, 3.0], np.float32)
    new = np.array([[[4.0]], [[5.0]], [[6.0]]], np.float32)
    out = b.run("running_update_", (stat, new), {"momentum": 0.25, "scale": 2.0})
    assert out is stat
    np.testing.assert_allclose(stat, 0.75 * np.array([1, 2, 3]) + 0.5 * np.array([4, 5, 6]), rtol=1e-6)
    with pytest.raises(ValueError, match="2 elements"):
        b.run("running_update_", (stat, new[:2]), {"momentum": 0.1, "scale": 1.0})


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_op_first_and_second_order_match_the_cpu(affine):
    """The CUDA code's one-op batch norm (``batch_norm``/``batch_norm_backward``, (C,) parameters):
    gradients, the composite rule under create_graph, and the running statistics against the CPU."""
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal((4, 3, 5)).astype(np.float64)
    w0, b0 = rng.standard_normal(3), rng.standard_normal(3)
    out = {}
    for dev in ("cpu", SIM):
        x = ember.tensor(x0, device=dev, requires_grad=True)
        w = ember.tensor(w0, device=dev, requires_grad=True) if affine else None
        b = ember.tensor(b0, device=dev, requires_grad=True) if affine else None
        rm, rv = ember.zeros(3, dtype=ember.float64, device=dev), ember.ones(3, dtype=ember.float64, device=dev)
        y = ember.nn.functional.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2, eps=1e-3)
        leaves = [x] + ([w, b] if affine else [])
        gs = ember.autograd.grad((y * y * y).sum(), leaves, create_graph=True)
        gg = ember.autograd.grad(sum((g * g).sum() for g in gs), leaves)
        out[dev] = [t.detach().cpu().numpy() for t in (y, rm, rv, *gs, *gg)]
    for a, b in zip(out["cpu"], out[SIM]):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-10)


def test_batch_norm_op_metadata_matches_its_results():
    from ember.backend import meta
    from ember.backend.meta import Meta

    def of(a):
        return Meta(a.shape, ember.float32, tuple(s // a.itemsize for s in a.strides))
    b = Cuda._with_array_module(np)
    x = np.ones((2, 3, 4), np.float32)
    w = np.ones(3, np.float32)
    for bias in (True, False):
        got = b.run("batch_norm_backward", (x, w, x), {"eps": 1e-5, "has_bias": bias})
        want = meta.infer("batch_norm_backward", (of(x), of(w), of(x)),
                          {"eps": 1e-5, "has_bias": bias})
        for r, m in zip(got, want):
            assert (r is None) == (m is None)
            if r is not None:
                assert tuple(r.shape) == tuple(m.shape)
    res = b.run("batch_norm", (x, w, None, None, None), {"eps": 1e-5, "momentum": 0.1})
    want = meta.infer("batch_norm", (of(x), of(w), None, None, None), {"eps": 1e-5, "momentum": 0.1})
    assert [tuple(r.shape) for r in res] == [tuple(m.shape) for m in want]


@pytest.mark.parametrize("device", [SIM] + (["cuda"] if ember.cuda.is_available() else []))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_add_relu_and_its_gradient_match_the_cpu(device, dtype):
    """Same-shape add, in-place relu recorded on its own buffer, and relu_backward against the CPU, NaN
    and signed zeros included."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 70001)).astype(dtype)
    b = rng.standard_normal((3, 70001)).astype(dtype)
    a[0, :4] = [np.nan, -0.0, 0.0, np.inf]
    for compute in (lambda d: ember.tensor(a, device=d) + ember.tensor(b, device=d),
                    lambda d: ember.tensor(a, device=d).relu_()):
        np.testing.assert_array_equal(compute(device).cpu().numpy(), compute("cpu").numpy())
    grads = []
    for d in ("cpu", device):
        x = ember.tensor(a.astype(np.float32), device=d, requires_grad=True)
        y = x * 1.0
        y.relu_()
        (y * ember.tensor(b.astype(np.float32), device=d)).sum().backward()
        grads.append(x.grad.cpu().numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_matches_torch(dtype, approximate):
    """The one-pass gelu_backward op (its array-module path here; the kernel on a GPU) against torch's
    derivative, computed in float64 and rounded to the dtype."""
    torch = pytest.importorskip("torch")
    b = Cuda._with_array_module(np)
    rng = np.random.default_rng(3)
    x64 = np.concatenate([rng.standard_normal(200) * 3, [-12.0, -6.0, 0.0, 6.0, 12.0]])
    g64 = rng.standard_normal(x64.size)
    d = getattr(ember, dtype)
    x, g = ember.tensor(x64, dtype=d), ember.tensor(g64, dtype=d)
    got = b.run("gelu_backward", (x.numpy(), g.numpy()), {"approximate": approximate})
    assert got.dtype == x.numpy().dtype
    xt = torch.tensor(x.numpy().astype(np.float64), requires_grad=True)
    torch.nn.functional.gelu(xt, approximate=approximate).backward(torch.tensor(g.numpy().astype(np.float64)))
    tol = {"float32": 1e-6, "float64": 1e-12}.get(dtype, 1e-2)
    np.testing.assert_allclose(np.asarray(got, np.float64), xt.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("count_on_device", [False, True])
@pytest.mark.parametrize("kw", [{}, {"weight_decay": 0.1}, {"weight_decay": 0.05, "decoupled": True},
                                {"betas": (0.3, 0.8)}])
def test_adam_step_op_matches_torch(kw, count_on_device):
    """The one-op Adam update (adam_step_, used by optim.Adam/AdamW where a backend has it) on the CUDA
    code, three steps against torch.optim.Adam/AdamW; with the count as a one-element tensor (what a
    captured step passes, ignoring the ``step`` attribute) or as the attribute."""
    torch = pytest.importorskip("torch")
    b = Cuda._with_array_module(np)
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal(257).astype(np.float32)
    grads = [rng.standard_normal(257).astype(np.float32) for _ in range(3)]
    kw = dict(kw)
    decoupled = kw.pop("decoupled", False)
    betas, wd = kw.get("betas", (0.9, 0.999)), kw.get("weight_decay", 0.0)
    p, m, v = p0.copy(), np.zeros_like(p0), np.zeros_like(p0)
    for t, g in enumerate(grads, 1):
        count = (np.array([t], np.float32),) if count_on_device else ()
        out = b.run("adam_step_", (p, g, m, v) + count,
                    {"lr": 0.01, "beta1": betas[0], "beta2": betas[1], "eps": 1e-8, "weight_decay": wd,
                     "decoupled": decoupled, "step": 99.0 if count_on_device else float(t)})
        assert out is p
    tp = torch.tensor(p0, requires_grad=True)
    opt = (torch.optim.AdamW if decoupled else torch.optim.Adam)([tp], lr=0.01, betas=betas, weight_decay=wd)
    for g in grads:
        tp.grad = torch.tensor(g)
        opt.step()
    np.testing.assert_allclose(p, tp.detach().numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(m, opt.state[tp]["exp_avg"].numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(v, opt.state[tp]["exp_avg_sq"].numpy(), rtol=1e-5, atol=1e-9)


def test_adam_uses_the_one_op_update_and_trains_like_the_cpu():
    """optim.AdamW on the CUDA code takes adam_step_ (one op a parameter) and ends where the CPU's
    op-by-op loop ends."""
    from ember import nn

    def run(dev):
        ember.manual_seed(0)
        net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 2)).to(dev)
        opt = ember.optim.AdamW(net.parameters(), lr=0.05, weight_decay=0.1)
        rng = np.random.default_rng(0)
        for _ in range(4):
            x = ember.tensor(rng.standard_normal((8, 6)).astype(np.float32), device=dev)
            opt.zero_grad()
            (net(x) ** 2).mean().backward()
            opt.step()
        return [p.detach().cpu().numpy() for p in net.parameters()]

    be = ember.device(SIM).backend.inner
    calls = []
    orig = be.run

    def spy(op, inputs, attrs):
        calls.append(op)
        return orig(op, inputs, attrs)
    be.run = spy
    try:
        sim = run(SIM)
    finally:
        be.run = orig
    assert calls.count("adam_step_") == 4 * 4 and "lerp_" not in calls
    for a, b in zip(run("cpu"), sim):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


# The CUDA Philox modules compiled by the host C++ compiler against stand-ins for CUDA's built-ins, their
# kernels run thread by thread: syntax, names and the counter arithmetic are checked without a GPU (the GPU
# checks its kernels against numpy's Philox again at first use).
_CUDA_STUB = r"""
#include <math.h>
#define __device__ static
#define __global__
struct ember_dim3 { unsigned long long x; };
static ember_dim3 blockIdx, threadIdx, blockDim;
static unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
"""
_DRIVER = r"""
extern "C" void run(unsigned long long key, unsigned long long c0, unsigned long long c1, unsigned long long c2,
                    unsigned long long n, int m, void* out, const unsigned long long* st, unsigned long long per) {
    blockDim.x = 256;
    for (unsigned long long t = 0; t < (n + per - 1) / per; ++t) {
        blockIdx.x = t / 256; threadIdx.x = t % 256; CALL; } }
"""


def _host_kernel(tmp_path, name, source, call):
    import ctypes
    import shutil
    import subprocess
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    src, lib = tmp_path / f"{name}.cpp", tmp_path / f"{name}.so"
    src.write_text(_CUDA_STUB + source + _DRIVER.replace("CALL", call))
    subprocess.run([cxx, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True, capture_output=True)
    return ctypes.CDLL(str(lib)).run


@pytest.mark.parametrize("form", ["words", "words_graph", "unit32", "unit32_graph"])
def test_philox_cuda_kernels_compute_numpys_stream_on_the_host(tmp_path, form):
    import ctypes

    from ember.backend.cuda import random as cr
    from ember.backend.numpy import random as ref
    calls = {"words": (cr._PHILOX, "ember_philox4x64(key, c0, c1, c2, n, (unsigned long long*)out)", 4),
             "words_graph": (cr._PHILOX_GRAPH,
                             "ember_philox4x64_graph(c0, c1, c2, n, (unsigned long long*)out, st)", 4),
             "unit32": (cr._PHILOX_UNIT, "ember_philox_unit32(key, c0, c1, c2, n, m, (float*)out)", 8),
             "unit32_graph": (cr._PHILOX_UNIT, "ember_philox_unit32_graph(c0, c1, c2, n, m, (float*)out, st)", 8)}
    source, call, per = calls[form]
    run = _host_kernel(tmp_path, form, source, call)
    mask, u64 = (1 << 64) - 1, ctypes.c_ulonglong
    graph = form.endswith("graph")
    for seed, offset, n in cr._CHECKS:
        for shift in ((5, (1 << 64) - 1, (1 << 128) + (1 << 64) - 7) if graph else (0,)):
            st = np.array([seed & mask, shift & mask, (shift >> 64) & mask, (shift >> 128) & mask], np.uint64)
            at = (offset + shift) % (1 << 192)
            for m in ((24, 11, 8) if form.startswith("unit") else (0,)):
                out = np.zeros(n, np.float32 if m else np.uint64)
                run(u64(seed & mask), u64(offset & mask), u64((offset >> 64) & mask), u64((offset >> 128) & mask),
                    u64(n), ctypes.c_int(m), out.ctypes.data_as(ctypes.c_void_p),
                    st.ctypes.data_as(ctypes.c_void_p), u64(per))
                if m:
                    halves = np.asarray(ref._words(seed, at, (n + 1) // 2)).view(np.uint32)[:n]
                    want = (halves >> np.uint32(32 - m)).astype(np.float32) * np.float32(2.0 ** -m)
                else:
                    want = np.asarray(ref._words(seed, at, n))
                np.testing.assert_array_equal(out, want, err_msg=f"{form} seed={seed} offset={offset} m={m}")


# The attention-weights kernels (ember/backend/cuda/attention.py) built the same way: each block runs as one
# thread, so the rows, the causal limits, the Philox chunks and the 16-bit rounding are checked against the
# numpy backend's op (the GPU tests check the many-thread launch).
_ATTN_STUB = r"""
#include <string.h>
static ember_dim3 gridDim;
#define warpSize 1
#define __shared__ static
static void __syncthreads() {}
static float __shfl_xor_sync(unsigned, float v, int) { return v; }
static float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
"""
_ATTN_DRIVER = r"""
typedef unsigned long long u64;
extern "C" void fwd(const S* s, S* w, S* d, long long rows, long long n, long long L, float scale, int causal,
                    float p, float keep, u64 key, u64 c0, u64 c1, u64 c2, const u64* st) {
    blockDim.x = 1; threadIdx.x = 0; gridDim.x = 3;
    for (u64 b = 0; b < 3; ++b) { blockIdx.x = b;
        ember_attention_weightsFORM(s, w, d, rows, n, L, scale, causal, p, keep, key, c0, c1, c2, st); } }
extern "C" void bwd(const S* w, const S* d, const S* g, S* out, long long rows, long long n, float scale,
                    float keep, int dropout) {
    blockDim.x = 1; threadIdx.x = 0; gridDim.x = 3;
    for (u64 b = 0; b < 3; ++b) { blockIdx.x = b;
        ember_attention_weights_backwardFORM(w, d, g, out, rows, n, scale, keep, dropout); } }
"""


@pytest.mark.parametrize("form,n", [("block", 13), ("warp", 16)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("causal,p", [(False, 0.0), (True, 0.0), (False, 0.25), (True, 0.6)])
def test_attention_weights_cuda_kernels_match_the_reference_on_the_host(tmp_path, form, n, dtype, causal, p):
    """Both forms: a block per row (any row length; 13 keys, so Philox chunks straddle rows) and a warp per
    row (16-byte chunks, rows of a multiple of 8 keys; here the warp is one lane)."""
    import ctypes
    import shutil
    import subprocess

    import ml_dtypes

    from ember.backend.cuda import attention as ca
    from ember.backend.numpy import attention as ref
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    src, lib = tmp_path / "attn.cpp", tmp_path / "attn.so"
    driver = _ATTN_DRIVER.replace("FORM", "_warp" if form == "warp" else "")  # S: the source's storage type
    src.write_text("#define EMBER_HOST_SIM 1\n#define EMBER_WARP 1\n" + _CUDA_STUB + _ATTN_STUB + ca.source(dtype)
                   + driver)
    subprocess.run([cxx, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True, capture_output=True)
    so = ctypes.CDLL(str(lib))
    npd = np.dtype(np.float32) if dtype == "float32" else np.dtype(ml_dtypes.bfloat16)
    rng = np.random.default_rng(5)
    # 2 x 3 batch of (5 queries, n keys); one row of -inf scores and one of large ones
    scores = (rng.standard_normal((2, 3, 5, n)) * 3).astype(npd)
    scores[0, 1, 2] = -np.inf
    scores[1, 2, 4, :7] = 80.0
    seed, offset, scale = 0x9E3779B97F4A7C15, (1 << 64) - 2, 0.37
    keep = ref.keep_scale(npd, p) if p else 1.0
    want_w, want_d = ref.attention_weights(scores, scale, causal, p, seed, offset)
    w, d = np.zeros_like(scores), np.zeros_like(scores)
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    u64, mask = ctypes.c_ulonglong, (1 << 64) - 1
    rows = scores.size // n
    so.fwd(ptr(scores), ptr(w), ptr(d if p else w), ctypes.c_longlong(rows), ctypes.c_longlong(n),
           ctypes.c_longlong(5), ctypes.c_float(scale), ctypes.c_int(causal), ctypes.c_float(p), ctypes.c_float(keep),
           u64(seed & mask), u64(offset & mask), u64((offset >> 64) & mask), u64(offset >> 128), None)
    tol = 1e-6 if dtype == "float32" else 8e-3
    np.testing.assert_allclose(w.astype(np.float32), want_w.astype(np.float32), rtol=tol, atol=tol)
    if p:  # the same weights dropped
        np.testing.assert_array_equal(d.astype(np.float32) == 0, want_d.astype(np.float32) == 0)
        np.testing.assert_allclose(d.astype(np.float32), want_d.astype(np.float32), rtol=tol, atol=tol)
    g = rng.standard_normal(scores.shape).astype(npd)
    dd = d if p else w
    out = np.zeros_like(scores)
    so.bwd(ptr(w), ptr(dd), ptr(g), ptr(out), ctypes.c_longlong(rows), ctypes.c_longlong(n), ctypes.c_float(scale),
           ctypes.c_float(keep), ctypes.c_int(p > 0))
    want_g = ref.attention_weights_backward(w, dd, g, scale, p)
    np.testing.assert_allclose(out.astype(np.float32), want_g.astype(np.float32), rtol=tol, atol=tol)


def test_cast_kernels_round_like_ml_dtypes_on_the_host(tmp_path):
    """The CUDA float32 <-> bfloat16 cast kernels (ember/backend/cuda/casts.py), built by the host compiler and
    run thread by thread: round to nearest even, NaN and infinities kept, the tail past the last 8 elements."""
    import ctypes
    import shutil
    import subprocess

    import ml_dtypes

    from ember.backend.cuda import casts
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    driver = r"""
extern "C" void run(int to16, const void* src, void* dst, unsigned long long n) {
    blockDim.x = 256;
    for (unsigned long long t = 0; t < (n + 7) / 8; ++t) { blockIdx.x = t / 256; threadIdx.x = t % 256;
        if (to16) ember_to16_bf16((const float*)src, (unsigned short*)dst, n);
        else ember_from16_bf16((const unsigned short*)src, (float*)dst, n); } }
"""
    src, lib = tmp_path / "casts.cpp", tmp_path / "casts.so"
    src.write_text("#define EMBER_HOST_SIM 1\n" + _CUDA_STUB + _ATTN_STUB + casts.source() + driver)
    subprocess.run([cxx, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True, capture_output=True)
    run = ctypes.CDLL(str(lib)).run
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(1003) * 10.0 ** rng.integers(-40, 39, 1003)).astype(np.float32)
    x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38]
    x[6:10] = np.array([0x3F808000, 0x3F818000, 0x3F808001, 0x7F7FFFFF], np.uint32).view(np.float32)  # ties
    out = np.zeros(x.size, np.uint16)
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    run(1, ptr(x), ptr(out), ctypes.c_ulonglong(x.size))
    want = x.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.view(ml_dtypes.bfloat16).astype(np.float32), want.astype(np.float32))
    back = np.zeros(x.size, np.float32)
    run(0, ptr(out), ptr(back), ctypes.c_ulonglong(x.size))
    np.testing.assert_array_equal(back, want.astype(np.float32))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("vec", [1, 0])
@pytest.mark.parametrize("graph", [False, True])
def test_dropout_kernel_matches_the_reference_on_the_host(tmp_path, dtype, vec, graph):
    """The one-pass dropout kernel (ember/backend/cuda/dropout.py), built by the host compiler: the reference's
    output and mask bit for bit (the rand stream's uniforms at a counter that carries past 2^64), for 16-byte
    chunks and element by element, with a length that isn't a multiple of 8; in graph form the key and a
    counter shift come from the state array."""
    import ctypes
    import shutil
    import subprocess

    import ml_dtypes

    from ember.backend.cuda import dropout as cd
    from ember.backend.numpy import dropout as ref
    from ember.backend.numpy.dropout import keep_scale
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    driver = r"""
typedef unsigned long long u64;
extern "C" void run(const S* x, S* out, S* mask, u64 n, float p, float keep, int vec, u64 key, u64 c0, u64 c1,
                    u64 c2, const u64* st) {
    blockDim.x = 256;
    for (u64 t = 0; t < (n + 7) / 8; ++t) { blockIdx.x = t / 256; threadIdx.x = t % 256;
        ember_dropout(x, out, mask, n, p, keep, vec, key, c0, c1, c2, st); } }
"""
    src, lib = tmp_path / "dropout.cpp", tmp_path / "dropout.so"
    src.write_text("#define EMBER_HOST_SIM 1\n" + _CUDA_STUB + _ATTN_STUB + cd.source(dtype) + driver)
    subprocess.run([cxx, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True, capture_output=True)
    so = ctypes.CDLL(str(lib))
    npd = np.dtype(np.float32) if dtype == "float32" else np.dtype(ml_dtypes.bfloat16)
    x = np.random.default_rng(7).standard_normal(1003).astype(npd)
    x[:3] = [np.inf, np.nan, -0.0]
    seed, offset, p = 0x9E3779B97F4A7C15, (1 << 64) - 2, 0.3
    want_y, want_m = ref.dropout(x, p, seed, offset)
    y, m = np.zeros_like(x), np.zeros_like(x)
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    u64, mask64 = ctypes.c_ulonglong, (1 << 64) - 1
    if graph:  # the kernel's own counter is 0: the state array's shift is the whole offset
        st = np.array([seed & mask64, offset & mask64, (offset >> 64) & mask64, offset >> 128], np.uint64)
        args = (u64(0), u64(0), u64(0), u64(0), ptr(st))
    else:
        args = (u64(seed & mask64), u64(offset & mask64), u64((offset >> 64) & mask64), u64(offset >> 128), None)
    so.run(ptr(x), ptr(y), ptr(m), u64(x.size), ctypes.c_float(p), ctypes.c_float(keep_scale(npd, p)),
           ctypes.c_int(vec), *args)
    np.testing.assert_array_equal(m.view(np.uint16 if npd.itemsize == 2 else np.uint32),
                                  want_m.view(np.uint16 if npd.itemsize == 2 else np.uint32))
    np.testing.assert_array_equal(y.astype(np.float32), want_y.astype(np.float32))
    assert 0.2 < (m == 0).mean() < 0.4


@pytest.mark.parametrize("vin,vout", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_repitch_kernel_moves_rows_between_pitches_on_the_host(tmp_path, vin, vout):
    """The row copy behind cuBLAS's padded operands (casts.copy_rows), built by the host compiler: rows of 13
    elements into rows of 16 with zeros past them, and back; element by element or 16 bytes at a time on
    the side whose pitch allows it."""
    import ctypes
    import shutil
    import subprocess

    from ember.backend.cuda import casts
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    driver = r"""
typedef unsigned long long u64;
extern "C" void run(const void* s, void* d, u64 rows, u64 cols, u64 dcols, u64 ps, u64 pd, int vin, int vout) {
    blockDim.x = 256;
    for (u64 t = 0; t < rows * ((dcols + 7) / 8); ++t) { blockIdx.x = t / 256; threadIdx.x = t % 256;
        ember_repitch16((const unsigned short*)s, (unsigned short*)d, rows, cols, dcols, ps, pd, vin, vout); } }
"""
    src, lib = tmp_path / "repitch.cpp", tmp_path / "repitch.so"
    src.write_text("#define EMBER_HOST_SIM 1\n" + _CUDA_STUB + _ATTN_STUB + casts.source() + driver)
    subprocess.run([cxx, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True, capture_output=True)
    run = ctypes.CDLL(str(lib)).run
    u64 = ctypes.c_ulonglong
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    a = (np.arange(5 * 16, dtype=np.uint16) + 1).reshape(5, 16)   # rows of 13 (or 16: the aligned source)
    padded = np.full((5, 16), 0xFFFF, np.uint16)
    # into pitch 16, zero-filled to 16 columns (vout: 16-byte stores; vin reads a pitch-16 source)
    run(ptr(a), ptr(padded), u64(5), u64(13), u64(16), u64(16 if vin else 13), u64(16), vin, vout)
    want = (a if vin else a.reshape(-1)[:65].reshape(5, 13))[:, :13]
    np.testing.assert_array_equal(padded[:, :13], want)
    assert (padded[:, 13:] == 0).all()
    back = np.full((5, 13), 7, np.uint16)
    run(ptr(padded), ptr(back), u64(5), u64(13), u64(13), u64(16), u64(13), vin, 0)
    np.testing.assert_array_equal(back, want)


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_bf16_arithmetic_kernels_round_like_ml_dtypes_on_the_host(tmp_path, op):
    """The CUDA kernels for two same-shape bfloat16 arrays (8 elements a thread), built by the host compiler:
    each element computed in float32 and rounded once, as ml_dtypes (and CuPy, PyTorch) do; NaN and inf."""
    import ctypes
    import shutil
    import subprocess

    import ml_dtypes

    from ember.backend.cuda import casts
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    driver = f"""
extern "C" void run(const void* a, const void* b, void* o, unsigned long long n8, unsigned long long b8) {{
    blockDim.x = 256;
    for (unsigned long long t = 0; t < n8; ++t) {{ blockIdx.x = t / 256; threadIdx.x = t % 256;
        ember_{op}16_bf16((const ember_u4*)a, (const ember_u4*)b, (ember_u4*)o, n8, b8); }} }}
"""
    src, lib = tmp_path / "arith.cpp", tmp_path / "arith.so"
    src.write_text("#define EMBER_HOST_SIM 1\n" + _CUDA_STUB + _ATTN_STUB + casts.source() + driver)
    subprocess.run([cxx, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True, capture_output=True)
    run = ctypes.CDLL(str(lib)).run
    rng = np.random.default_rng(3)
    bf = ml_dtypes.bfloat16
    a = (rng.standard_normal(4096) * 10.0 ** rng.integers(-20, 20, 4096)).astype(bf)
    b = (rng.standard_normal(4096) * 10.0 ** rng.integers(-20, 20, 4096)).astype(bf)
    a[:5] = [np.nan, np.inf, -np.inf, 3e38, 1.0]
    b[:5] = [1.0, 2.0, np.inf, 3e38, 2.0 ** -9]   # an overflow and a tie in the last two
    ptr = lambda x: x.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    ufunc = getattr(np, {"add": "add", "sub": "subtract", "mul": "multiply"}[op])
    for rhs in (b, b[:64]):  # the same shape, and a row of 64 repeated over a's 64 rows (a bias)
        out = np.zeros(4096, bf)
        run(ptr(a), ptr(rhs), ptr(out), ctypes.c_ulonglong(4096 // 8), ctypes.c_ulonglong(rhs.size // 8))
        want = ufunc(a.reshape(-1, rhs.size).astype(np.float32), rhs.astype(np.float32)).astype(bf)
        np.testing.assert_array_equal(out.astype(np.float32), want.reshape(-1).astype(np.float32))


@pytest.mark.parametrize("which", ["gelu_tanh", "gelu_erf", "gelu_tanh_backward", "gelu_erf_backward"])
def test_16bit_map_kernels_match_float32_math_on_the_host(tmp_path, which):
    """GELU and its derivative over bfloat16 arrays 8 elements a thread (casts.map16, generated from the
    ElementwiseKernel specs), built by the host compiler: float32 math rounded once, as PyTorch computes
    16-bit GELU (within one bfloat16 step where the C library's tanh/erfc differ from numpy's by an ulp)."""
    import ctypes
    import math
    import shutil
    import subprocess

    import ml_dtypes

    from ember.backend.cuda import casts, kernels
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    params, outs, body, _ = kernels.spec(which)
    inputs = [p.split()[1] for p in params.split(",")]
    args = ", ".join(f"(const ember_u4*)a{i}" for i in range(len(inputs)))
    driver = f"""
extern "C" void run(const void* a0, const void* a1, void* o, unsigned long long n8) {{
    blockDim.x = 256;
    for (unsigned long long t = 0; t < n8; ++t) {{ blockIdx.x = t / 256; threadIdx.x = t % 256;
        kern({args}, (ember_u4*)o, n8); }} }}
"""
    src, lib = tmp_path / "map.cpp", tmp_path / "map.so"
    src.write_text("#define EMBER_HOST_SIM 1\n#include <cmath>\nusing std::tanh; using std::erfc; using std::exp;\n"
                   + _CUDA_STUB + _ATTN_STUB + casts.map_source("kern", inputs, outs.split()[1], body, "bf16") + driver)
    subprocess.run([cxx, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True, capture_output=True)
    run = ctypes.CDLL(str(lib)).run
    bf = ml_dtypes.bfloat16
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(4096) * 3).astype(bf)
    x[:4] = [0.0, -10.0, 10.0, np.nan]
    g = rng.standard_normal(4096).astype(bf)
    out = np.zeros(4096, bf)
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    run(ptr(x), ptr(g), ptr(out), ctypes.c_ulonglong(4096 // 8))
    v, gg = x.astype(np.float64), g.astype(np.float64)
    t = np.tanh(0.7978845608028654 * (v + 0.044715 * v ** 3))
    erfc = np.vectorize(math.erfc)(-v / math.sqrt(2))
    want = {"gelu_tanh": 0.5 * v * (1 + t), "gelu_erf": 0.5 * v * erfc,
            "gelu_tanh_backward": gg * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * 0.7978845608028654
                                        * (1 + 0.134145 * v * v)),
            "gelu_erf_backward": gg * (0.5 * erfc + v * np.exp(-0.5 * v * v) / math.sqrt(2 * math.pi))}[which]
    # atol: where 1 + tanh cancels (x << 0) float32 math keeps ~1e-7 absolute, as PyTorch's kernel does
    np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float32).astype(bf).astype(np.float64),
                               rtol=2 ** -7, atol=1e-6)


@pytest.mark.parametrize("case", ["heads", "transpose", "sliced", "batch-first"])
def test_gather_kernel_makes_strided_arrays_contiguous_on_the_host(tmp_path, case):
    """The CUDA strided-copy kernel (16-byte pieces, dims merged) built by the host compiler, run thread by
    thread on views like attention's permuted heads: numpy's C-contiguous copy, byte for byte."""
    import ctypes
    import shutil
    import subprocess

    from ember.backend.cuda import casts
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    driver = r"""
extern "C" void run(const char* src, void* dst, unsigned long long n, const long long* d, const long long* s) {
    blockDim.x = 256;
    for (unsigned long long t = 0; t < n; ++t) { blockIdx.x = t / 256; threadIdx.x = t % 256;
        ember_gather16(src, (ember_u4*)dst, n, d[1], d[2], d[3], d[4], d[5], s[0], s[1], s[2], s[3], s[4], s[5]); } }
"""
    src, lib = tmp_path / "gather.cpp", tmp_path / "gather.so"
    src.write_text("#define EMBER_HOST_SIM 1\n" + _CUDA_STUB + _ATTN_STUB + casts.source() + driver)
    subprocess.run([cxx, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True, capture_output=True)
    run = ctypes.CDLL(str(lib)).run
    base = np.arange(2 * 5 * 3 * 4 * 16, dtype=np.uint16).reshape(2, 5, 3, 4, 16)
    views = {"heads": base.transpose(2, 0, 3, 1, 4)[1], "transpose": base.reshape(10, 12, 16).transpose(1, 0, 2),
             "sliced": base[:, 1:4, :, :, 8:], "batch-first": base.astype(np.float32).transpose(1, 0, 2, 3, 4)}
    x = views[case]
    # a 16-byte aligned copy of the view's memory, the view re-made over it
    buf = np.zeros(x.base.nbytes + 16 if x.base is not None else x.nbytes + 16, np.uint8)
    root = x.base if x.base is not None else x
    start = (-buf.ctypes.data) % 16
    host = np.frombuffer(buf[start:start + root.nbytes], dtype=root.dtype).reshape(root.shape)
    host[...] = root
    off = x.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    view = np.lib.stride_tricks.as_strided(host.reshape(-1).view(np.uint8)[off:].view(x.dtype), x.shape, x.strides)
    got = casts.pieces(view.shape, view.strides, view.itemsize, view.__array_interface__["data"][0])
    assert got is not None
    sizes, steps = (np.array(v, np.int64) for v in got)
    out = np.zeros(x.shape, x.dtype)
    n = x.nbytes // 16
    run(ctypes.c_void_p(view.__array_interface__["data"][0]), out.ctypes.data_as(ctypes.c_void_p),
        ctypes.c_ulonglong(n),
        sizes.ctypes.data_as(ctypes.c_void_p), steps.ctypes.data_as(ctypes.c_void_p))
    np.testing.assert_array_equal(out, np.ascontiguousarray(x))


def test_gather_pieces_refuses_what_the_kernel_cant_read():
    from ember.backend.cuda.casts import pieces
    assert pieces((4, 6), (2, 12), 2, 0) is None      # last dim not contiguous
    assert pieces((4, 6), (12, 2), 2, 0) is None      # 12-byte rows: not 16-byte pieces
    assert pieces((4, 8), (16, 2), 2, 8) is None      # base not aligned
    assert pieces((2, 3, 8), (96, 32, 2), 2, 0) == ([1, 1, 1, 1, 1, 6], [0, 0, 0, 0, 0, 32])  # one run of 6
