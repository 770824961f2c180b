"""Autograd API semantics against PyTorch: leaves, accumulation, hooks, retain_grad, grad modes,
higher-order gradients, custom Functions, functional API, and the safety checks."""

from __future__ import annotations

import gc
import math
import weakref

import numpy as np
import pytest

import ember
from ember.autograd import Function

torch = pytest.importorskip("torch")


def close(a, b, **kw):
    a = a.detach().numpy() if isinstance(a, ember.Tensor) else a
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else b
    np.testing.assert_allclose(a, b, rtol=kw.get("rtol", 1e-6), atol=kw.get("atol", 1e-7))


def pair(data, requires_grad=True, dtype="float64"):
    arr = np.asarray(data, dtype=dtype)
    return (ember.tensor(arr, requires_grad=requires_grad), torch.tensor(arr, requires_grad=requires_grad))


def test_leaf_flags_and_grad_fn():
    x, tx = pair([1.0, 2.0])
    y, ty = x * 2, tx * 2
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert not y.is_leaf and y.requires_grad
    assert y.grad_fn.name() == ty.grad_fn.name() == "MulBackward0"
    z = ember.tensor([1.0])
    assert z.is_leaf and not z.requires_grad and (z * 2).grad_fn is None


def test_backward_accumulates_like_torch():
    x, tx = pair([[1.0, -2.0], [3.0, 0.5]])
    for _ in range(2):
        (x.exp() * x).sum().backward()
        (tx.exp() * tx).sum().backward()
    close(x.grad, tx.grad)


def test_non_scalar_backward_needs_gradient():
    x, _ = pair([1.0, 2.0])
    with pytest.raises(RuntimeError, match="implicitly created only for scalar"):
        (x * 2).backward()
    (x * 2).backward(ember.tensor([1.0, 3.0], dtype=ember.float64))
    close(x.grad, np.array([2.0, 6.0]))


def test_integer_tensor_cannot_require_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        ember.tensor([1, 2]).requires_grad_()


def test_retain_grad_and_hooks():
    x, tx = pair([1.0, 2.0, 3.0])
    y, ty = x * x, tx * tx
    y.retain_grad()
    ty.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    h = x.register_hook(lambda g: g * 10)
    y.sum().backward()
    ty.register_hook(lambda g: None)
    tx.register_hook(lambda g: g * 10)
    ty.sum().backward()
    close(y.grad, ty.grad)
    close(x.grad, tx.grad)
    assert len(seen) == 1
    h.remove()
    x.grad = None
    (x * 1).sum().backward()
    close(x.grad, np.ones(3))


def test_backward_twice_without_retain_graph_raises():
    x, _ = pair([1.0, 2.0])
    y = (x.exp() * 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_inplace_on_saved_tensor_raises():
    x, _ = pair([1.0, 2.0])
    a = x * 1
    y = a.exp()          # saves its output
    y.mul_(2)            # ... which is then modified in place
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_on_leaf_requiring_grad_raises():
    x, _ = pair([1.0, 2.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with ember.no_grad():
        x.add_(1)       # allowed without recording (how optimizers update parameters)
    close(x, np.array([2.0, 3.0]))


def test_inplace_ops_on_nonleaf_are_differentiated():
    x, tx = pair([0.5, -1.0, 2.0])
    y, ty = x * 2, tx * 2
    y.add_(x)
    ty.add_(tx)
    y.mul_(x)
    ty.mul_(tx)
    y.sum().backward()
    ty.sum().backward()
    close(x.grad, tx.grad)


def test_setitem_with_grad_value():
    w, tw = pair([1.0, 2.0])
    z, tz = ember.zeros(3, dtype=ember.float64), torch.zeros(3, dtype=torch.float64)
    z[1:] = w * 3
    tz[1:] = tw * 3
    (z * z).sum().backward()
    (tz * tz).sum().backward()
    close(w.grad, tw.grad)


def test_no_grad_enable_grad_set_grad_enabled_inference_mode():
    x, _ = pair([1.0])
    with ember.no_grad():
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()
    with ember.inference_mode():
        assert not (x * 2).requires_grad and ember.is_inference_mode_enabled()

    @ember.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad


def test_detach_shares_memory_and_cuts_graph():
    x, _ = pair([1.0, 2.0])
    d = x.detach()
    assert not d.requires_grad
    with ember.no_grad():
        x.mul_(3)
    close(d, np.array([3.0, 6.0]))


def test_higher_order_gradients():
    x, tx = pair([0.3, -1.2, 2.0])
    y, ty = (x ** 3 * x.sin()).sum(), (tx ** 3 * tx.sin()).sum()
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    (tg,) = torch.autograd.grad(ty, tx, create_graph=True)
    close(g, tg)
    (gg,) = ember.autograd.grad(g.sum(), x)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    close(gg, tgg)


def test_gradient_penalty_like_wgan():
    w, tw = pair(np.random.default_rng(0).standard_normal((3, 2)))
    x, tx = pair(np.random.default_rng(1).standard_normal((4, 3)))
    out, tout = (x @ w).tanh().sum(), (tx @ tw).tanh().sum()
    (gx,) = ember.autograd.grad(out, x, create_graph=True)
    (tgx,) = torch.autograd.grad(tout, tx, create_graph=True)
    ((gx.norm(dim=1) - 1) ** 2).mean().backward()
    ((tgx.norm(dim=1) - 1) ** 2).mean().backward()
    close(w.grad, tw.grad)


def test_hessian_vector_product_and_functional():
    def f(lib, v):
        return (v ** 2 * v.exp()).sum()
    x, tx = pair([0.1, 0.2, -0.3], requires_grad=False)
    v, tv = pair([1.0, -1.0, 0.5], requires_grad=False)
    close(ember.autograd.functional.hvp(lambda a: f(ember, a), x, v)[1],
          torch.autograd.functional.hvp(lambda a: f(torch, a), tx, tv)[1])
    close(ember.autograd.functional.hessian(lambda a: f(ember, a), x),
          torch.autograd.functional.hessian(lambda a: f(torch, a), tx))
    close(ember.autograd.functional.jacobian(lambda a: a.sin() * 2, x),
          torch.autograd.functional.jacobian(lambda a: a.sin() * 2, tx))
    close(ember.autograd.functional.jvp(lambda a: a.exp(), x, v)[1],
          torch.autograd.functional.jvp(lambda a: a.exp(), tx, tv)[1])
    close(ember.autograd.functional.vjp(lambda a: a.exp(), x, v)[1],
          torch.autograd.functional.vjp(lambda a: a.exp(), tx, tv)[1])


class MyExp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


def test_custom_function():
    x, tx = pair([0.5, 1.5])
    y = MyExp.apply(x)
    assert y.grad_fn.name() == "MyExpBackward"
    (y * x).sum().backward()
    (tx.exp() * tx).sum().backward()
    close(x.grad, tx.grad)


def test_checkpoint_matches_and_saves_memory():
    from ember.backend.autodiff.graph import Var

    def block(h):
        for _ in range(6):
            h = (h * 1.5).tanh()
        return h

    def saved_bytes(t):
        total, seen, stack = 0, set(), [t.grad_fn]
        while stack:
            n = stack.pop()
            if n is None or id(n) in seen:
                continue
            seen.add(id(n))
            for entry in getattr(n, "saved", None) or ():
                if entry[0] in ("v", "o"):
                    obj = entry[1].value if isinstance(entry[1], Var) else entry[1]
                    total += math.prod(obj.shape) * obj.dtype.itemsize  # any backend's handle
            stack.extend(e[0] for e in getattr(n, "edges", ()) if e is not None)
        return total

    x1, _ = pair(np.linspace(-1, 1, 1000))
    x2, _ = pair(np.linspace(-1, 1, 1000))
    plain = block(x1).sum()
    ckpt = ember.utils.checkpoint.checkpoint(block, x2).sum()
    assert saved_bytes(ckpt) < saved_bytes(plain) / 4
    plain.backward()
    ckpt.backward()
    close(x1.grad, x2.grad)


def test_anomaly_mode_names_the_op():
    x, _ = pair([-1.0, 4.0])
    with ember.autograd.detect_anomaly():
        y = x.sqrt()            # sqrt(-1) = nan, and its gradient is nan
        with pytest.raises(RuntimeError, match="SqrtBackward0"):
            y.sum().backward()


def test_graph_is_freed_after_backward():
    x, _ = pair(np.ones(100))
    y = (x * 2).exp()
    node = weakref.ref(y.grad_fn)
    y.sum().backward()
    del y
    gc.collect()
    assert node() is None


def test_training_loop_memory_is_flat():
    from ember.backend.autodiff.graph import Node
    w = ember.tensor(np.random.default_rng(0).standard_normal((8, 8)), requires_grad=True)
    x = ember.tensor(np.random.default_rng(1).standard_normal((4, 8)))

    def live_nodes():
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, Node))

    counts = []
    for step in range(10000):
        loss = ((x @ w).tanh() ** 2).mean()
        loss.backward()
        with ember.no_grad():
            w -= 0.01 * w.grad
        w.grad = None
        if step in (100, 9999):
            counts.append(live_nodes())
    assert counts[1] <= counts[0]


def test_gradcheck_and_gradgradcheck():
    x = ember.tensor(np.random.default_rng(0).standard_normal((3, 2)), dtype=ember.float64, requires_grad=True)
    w = ember.tensor(np.random.default_rng(1).standard_normal((2, 2)), dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: (a @ b).sigmoid(), (x, w))
    assert ember.autograd.gradgradcheck(lambda a, b: (a @ b).tanh(), (x, w))


def test_gradient_of_unused_input():
    x, _ = pair([1.0])
    y, _ = pair([2.0])
    with pytest.raises(RuntimeError, match="not have been used"):
        ember.autograd.grad((x * 2).sum(), [x, y])
    gx, gy = ember.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)
    assert gy is None
    close(gx, np.array([2.0]))


def test_leaf_gradients_never_alias_each_other_or_the_callers_gradient():
    """A leaf's .grad may keep a whole-buffer view that nothing else holds (no copy per parameter per
    step), but never memory that the caller or another leaf can reach."""
    w1 = ember.ones(4, requires_grad=True)
    w2 = ember.ones(4, requires_grad=True)
    # the same gradient reaches both leaves through reshapes
    (w1.reshape(2, 2) + w2.reshape(2, 2)).sum().backward()
    w1.grad.add_(1.0)
    np.testing.assert_array_equal(w2.grad.numpy(), np.ones(4))
    np.testing.assert_array_equal(w1.grad.numpy(), np.full(4, 2.0))
    # the caller's gradient, reshaped, must be copied
    w = ember.zeros(6, requires_grad=True)
    g = ember.arange(6.0).reshape(2, 3)
    w.reshape(2, 3).backward(g)
    w.grad.mul_(10.0)
    np.testing.assert_array_equal(g.numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(w.grad.numpy(), np.arange(6.0) * 10)
    # a gradient that another tensor still holds (retain_grad on the reshaped view)
    w = ember.ones(4, requires_grad=True)
    v = w.reshape(2, 2)
    v.retain_grad()
    (v * 3).sum().backward()
    w.grad.add_(1.0)
    np.testing.assert_array_equal(v.grad.numpy(), np.full((2, 2), 3.0))
    np.testing.assert_array_equal(w.grad.numpy(), np.full(4, 4.0))


def test_batch_norm_parameter_gradients_take_no_copy():
    """The (C,)-parameter gradients of batch norm arrive reshaped from (C, 1, 1): stored without a copy
    op on a stack of plain arrays (the numpy one), and equal to PyTorch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
    bn = ember.nn.BatchNorm2d(3).to("cpu:numpy")
    be = ember.device("cpu:numpy").backend.inner
    seen = []
    orig = be.run
    be.run = lambda op, args, kw: (seen.append(op), orig(op, args, kw))[1]
    try:
        (bn(ember.tensor(x, device="cpu:numpy")) ** 2).sum().backward()
    finally:
        del be.run
    assert "copy" not in seen
    tb = torch.nn.BatchNorm2d(3)
    (tb(torch.tensor(x)) ** 2).sum().backward()
    np.testing.assert_allclose(bn.weight.grad.numpy(), tb.weight.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn.bias.grad.numpy(), tb.bias.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_gradients_take_their_inputs_dtype_like_torch():
    """A float32 gradient reaching a bfloat16 branch (x_f32 + h_bf16) flows on in bfloat16, as PyTorch's
    engine casts it: the hook on h and y.grad see bfloat16, and the values match torch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    xv, yv = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    seen, seen_t = [], []
    x = ember.tensor(xv, requires_grad=True)
    y = ember.tensor(yv, dtype=ember.bfloat16, requires_grad=True)
    h = y * 2
    h.register_hook(lambda g: seen.append(g.dtype))
    ((x + h) ** 2).sum().backward()
    xt = torch.tensor(xv, requires_grad=True)
    yt = torch.tensor(yv, dtype=torch.bfloat16, requires_grad=True)
    ht = yt * 2
    ht.register_hook(lambda g: seen_t.append(g.dtype))
    ((xt + ht) ** 2).sum().backward()
    assert seen == [ember.bfloat16] and seen_t == [torch.bfloat16]
    assert y.grad.dtype == ember.bfloat16 and x.grad.dtype == ember.float32
    np.testing.assert_allclose(y.grad.float().numpy(), yt.grad.float().numpy(), rtol=1e-2)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


def test_shared_weight_gradient_of_a_batched_product_matches_torch():
    """x (B, M, K) @ w (K, N): w's gradient is one product over all B*M rows (not B products summed)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    xv, wv = rng.standard_normal((2, 3, 5, 4)).astype(np.float32), rng.standard_normal((4, 6)).astype(np.float32)
    gv = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    x, w = ember.tensor(xv.transpose(0, 2, 1, 3).copy()).transpose(1, 2).requires_grad_(), \
        ember.tensor(wv, requires_grad=True)
    (x @ w).backward(ember.tensor(gv))
    xt, wt = torch.tensor(xv, requires_grad=True), torch.tensor(wv, requires_grad=True)
    (xt @ wt).backward(torch.tensor(gv))
    assert w.grad.shape == (4, 6)
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
