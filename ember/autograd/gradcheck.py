"""Numerical gradient checks (finite differences in float64) against autodiff's gradients."""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ._api import grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree."""


def _numerical_jacobian(fn, inputs, k: int, eps: float):
    x = inputs[k]
    flat = x.detach().reshape(-1)
    n = flat.numel()
    cols = []
    for i in range(n):
        orig = flat[i].item()
        flat[i] = orig + eps
        plus = [o.detach().reshape(-1).numpy().astype(np.float64).copy() for o in _outs(fn(*inputs))]
        flat[i] = orig - eps
        minus = [o.detach().reshape(-1).numpy().astype(np.float64).copy() for o in _outs(fn(*inputs))]
        flat[i] = orig
        cols.append(np.concatenate([(p - m) / (2 * eps) for p, m in zip(plus, minus)]))
    return np.stack(cols, axis=1) if cols else np.zeros((0, 0))


def _outs(out):
    return (out,) if isinstance(out, Tensor) else tuple(o for o in out if isinstance(o, Tensor))


def _analytical_jacobian(fn, inputs, k: int):
    outs = _outs(fn(*inputs))
    rows = []
    for o in outs:
        flat = o.reshape(-1)
        for j in range(flat.numel()):
            if not flat.requires_grad:  # an output that does not depend on any input: a zero row
                rows.append(np.zeros(inputs[k].numel()))
                continue
            (g,) = grad(flat[j], (inputs[k],), retain_graph=True, allow_unused=True)
            rows.append(np.zeros(inputs[k].numel()) if g is None else g.detach().reshape(-1).numpy().astype(np.float64))
    return np.stack(rows, axis=0) if rows else np.zeros((0, inputs[k].numel()))


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, **_ignored) -> bool:
    """Compare autodiff's Jacobian of ``func`` with central differences, for every float64 input
    that requires grad. Returns True, or raises GradcheckError naming the input and the mismatch."""
    ins = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    for k, x in enumerate(ins):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        if x.dtype.name != "float64":
            raise GradcheckError(f"gradcheck: input {k} is {x.dtype}; use float64 inputs for finite differences")
        num = _numerical_jacobian(func, ins, k, eps)
        ana = _analytical_jacobian(func, ins, k)
        if num.shape != ana.shape or not np.allclose(ana, num, rtol=rtol, atol=atol):
            if not raise_exception:
                return False
            diff = np.abs(ana - num).max() if num.shape == ana.shape else float("nan")
            raise GradcheckError(f"Jacobian mismatch for output 0 with respect to input {k}:\n"
                                 f"numerical:{num}\nanalytical:{ana}\nmax abs difference {diff}")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True, **_ignored) -> bool:
    """gradcheck of the function x -> vjp(func, x, v) with a fixed random cotangent v: checks
    second-order gradients."""
    from .._creation import tensor
    ins = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    outs = _outs(func(*ins))
    rng = np.random.default_rng(0)
    if grad_outputs is None:
        vs = tuple(tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype) for o in outs)
    else:
        vs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    diff_idx = [i for i, x in enumerate(ins) if isinstance(x, Tensor) and x.requires_grad]

    def first_grads(*xs):
        o = _outs(func(*xs))
        gs = grad(o, tuple(xs[i] for i in diff_idx), grad_outputs=vs, create_graph=True, allow_unused=True)
        from .._creation import zeros_like
        return tuple(zeros_like(xs[i]) if g is None else g for g, i in zip(gs, diff_idx))

    return gradcheck(first_grads, ins, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)
