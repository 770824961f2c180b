"""Fusion on the GPU targets: "wgpu:fused" (WGSL; Mesa's lavapipe on CPU-only machines), "cuda:fused"
(skips without a GPU), and "cpu:cuda-style", a Fusion layer on the CPU whose target asks for the
CUDA kernel forms (a block per row with warp-shuffle reductions, vec4 elementwise kernels): cube's C
target runs those kernels (warps emulated), so the CUDA forms' logic is checked on every machine,
and every kernel kind they produce is also rendered as CUDA C (no GPU needed to render).

Shapes are tiny: lavapipe compiles every pipeline and runs shaders on the CPU.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _device, cube
from ember.backend import fusion
from ember.backend.fusion import Fusion, codegen
from ember.backend.fusion.target import CpuTarget
from ember.cube.testing import has_cuda
from tests.test_fusion import Launches, _fusion

torch = pytest.importorskip("torch")
os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())


class CudaStyleCpu(CpuTarget):
    """The CPU target with the CUDA target's generator options (see target.py)."""

    row_block = 1024
    warp = True
    vec4 = True
    acc64 = False  # as CudaTarget: float32 sums accumulate in float32
    WORK_PER_BLOCK = 1 << 12  # several blocks even for tiny tensors: the grid-stride loops run

    def flat(self, arr, storage):
        # as CudaTarget.flat: a contiguous view off a 16-byte boundary is read through its base
        item = arr.itemsize
        ptr = arr.__array_interface__["data"][0]
        if arr.flags.c_contiguous and ptr % 16 and isinstance(storage, np.ndarray) and \
                storage.flags.c_contiguous and storage.dtype == arr.dtype and arr.size:
            off = ptr - storage.__array_interface__["data"][0]
            return storage.reshape(-1), tuple(s // item for s in arr.strides), off // item
        return super().flat(arr, storage)


def _cuda_style_stack(index=None):
    from ember.backend.autodiff import Autodiff
    from ember.backend.numpy import Numpy
    fu = Fusion(Numpy())
    fu.target = CudaStyleCpu()
    return Autodiff(fu)


# until ember/_device.py names them (the lead adds the lines), register the fused GPU devices here
for _name, _factory in (("wgpu:fused", fusion.make_wgpu_stack), ("cuda:fused", fusion.make_cuda_stack)):
    if _name not in _device._LAZY:
        ember.register_device(_name, _factory)
ember.register_device("cpu:cuda-style", _cuda_style_stack)


def _available(dev: str) -> bool:
    try:
        ember.device(dev)
        return True
    except Exception:  # noqa: BLE001 - no wgpu, no adapter, no CuPy or no GPU
        return False


DEVICES = [
    pytest.param("wgpu:fused", marks=pytest.mark.skipif(not _available("wgpu:fused"), reason="no wgpu adapter")),
    pytest.param("cuda:fused", marks=pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")),
    "cpu:cuda-style",
]
UNFUSED = {"wgpu:fused": "wgpu", "cuda:fused": "cuda", "cpu:cuda-style": "cpu"}


def t(dev, a, **kw):
    return ember.tensor(np.asarray(a), device=dev, **kw)


def host(x) -> np.ndarray:
    return x.detach().cpu().numpy()


def rand(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.fixture(params=DEVICES)
def dev(request):
    return request.param


def test_stacks(dev):
    be = ember.device(dev).backend
    assert isinstance(be.inner, Fusion)
    assert be.inner.target.row_block > 0  # the GPU kernel forms


def test_chain_is_one_kernel(dev):
    x0 = rand(0, 4099)  # not a multiple of 4: the vec4 kernel's tail runs
    x = t(dev, x0)
    with Launches(dev) as n:
        got = host(((x * 1.5 + 0.5).tanh() * x.sigmoid() + x * x) * 0.5)
    want = (np.tanh(x0 * 1.5 + 0.5) / (1 + np.exp(-x0)) + x0 * x0) * 0.5
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert n.total == 1


def test_broadcasts_views_and_casts(dev):
    a0, b0 = rand(1, 6, 5), rand(2, 5)
    a, b = t(dev, a0), t(dev, b0)
    with Launches(dev) as n:
        y = (a + b) * 2.0               # broadcast of a row
        z = y.t() - a.t().exp()         # views of a pending value and of memory
        k = (z > 0).to(ember.int32) * 3  # a comparison, a cast to int, int arithmetic
        w = ember.where(k > 0, z, y.t() * 0.5).to(ember.float32)
        got_w, got_k = host(w), host(k)
    y0 = (a0 + b0) * 2.0
    z0 = y0.T - np.exp(a0.T)
    k0 = (z0 > 0).astype(np.int32) * 3
    np.testing.assert_allclose(got_w, np.where(k0 > 0, z0, y0.T * 0.5), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got_k, k0)
    assert got_k.dtype == np.int32
    assert n.kernels >= 1


def test_softmax_one_kernel(dev):
    x0 = rand(3, 9, 300)
    x = t(dev, x0)
    with Launches(dev) as n:
        got = host(F.softmax(x, dim=-1))
    np.testing.assert_allclose(got, torch.softmax(torch.tensor(x0), -1).numpy(), rtol=1e-5, atol=1e-7)
    assert n.total == 1
    got = host(F.log_softmax(x, dim=0))
    np.testing.assert_allclose(got, torch.log_softmax(torch.tensor(x0), 0).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(5, 64), (3, 1000), (2, 40000)])
def test_layer_norm_one_kernel(dev, shape):
    x0, w0, b0 = rand(4, *shape), rand(5, shape[-1]), rand(6, shape[-1])
    x, w, b = t(dev, x0), t(dev, w0), t(dev, b0)
    with Launches(dev) as n:
        got = host(F.layer_norm(x, shape[-1:], w, b))
    T = torch.tensor
    want = torch.nn.functional.layer_norm(T(x0), shape[-1:], T(w0), T(b0)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert n.total == 1


@pytest.mark.parametrize("n", [4096, 768])
def test_rows_of_whole_vectors_read_and_write_four_at_a_time(dev, monkeypatch, n):
    # rows of float32 split into whole 4-element vectors per thread (4096: 512 threads x 8 for layer norm,
    # 256 x 16 for softmax; GPT-2's 768: 64 x 12) take the 16-byte form on targets with vector accesses (the
    # CUDA forms); a row starting off a 16-byte boundary takes the scalar form
    from ember.backend.fusion import codegen
    target = _fusion(dev).target
    launched = []
    orig = type(target).launch  # patched on the class: an instance attribute would outlive the test

    def launch(self, kern, *a):
        launched.append(kern)
        return orig(self, kern, *a)
    monkeypatch.setattr(type(target), "launch", launch)
    T = torch.tensor
    x0, w0, b0 = rand(21, 6, n + 1), rand(22, n), rand(23, n)
    x, w, b = t(dev, x0), t(dev, w0), t(dev, b0)
    for sl in (slice(0, n), slice(1, n + 1)):
        xs = x[:, sl].contiguous() if sl.start == 0 else x[:, sl]
        got_ln = host(F.layer_norm(xs, (n,), w, b))
        got_sm = host(F.softmax(x[:, sl] * 2.0, dim=-1))
        want_ln = torch.nn.functional.layer_norm(T(x0[:, sl]), (n,), T(w0), T(b0)).numpy()
        want_sm = torch.softmax(T(x0[:, sl]) * 2.0, dim=-1).numpy()
        np.testing.assert_allclose(got_ln, want_ln, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got_sm, want_sm, rtol=1e-5, atol=1e-7)
    source_of = {id(k): src for src, k in codegen._KERNELS.items()}
    rows = [source_of[id(k)] for k in launched if k.__name__ == "fused_rows"]
    assert len(rows) >= 4
    vec = [src for src in rows if ".vec4[" in src]
    if getattr(target, "vec4", False):
        assert vec and any(".vec4[" not in src for src in rows)
    else:
        assert not vec


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 2)])
def test_reductions_with_prologue(dev, op, dim):
    x0 = rand(7, 3, 70, 4)
    x = t(dev, x0)
    got = host(getattr(x * 2.0 + 1.0, op)() if dim is None else getattr(x * 2.0 + 1.0, op)(dim=dim))
    ref = {"sum": np.sum, "mean": np.mean, "amax": np.max, "amin": np.min}[op]
    np.testing.assert_allclose(got, ref(x0 * 2 + 1, axis=dim), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
def test_long_reduction_to_one_value_runs_in_rows(dev, op):
    # 2^18 elements to one value: 1024 rows reduced by a block each, then the 1024 partials (two kernels); so
    # does a size with odd factors (1001 rows of 1003); a prime size stays one kernel
    import torch
    x0 = rand(11, 512, 512)
    x0[100, 7] = 9.5  # a unique maximum
    x = t(dev, x0)
    with Launches(dev) as n:
        got = getattr((x * 0.5).tanh() + 1.0, op)().item()
    want = getattr((torch.from_numpy(x0).double() * 0.5).tanh() + 1.0, op)().item()
    assert got == pytest.approx(want, rel=1e-5)
    assert n.kernels == 2 and n.inner == 0
    for shape, kernels in (((1001, 1003), 2), ((65537,), 1)):
        y0 = rand(12, *shape)
        with Launches(dev) as n:
            got = (t(dev, y0) * 2.0).sum().item()
        assert got == pytest.approx(float((y0.astype(np.float64) * 2).sum()), rel=1e-4, abs=1e-3)
        assert n.kernels == kernels


def test_bool_and_integer_values(dev):
    x0 = rand(8, 10, 33)
    x = t(dev, x0)
    m = x > 0.25
    got = host(x.masked_fill(m, 0.0) + m.to(ember.float32))
    np.testing.assert_allclose(got, np.where(x0 > 0.25, 0.0, x0) + (x0 > 0.25), rtol=1e-6)
    assert host(m.sum()) == (x0 > 0.25).sum()          # an int64 result (WGSL: on the inner backend)
    np.testing.assert_array_equal(host(m.logical_not()), x0 <= 0.25)
    i = t(dev, np.arange(12, dtype=np.int32).reshape(3, 4))
    np.testing.assert_array_equal(host((i * 3 - 1).amax(dim=1)), (np.arange(12).reshape(3, 4) * 3 - 1).max(1))


def test_inplace_update_orders_reads(dev):
    w = t(dev, np.arange(8, dtype=np.float32))
    old = w * 2
    w.add_(w * 0.5 + 100)   # reads and writes the same storage in one kernel
    new = w * 2
    a = np.arange(8, dtype=np.float32)
    np.testing.assert_allclose(host(old), a * 2)
    np.testing.assert_allclose(host(new), (a + a * 0.5 + 100) * 2)
    np.testing.assert_allclose(host(w), a + a * 0.5 + 100)


def test_long_contiguous_kernels_with_several_outputs(dev):
    """Above 1,024 elements the CUDA form loads 4 at a time: several outputs, an in-place one, a 0-d
    tensor read by every element, an odd length (the tail), an input at an offset."""
    n = 4099
    p0, g0 = rand(17, n), rand(18, n + 3)
    p, g = t(dev, p0), t(dev, g0)
    s = t(dev, np.float32(0.25))
    gv = g[3:]  # offset 3: not a whole vector, the one-element form
    m = p * 0.9 + gv * s
    p.sub_(m * 0.1)
    q = p * s + 1.0
    np.testing.assert_allclose(host(m), p0 * 0.9 + g0[3:] * 0.25, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(host(p), p0 - (p0 * 0.9 + g0[3:] * 0.25) * 0.1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(host(q), host(p) * 0.25 + 1.0, rtol=1e-6)
    p2, g2 = t(dev, p0), t(dev, g0[:n])
    with Launches(dev) as k:
        a = p2 * s + g2
        b = (p2 - g2).exp()
        p2.add_(a * 0.5)
        got_a, got_b = host(a), host(b)
    assert k.kernels == 1  # a, b and the write into p2: one kernel
    np.testing.assert_allclose(got_a, p0 * 0.25 + g0[:n], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_b, np.exp(p0 - g0[:n]), rtol=1e-5)
    np.testing.assert_allclose(host(p2), p0 + (p0 * 0.25 + g0[:n]) * 0.5, rtol=1e-6, atol=1e-6)


def test_gelu_mlp_block_launches(dev):
    x0, w10, b10 = rand(19, 16, 32), rand(20, 64, 32) * 0.1, rand(21, 64)
    w20, b20 = rand(22, 32, 64) * 0.1, rand(23, 32)
    x, w1, b1, w2, b2 = (t(dev, a) for a in (x0, w10, b10, w20, b20))
    with Launches(dev) as n:
        y = F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2) + x
        got = host(y)
    T = torch.tensor
    tf = torch.nn.functional
    want = tf.linear(tf.gelu(tf.linear(T(x0), T(w10), T(b10)), approximate="tanh"), T(w20), T(b20)) + T(x0)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)
    assert n.inner == 2 and n.kernels == 2  # as on the CPU: two products, bias + GELU, bias + residual


def test_write_with_transposed_read_of_itself(dev):
    x = t(dev, np.arange(12, dtype=np.float32).reshape(3, 4))
    y = t(dev, np.arange(9, dtype=np.float32).reshape(3, 3))
    y.copy_(y.t() * 2 + x[:, :3])  # reads other elements of the storage it writes: a snapshot first
    np.testing.assert_array_equal(host(y), np.arange(9).reshape(3, 3).T * 2 + np.arange(12).reshape(3, 4)[:, :3])


def test_matmul_epilogue_and_strided_operands(dev):
    a0, w0, b0 = rand(14, 6, 8), rand(15, 5, 8), rand(16, 5)
    a, w, b = t(dev, a0), t(dev, w0), t(dev, b0)
    with Launches(dev) as n:
        got = host((a @ w.mT + b).relu() * 2.0)
    np.testing.assert_allclose(got, np.maximum(a0 @ w0.T + b0, 0) * 2.0, rtol=1e-5, atol=1e-5)
    assert n.inner == 1 and n.kernels == 1  # the product on the inner backend, its epilogue one kernel


def test_wide_dtypes_run_unfused_and_correct(dev):
    a0 = np.random.default_rng(9).standard_normal((4, 5))
    a = t(dev, a0)  # float64: WGSL has no float64 (the inner backend computes it); CUDA fuses it
    np.testing.assert_allclose(host((a * 2 + 1).exp().sum(1)), np.exp(a0 * 2 + 1).sum(1), rtol=1e-12)
    i = t(dev, np.arange(6, dtype=np.int64))
    np.testing.assert_array_equal(host(i * i + 1), np.arange(6) ** 2 + 1)


def test_adam_update_launches(dev):
    p0 = rand(10, 256)
    p = t(dev, p0, requires_grad=True)
    opt = ember.optim.Adam([p], lr=1e-2)
    pt = torch.tensor(p0, requires_grad=True)
    topt = torch.optim.Adam([pt], lr=1e-2)
    for step in range(3):
        opt.zero_grad()
        (p * p).sum().backward()
        topt.zero_grad()
        (pt * pt).sum().backward()
        topt.step()
        with Launches(dev) as n:
            opt.step()
        if step > 0:
            # m, v and p are written by one kernel; the step counter is the other (as on the CPU)
            assert n.total == 2, (n.kernels, n.inner)
    np.testing.assert_allclose(host(p), pt.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_optimizer_over_many_parameters_of_one_shape(dev):
    """Twelve same-shape parameters: their updates share a kernel on the CPU and CUDA; WebGPU binds a
    limited number of buffers per kernel (32 on lavapipe), so the group is split."""
    rng = np.random.default_rng(24)
    p0 = [rng.standard_normal(64).astype(np.float32) for _ in range(12)]
    ps = [t(dev, a, requires_grad=True) for a in p0]
    pts = [torch.tensor(a, requires_grad=True) for a in p0]
    opt, topt = ember.optim.Adam(ps, lr=1e-2), torch.optim.Adam(pts, lr=1e-2)
    for _ in range(2):
        opt.zero_grad()
        sum((p * p).sum() for p in ps).backward()
        opt.step()
        topt.zero_grad()
        sum((p * p).sum() for p in pts).backward()
        topt.step()
    for p, pt in zip(ps, pts):
        np.testing.assert_allclose(host(p), pt.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_wide_groups_split_at_the_binding_limit(dev):
    rng = np.random.default_rng(25)
    p0 = [rng.standard_normal(64).astype(np.float32) for _ in range(12)]
    g0 = [rng.standard_normal(64).astype(np.float32) for _ in range(12)]
    ps, gs = [t(dev, a) for a in p0], [t(dev, a) for a in g0]
    with Launches(dev) as n:
        for p, g in zip(ps, gs):
            p.add_(g * 0.1)  # 12 writes of one shape: one group, 36 arrays
    limit = ember.device(dev).backend.inner.target.max_arrays
    assert n.kernels == (1 if limit is None else -(-12 // (limit // 3))), n.kernels  # 3 arrays a write
    for p, a, g in zip(ps, p0, g0):
        np.testing.assert_allclose(host(p), a + g * np.float32(0.1), rtol=1e-6)


def _mlp_step(dev, seed=11):
    """Loss and gradients of one SGD step of a small MLP on ``dev``, from the same weights."""
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal((16, 12)).astype(np.float32)
    y0 = rng.integers(0, 3, 16)
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(12, 16), ember.nn.ReLU(), ember.nn.Linear(16, 3))
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    model = model.to(dev)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(2):
        opt.zero_grad()
        loss = F.cross_entropy(model(t(dev, x0)), t(dev, y0))
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    grads = [host(p.grad) for p in model.parameters()]
    return losses, grads, state, x0, y0, [host(p) for p in model.parameters()]


def test_mlp_training_step_matches_unfused_and_torch(dev):
    losses, grads, state, x0, y0, params = _mlp_step(dev)
    ref_losses, ref_grads, _, _, _, ref_params = _mlp_step(UNFUSED[dev])
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-6)
    for p, r in zip(params, ref_params):
        np.testing.assert_allclose(p, r, rtol=1e-5, atol=1e-6)
    m = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    m.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    tl = []
    for _ in range(2):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(torch.tensor(x0)), torch.tensor(y0))
        loss.backward()
        opt.step()
        tl.append(loss.item())
    np.testing.assert_allclose(losses, tl, rtol=1e-5)
    for g, p in zip(grads, m.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_cuda_sources_render_for_every_kernel_kind(monkeypatch):
    """Every kind of kernel the CUDA forms produce renders as CUDA C (no GPU needed): they are
    collected from a run on "cpu:cuda-style", then rendered with cube's CUDA renderer."""
    seen = []
    orig = CudaStyleCpu.launch

    def record(self, kern, grid, block, arrays, scalars):
        seen.append((kern, block, list(arrays), list(scalars)))
        return orig(self, kern, grid, block, arrays, scalars)

    monkeypatch.setattr(CudaStyleCpu, "launch", record)
    dev = "cpu:cuda-style"
    ember.device(dev).backend.inner._plans.clear()  # no replays: every kernel launches through record
    x = t(dev, rand(12, 64, 1024))
    i = t(dev, np.arange(4096, dtype=np.int32).reshape(64, 64))
    d = t(dev, np.random.default_rng(13).standard_normal((8, 300)))
    host(((x * 1.5 + 0.5).tanh() * x.sigmoid() + x * x) * 0.5)        # vec4 elementwise
    host(x.mT * 2.0 + 1.0)                                               # strided elementwise
    host(x * 2.0 + x[0] - x[:, :1])                                      # vec4 over rows, per-row loads
    host(F.softmax(x.reshape(-1, 4096), dim=-1))                         # cached rows, exact fit
    host(F.layer_norm(x[:, :1000], (1000,)))                             # cached rows with a tail
    host((t(dev, rand(14, 2, 40000)) * 2.0).amax(dim=1))                 # uncached rows (long rows)
    host((x * 2.0).sum(dim=0))                                           # adjacent outputs: 32 a block
    host((x > 0).logical_and(x < 1.0).to(ember.float32).var(dim=1))      # bools, var
    host((i * 3 + 1).amin(dim=1))                                        # int32
    host((x > 0).sum(dim=1))                                             # bool -> int64 sums
    host((d * 2.0).exp().sum(dim=1) + d.mean())                          # float64, a full reduction
    names = set()
    for kern, block, arrays, scalars in seen:
        src = kern.generated_source(*arrays, *scalars, block=block, device="cuda")
        assert "__global__" in src
        names.add(kern.__name__)
    assert {"fused_ew", "fused_ew4", "fused_rows"} <= names, names
    source_of = {id(k): src for src, k in codegen._KERNELS.items()}
    rows = [source_of[id(k)] for k, *_ in seen if k.__name__ == "fused_rows"]
    assert any("warp_" in s for s in rows)  # a block per row, warp shuffles
    assert any("static_range" in s for s in rows) and any("range(t, s1" in s for s in rows)  # cached, not
    assert any("rg = t // 32" in s for s in rows)  # 32 adjacent outputs a block
    assert codegen.GENERATED[0] > 0


@pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")
def test_cube_kernels_on_pending_cuda_tensors_run_in_program_order():
    # a kernel launched on a pending tensor gets its computed memory; one writing memory that a pending op
    # reads runs after that op (Fusion.share flushes it first), as in eager PyTorch
    @cube.kernel
    def scale(x: cube.Array[cube.f32], out: cube.Array[cube.f32], a: cube.f32):
        i = cube.block_idx.x * cube.block_dim.x + cube.thread_idx.x
        if i < x.size:
            out[i] = x[i] * a

    n = 1 << 12
    x = ember.ones(n, device="cuda:fused")
    y = x * 2.0                      # pending, reads x
    z = x + 1.0                      # pending, read by the kernel below
    out = ember.empty(n, device="cuda:fused")
    scale[(n + 255) // 256, 256](z, out, 3.0)
    scale[(n + 255) // 256, 256](x, x, 5.0)   # writes x: y must still be 2
    np.testing.assert_array_equal(host(out), np.full(n, 6.0, np.float32))
    np.testing.assert_array_equal(host(y), np.full(n, 2.0, np.float32))
    np.testing.assert_array_equal(host(x), np.full(n, 5.0, np.float32))


def test_raw_launch_parameter_block_layout():
    # cuLaunchKernel reads each parameter through a pointer to an 8-byte slot: per array its pointer and its
    # int32 element count, then the scalars in their C types (the parameters cube's CUDA renderer declares)
    import struct

    from ember.backend.fusion.target_cuda import param_block
    from ember.cube import types as ct
    layout = [("array", ct.f32, 1, 4), ("array", ct.i32, 1, 1), ("scalar", ct.f32, 0, 1), ("scalar", ct.f64, 0, 1),
              ("scalar", ct.i32, 0, 1), ("scalar", ct.i64, 0, 1), ("scalar", ct.bool_, 0, 1)]
    fmt, conv = param_block(layout, 2)
    packer = struct.Struct(fmt)
    assert packer.size == 8 * 9
    blob = packer.pack(0x1000, 7, 0x2000, 9, *[c(v) for c, v in zip(conv, (1.5, 2.25, -3.0, 2 ** 40, 1))])

    def slot(k, code):
        return struct.unpack_from("<" + code, blob, 8 * k)[0]
    assert (slot(0, "Q"), slot(1, "i"), slot(2, "Q"), slot(3, "i")) == (0x1000, 7, 0x2000, 9)
    assert (slot(4, "f"), slot(5, "d"), slot(6, "i"), slot(7, "q"), slot(8, "?")) == (1.5, 2.25, -3, 2 ** 40, True)
    # layouts left to cube's checked launch: an array after a scalar, a 2-d array, a type without a C code here
    assert param_block([("scalar", ct.f32, 0, 1), ("array", ct.f32, 1, 1)], 1) is None
    assert param_block([("array", ct.f32, 2, 1)], 1) is None
    assert param_block([("array", ct.f32, 1, 1), ("scalar", ct.bf16, 0, 1)], 1) is None
