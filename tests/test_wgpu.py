"""The WebGPU backend's own behaviour (the op registry covers op semantics on "wgpu"): device strings,
views sharing storage, dtype storage, the host path, pipeline caching and memory reuse. Tiny shapes:
lavapipe runs WGSL on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.skipif(not ember.wgpu.is_available(), reason="needs wgpu and an adapter (pip install "
                                "ember[wgpu]; lavapipe on CPU-only Linux)")


def _inner(t):
    be = t.device.backend
    while hasattr(be, "inner"):
        be = be.inner
    return be


def test_adapters_list_fields():
    ads = ember.wgpu.adapters()
    assert ads and set(ads[0]) == {"name", "vendor", "backend_type", "device_type"}
    assert ember.wgpu.device_count() == len(ads)


def test_missing_adapter_index_is_a_clear_error():
    with pytest.raises(ember.BackendUnavailable if hasattr(ember, "BackendUnavailable") else RuntimeError,
                       match="adapter"):
        ember.device(f"wgpu:{ember.wgpu.device_count() + 5}")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64",
                                   "bool", "float64"])
def test_round_trip_and_add(dtype):
    d = getattr(ember, dtype)
    a = np.array([[0, 1, 2], [3, 4, 5]]).astype(d.np)
    x = ember.tensor(a, device="wgpu")
    assert x.dtype is d and x.device.type == "wgpu"
    np.testing.assert_array_equal(x.cpu().numpy(), a)
    if dtype != "bool":
        want = (ember.tensor(a) + ember.tensor(a)).numpy()
        np.testing.assert_array_equal((x + x).cpu().numpy(), want)


def test_narrow_ints_wrap_and_half_rounds():
    x = ember.tensor(np.array([100, 120], np.int8), device="wgpu")
    np.testing.assert_array_equal((x + x).cpu().numpy(), np.array([100, 120], np.int8) * 2)
    h = ember.tensor(np.array([1.0, 60000.0], np.float16), device="wgpu")
    got = (h * 3).cpu().numpy()
    np.testing.assert_array_equal(got, np.array([3.0, np.inf], np.float16))
    third = (ember.ones(1, device="wgpu", dtype=ember.float16) / 3).cpu().numpy()
    assert third[0] == np.float16(1) / np.float16(3)


def test_views_share_storage_and_write_through():
    x = ember.zeros(3, 4, device="wgpu:unfused")  # the plain backend: its handles are WH
    v = x.t()[1:, ::2]
    be = _inner(x)
    assert be.storage(v._h) is be.storage(x._h)
    assert v.stride() == (1, 8) and v.storage_offset() == 1
    v.fill_(7.0)
    want = np.zeros((3, 4), np.float32)
    want.T[1:, ::2] = 7
    np.testing.assert_array_equal(x.cpu().numpy(), want)


def test_write_into_expanded_view_refused():
    x = ember.zeros(1, 3, device="wgpu").expand(2, 3)
    with pytest.raises(RuntimeError):
        x.add_(1)


def test_float64_runs_on_host_and_is_counted():
    before = ember.wgpu.host_ops().get("exp", 0)
    x = ember.tensor(np.array([0.5, 1.5]), device="wgpu")
    np.testing.assert_allclose(x.exp().cpu().numpy(), np.exp([0.5, 1.5]), rtol=1e-15)
    assert ember.wgpu.host_ops().get("exp", 0) == before + 1


def test_int64_past_32_bits_is_kept_whole_on_the_host_path():
    a = np.array([2**40, -3])
    x = ember.tensor(a, device="wgpu")
    np.testing.assert_array_equal((x * 2 + 1).cpu().numpy(), a * 2 + 1)
    small = ember.tensor(np.array([1, 2]), device="wgpu")  # 32-bit values: computed by kernels
    np.testing.assert_array_equal((small + x).cpu().numpy(), a + [1, 2])
    with pytest.raises(OverflowError, match="32-bit"):
        small.copy_(x)  # a 32-bit storage cannot take the wide values


def test_hot_ops_run_on_gpu():
    """Training's hot ops never take the host path."""
    before = dict(ember.wgpu.host_ops())
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((2, 3, 6, 6)).astype(np.float32), device="wgpu")
    w = ember.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), device="wgpu", requires_grad=True)
    lin = ember.tensor(rng.standard_normal((4 * 16, 5)).astype(np.float32), device="wgpu", requires_grad=True)
    y = ember.nn.functional.conv2d(x, w).relu()
    logits = y.reshape(2, -1) @ lin
    p = logits.softmax(-1)
    loss = (p * p).sum() + logits.mean() + ember.nn.functional.layer_norm(logits, (5,)).abs().sum()
    loss.backward()
    assert w.grad is not None and lin.grad.shape == (64, 5)
    new = {k: v - before.get(k, 0) for k, v in ember.wgpu.host_ops().items() if v != before.get(k, 0)}
    assert set(new) <= {"conv_transpose"}, new  # conv's input gradient is the one host op left here


def test_matches_torch_on_a_small_net():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 7)).astype(np.float32)
    b = rng.standard_normal((7, 5)).astype(np.float32)
    x, w = ember.tensor(a, device="wgpu"), ember.tensor(b, device="wgpu", requires_grad=True)
    tx, tw = torch.tensor(a), torch.tensor(b, requires_grad=True)
    out = (x @ w).tanh().log_softmax(-1).sum()
    tout = (tx @ tw).tanh().log_softmax(-1).sum()
    out.backward()
    tout.backward()
    np.testing.assert_allclose(out.item(), tout.item(), rtol=1e-5)
    np.testing.assert_allclose(w.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_pipelines_cached_by_source_and_memory_reused():
    x = ember.ones(64, device="wgpu")
    rt = _inner(x).rt
    (x * 2.0).sum().item()
    compiles = rt.compiles
    for k in range(5):
        (x * float(k)).sum().item()  # new scalar values: same shaders
    assert rt.compiles == compiles
    base = rt.allocated
    for _ in range(20):
        (x + 1.0).exp().sum().item()
    assert rt.allocated <= base + 4096


def test_rand_is_the_cpu_stream_bit_for_bit():
    ember.manual_seed(1234)
    a = ember.rand(3, 5, device="wgpu").cpu().numpy()
    ember.manual_seed(1234)
    b = ember.rand(3, 5).numpy()
    np.testing.assert_array_equal(a, b)
    ember.manual_seed(7)
    c = ember.randn(9, device="wgpu").cpu().numpy()
    ember.manual_seed(7)
    np.testing.assert_allclose(c, ember.randn(9).numpy(), rtol=1e-5, atol=1e-6)


def test_long_reductions_split_and_keep_first_index_rules():
    a = np.zeros((2, 30000), np.float32)
    a[:, 25000] = 2.0
    a[1, 21000] = np.nan
    x = ember.tensor(a, device="wgpu")
    np.testing.assert_array_equal(x.argmax(1).cpu().numpy(), [25000, 21000])
    np.testing.assert_array_equal(x.argmin(1).cpu().numpy(), [0, 21000])
    np.testing.assert_allclose(x.sum(1).cpu().numpy(), [2.0, np.nan])
    np.testing.assert_array_equal(x.amax(1).cpu().numpy(), [2.0, np.nan])


def test_conv_and_pool_gradients_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    x, wt = ember.tensor(a, device="wgpu", requires_grad=True), ember.tensor(w, device="wgpu", requires_grad=True)
    tx, tw = torch.tensor(a, requires_grad=True), torch.tensor(w, requires_grad=True)
    F = ember.nn.functional
    y = F.max_pool2d(F.conv2d(x, wt, stride=1, padding=1, groups=2), 2)
    ty = torch.nn.functional.max_pool2d(torch.nn.functional.conv2d(tx, tw, stride=1, padding=1, groups=2), 2)
    np.testing.assert_allclose(y.detach().cpu().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    y.square().sum().backward()
    ty.square().sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(wt.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_embedding_and_cross_entropy_backward_on_gpu():
    torch = pytest.importorskip("torch")
    before = dict(ember.wgpu.host_ops())
    rng = np.random.default_rng(3)
    table = rng.standard_normal((10, 4)).astype(np.float32)
    ids = np.array([[1, 3, 3], [0, 9, 1]])
    target = np.array([2, 0])
    e = ember.tensor(table, device="wgpu", requires_grad=True)
    te = torch.tensor(table, requires_grad=True)
    F = ember.nn.functional
    loss = F.cross_entropy(F.embedding(ember.tensor(ids, device="wgpu"), e).sum(1), ember.tensor(target, device="wgpu"))
    tloss = torch.nn.functional.cross_entropy(torch.nn.functional.embedding(torch.tensor(ids), te).sum(1),
                                              torch.tensor(target))
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    np.testing.assert_allclose(e.grad.cpu().numpy(), te.grad.numpy(), rtol=1e-5, atol=1e-6)
    new = {k for k, v in ember.wgpu.host_ops().items() if v != before.get(k, 0)}
    assert not new, new
