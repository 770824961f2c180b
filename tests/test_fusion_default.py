"""The fused default stacks ("cpu", "cuda" and "wgpu" unless EMBER_DEFAULT_FUSION=0): Fusion over the
compiled CPU backend with a cost model (ops on small tensors in memory run at once), memory shared with
numpy kept in program order, the numpy fallback without a C compiler, and the plain stacks by name."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember
from ember import cube
from ember.backend import fusion
from ember.backend.autodiff import Autodiff
from ember.backend.fusion import Fusion

try:
    from ember.cube.runtime.c import compiler
    compiler()
except Exception:  # noqa: BLE001
    pytest.skip("the fused default needs a C compiler", allow_module_level=True)

from ember.backend.fusion.target import CpuTarget

BIG = CpuTarget.eager_below * 2
# the stack "cpu" is (unless EMBER_DEFAULT_FUSION=0), on a device of its own
DEFAULT = ember.Device("cpu", backend=fusion.make_default_cpu_stack())


def _fusion(device=DEFAULT) -> Fusion:
    be = ember.device(device).backend
    while not isinstance(be, Fusion):
        be = be.inner
    return be


def _delta(device, fn):
    fu = _fusion(device)
    fu.flush()
    start = dict(fu.stats)
    out = fn()
    fu.flush()
    return out, {k: fu.stats[k] - start[k] for k in start}


def test_the_default_cpu_stack_is_fused_with_a_cost_model():
    be = DEFAULT.backend
    assert isinstance(be, Autodiff) and isinstance(be.inner, Fusion)
    assert type(be.inner.inner).__name__ == "CpuC"
    assert be.inner.min_elements == CpuTarget.eager_below > 0
    assert _fusion("cpu:fused").min_elements == 0  # the explicit device fuses everything
    plain = ember.device("cpu:numpy").backend
    assert isinstance(plain, Autodiff) and type(plain.inner).__name__ == "Numpy"


_SCRIPT = r"""
import json, numpy as np, ember
from ember.backend.fusion import Fusion
from ember import _device
out = {"cpu": repr(ember.device("cpu").backend), "numpy": repr(ember.device("cpu:numpy").backend),
       "cuda": _device._LAZY["cuda"], "wgpu": _device._LAZY["wgpu"]}
be = ember.device("cpu").backend.inner
if not isinstance(be, Fusion):
    print(json.dumps(out))
    raise SystemExit

out["min"] = be.min_elements
n = be.min_elements * 2
a = np.ones(n, np.float32); t = ember.from_numpy(a); before = t * 2; a[:] = 5; after = t * 2
b = ember.ones(n); view = b.numpy(); b.add_(1); seen = float(view[0]); c = b * 3; view[:] = 7; d = b * 3
out["values"] = [float(before[0]), float(after[0]), seen, float(c[0]), float(d[0])]
print(json.dumps(out))
"""


def _run_script(setting: str | None) -> dict:
    import json
    import os
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("EMBER_FUSION_MIN", None)
    env.pop("EMBER_DEFAULT_FUSION", None)
    if setting is not None:
        env["EMBER_DEFAULT_FUSION"] = setting
    r = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("setting,cpu,gpu_fused", [(None, "Autodiff(Fusion(CpuC()))", True),
                                                   ("1", "Autodiff(Fusion(CpuC()))", True),
                                                   ("0", "Autodiff(Numpy())", False)])
def test_ember_default_fusion_picks_the_plain_stacks(setting, cpu, gpu_fused):
    # unset or 1: "cpu", "cuda" and "wgpu" fused; 0: none
    out = _run_script(setting)
    assert out["cpu"] == cpu and out["numpy"] == "Autodiff(Numpy())"
    for name in ("cuda", "wgpu"):
        fused, plain = f"ember.backend.fusion:make_default_{name}_stack", f"ember.backend.{name}:make_stack"
        assert out[name] == (fused if gpu_fused else plain)


def test_the_fused_default_keeps_host_memory_in_program_order():
    out = _run_script(None)
    assert out["min"] == CpuTarget.eager_below
    # the same program on torch: writes through shared numpy arrays are seen in program order
    a = np.ones(4, np.float32)
    t = torch.from_numpy(a)
    before = t * 2
    a[:] = 5
    after = t * 2
    b = torch.ones(4)
    view = b.numpy()
    b.add_(1)
    seen = float(view[0])
    c = b * 3
    view[:] = 7
    d = b * 3
    assert out["values"] == [float(before[0]), float(after[0]), seen, float(c[0]), float(d[0])]


def test_small_tensors_run_at_once_and_large_ones_fuse():
    rng = np.random.default_rng(0)
    for n, fused in ((64, False), (BIG, True)):
        a = rng.standard_normal(n).astype(np.float32)
        x = ember.tensor(a, device=DEFAULT)
        out, d = _delta(DEFAULT, lambda x=x: ((x * 1.5 + 0.5).tanh() * x.sigmoid() + x * x) * 0.5)
        t = torch.from_numpy(a)
        want = ((t * 1.5 + 0.5).tanh() * t.sigmoid() + t * t) * 0.5
        np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
        if fused:
            assert d["kernels"] == 1 and d["inner_ops"] == 0, d
        else:
            assert d["kernels"] == 0 and d["inner_ops"] == 8, d  # the chain's eight ops, one by one


def test_a_pending_input_is_recorded_whatever_the_other_inputs_size():
    x = ember.randn(BIG, device=DEFAULT)
    small = ember.randn(1, device=DEFAULT)

    def run():
        y = x * 2  # pending
        return y + small  # small is in memory, y is not: recorded, fused with y
    out, d = _delta(DEFAULT, run)
    assert d["kernels"] == 1 and d["inner_ops"] == 0, d
    np.testing.assert_allclose(out.numpy(), x.numpy() * 2 + small.numpy(), rtol=1e-6)


def _shared_memory_script(lib, device, n):
    """What a program sees through numpy arrays that share memory with tensors (``.numpy()``)."""
    b = lib.ones(n, device=device)
    view = b.numpy()
    b.add_(1)  # an ember/torch write: the numpy view sees it at once
    seen = view.copy()
    c = b * 3
    view[:] = 7  # a host write after c was computed
    d = b * 3
    return [np.asarray(v).copy() for v in (seen, c.numpy(), d.numpy())]


@pytest.mark.parametrize("device", [DEFAULT, "cpu:fused"], ids=["default", "cpu:fused"])
def test_memory_shared_with_numpy_keeps_program_order(device):
    got = _shared_memory_script(ember, device, BIG)
    want = _shared_memory_script(torch, "cpu", BIG)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def _write_behind_a_pending_read(lib, device, n, how):
    """A value computed from x before the program writes x's memory directly must not see the write."""
    x = lib.ones(n, device=device)
    z = x * 2  # pending on a fused device: it reads x
    if how == "numpy":
        x.numpy()[:] = 5
    elif how == "dlpack":
        np.from_dlpack(x)[:] = 5
    else:  # a cube kernel writing x in place (the torch program writes it with fill_)
        if lib is torch:
            x.fill_(5)
        else:
            _FILL[(n + 255) // 256, 256](x, 5.0)
    return np.asarray(z.numpy()).copy(), np.asarray(x.numpy()).copy()


@cube.kernel
def _FILL(x: cube.Array[cube.f32], v: cube.f32):
    i = cube.block_idx.x * cube.block_dim.x + cube.thread_idx.x
    if i < x.size:
        x[i] = v


@pytest.mark.parametrize("how", ["numpy", "dlpack", "cube"])
@pytest.mark.parametrize("device", [DEFAULT, "cpu:fused"], ids=["default", "cpu:fused"])
def test_pending_reads_run_before_the_program_writes_the_memory(device, how):
    got = _write_behind_a_pending_read(ember, device, BIG, how)
    want = _write_behind_a_pending_read(torch, "cpu", BIG, how)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_an_in_place_op_waits_only_for_pending_work_on_its_memory():
    rng = np.random.default_rng(1)
    x0, o0 = rng.standard_normal(BIG).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    x = ember.tensor(x0, device=DEFAULT)  # a copy: no host array shares its memory (.numpy() would make one)
    other = ember.tensor(o0, device=DEFAULT)  # small: its ops run at once on the inner backend
    fu = _fusion()
    fu.flush()
    y = x * 2  # pending, reads x
    flushes = fu.stats["flushes"]
    other.mul_(0.5)  # not memory the pending work touches: y stays pending
    assert fu.stats["flushes"] == flushes
    x[:5] = 3.0  # a write into part of x runs on the inner backend: y is computed from the old x first
    assert fu.stats["flushes"] == flushes + 1
    np.testing.assert_allclose(y.numpy(), x0 * 2, rtol=1e-6)
    x0[:5] = 3.0
    np.testing.assert_allclose(x.numpy(), x0, rtol=1e-6)
    np.testing.assert_allclose(other.numpy(), o0 * 0.5, rtol=1e-6)


def test_without_a_c_compiler_cpu_is_the_numpy_stack_said_once(monkeypatch):
    monkeypatch.setattr(fusion, "_c_compiler_works", lambda: False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        be = fusion.make_default_cpu_stack()
    assert isinstance(be, Autodiff) and type(be.inner).__name__ == "Numpy"
    assert len(caught) == 1 and "C compiler" in str(caught[0].message)


def test_a_window_cut_by_the_size_bound_is_replayed(monkeypatch):
    """A long step is cut into windows by the pending-size bound; each cut falls between ops, so the
    next step replays every window's plan instead of analysing it again."""
    from ember.backend.fusion import backend as fb
    monkeypatch.setattr(fb, "MAX_PENDING", 16)
    fu = _fusion("cpu:fused")
    x = ember.randn(256, device="cpu:fused")

    def step():
        y = x
        for _ in range(40):
            y = y * 1.01 + 0.01
        return y.sum().item()
    step()
    fu.flush()
    plans = fu.stats["plans"]
    first = step()
    assert fu.stats["plans"] == plans  # no window analysed again
    assert first == step()


def test_an_index_tensor_on_another_cpu_device_moves_to_the_indexed_tensor():
    # the MNIST example's random shifts index a device's tensor with default-device index tensors,
    # as PyTorch allows CPU indices for any device's tensor
    x = ember.arange(12.0, device="cpu:numpy").reshape(3, 4)
    rows, cols = ember.tensor([2, 0]), ember.tensor([1, 3])
    got = x[rows, cols]
    assert got.device == x.device
    np.testing.assert_array_equal(got.numpy(), torch.arange(12.0).reshape(3, 4)[[2, 0], [1, 3]].numpy())


def test_compiled_cpu_matmul_refuses_a_third_input():
    # its kernel takes an optional out array: a third input must not become one (the remote server
    # runs ops sent by clients on this backend)
    from ember.backend.cpuc import CpuC
    a = np.ones(4, np.float32)
    with pytest.raises(TypeError):
        CpuC().run("matmul", (a, a, a), {})
