"""Higher-level derivatives: jacobian, hessian, vjp, jvp, hvp, vhp (torch.autograd.functional).

Built on reverse mode: a Jacobian is one vector-Jacobian product per output element, and
forward-mode products (jvp, hvp) use the double-vjp trick (differentiate a vjp with respect to its
cotangent), so they work on every backend that has Autodiff.
"""

from __future__ import annotations

from .._tensor import Tensor
from ._api import grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _prepare(inputs, create_graph: bool):
    ins = _as_tuple(inputs)
    for i, t in enumerate(ins):
        if not isinstance(t, Tensor):
            raise TypeError(f"inputs[{i}] must be a Tensor, got {type(t).__name__}")
    return tuple(t.detach().requires_grad_(True) if not (create_graph and t.requires_grad) else t for t in ins)


def _unwrap(out, was_tensor: bool):
    return out[0] if was_tensor else out


def _zeros_for(grads, ins):
    from .._creation import zeros_like
    return tuple(zeros_like(x) if g is None else g for g, x in zip(grads, ins))


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), vᵀ · J): the vector-Jacobian product."""
    single = isinstance(inputs, Tensor)
    ins = _prepare(inputs, create_graph)
    outs = func(*ins)
    outs_t = _as_tuple(outs)
    vs = None if v is None else _as_tuple(v)
    grads = grad(outs_t, ins, grad_outputs=vs, create_graph=create_graph, allow_unused=True, retain_graph=True)
    grads = _zeros_for(grads, ins)
    out_val = outs if create_graph else (outs.detach() if isinstance(outs, Tensor) else tuple(o.detach() for o in outs))
    return out_val, _unwrap(grads, single)


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), J · v): the Jacobian-vector product, by differentiating a vjp."""
    from .._creation import ones_like, zeros_like
    ins = _prepare(inputs, True)
    outs = func(*ins)
    outs_t = _as_tuple(outs)
    vs = tuple(ones_like(x) for x in ins) if v is None else _as_tuple(v)
    # u is a dummy cotangent; vjp(u) is linear in u, and its gradient with respect to u along v is J v
    us = tuple(zeros_like(o).requires_grad_(True) for o in outs_t)
    g = grad(outs_t, ins, grad_outputs=us, create_graph=True, allow_unused=True, retain_graph=True)
    pairs = [(gi, vi) for gi, vi in zip(g, vs) if gi is not None]
    if not pairs:
        jv = tuple(zeros_like(o) for o in outs_t)
    else:
        jv = grad([p[0] for p in pairs], us, grad_outputs=[p[1] for p in pairs], create_graph=create_graph,
                  allow_unused=True, retain_graph=True)
        jv = _zeros_for(jv, outs_t)
    out_val = outs if create_graph else (outs.detach() if isinstance(outs, Tensor) else tuple(o.detach() for o in outs))
    return out_val, (jv[0] if isinstance(outs, Tensor) else jv)


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """The Jacobian of func at inputs: shape out.shape + in.shape (tuples of them for tuple in/out)."""
    from .._movement import stack
    single_in = isinstance(inputs, Tensor)
    ins = _prepare(inputs, create_graph)
    outs = func(*ins)
    single_out = isinstance(outs, Tensor)
    outs_t = _as_tuple(outs)
    result = []
    for o in outs_t:
        flat = o.reshape(-1)
        rows = [[] for _ in ins]
        for k in range(flat.shape[0]):
            gs = grad(flat[k], ins, retain_graph=True, create_graph=create_graph, allow_unused=True)
            for j, gk in enumerate(_zeros_for(gs, ins)):
                rows[j].append(gk)
        per_in = []
        for j, x in enumerate(ins):
            if rows[j]:
                per_in.append(stack(rows[j]).reshape(tuple(o.shape) + tuple(x.shape)))
            else:
                from .._creation import zeros
                per_in.append(zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype, device=x.device))
        result.append(per_in[0] if single_in else tuple(per_in))
    return result[0] if single_out else tuple(result)


def hessian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar function: the Jacobian of its gradient."""
    single = isinstance(inputs, Tensor)

    def gradient(*xs):
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("hessian: the function must return a single-element Tensor")
        gs = grad(out, xs, create_graph=True, allow_unused=True)
        gs = _zeros_for(gs, xs)
        return gs[0] if single else gs

    return jacobian(gradient, inputs, create_graph=create_graph)


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), vᵀ · H)."""
    single = isinstance(inputs, Tensor)
    ins = _prepare(inputs, True)
    out = func(*ins)
    gs = _zeros_for(grad(out, ins, create_graph=True, allow_unused=True), ins)
    vs = _as_tuple(v) if v is not None else None
    if vs is None:
        from .._creation import ones_like
        vs = tuple(ones_like(x) for x in ins)
    hv = grad(gs, ins, grad_outputs=vs, create_graph=create_graph, allow_unused=True)
    hv = _zeros_for(hv, ins)
    return (out if create_graph else out.detach()), _unwrap(hv, single)


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), H · v); equal to vhp because the Hessian of a scalar function is symmetric."""
    return vhp(func, inputs, v, create_graph, strict)
