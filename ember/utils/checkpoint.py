"""Activation checkpointing: run a block without keeping its intermediate values, and recompute
them during backward. Trades compute for memory.

    y = ember.utils.checkpoint(block, x)      # block's activations are not stored

Gradients reach the block's inputs and every parameter the block uses (they accumulate into
``.grad`` during the recomputation), as with PyTorch's reentrant checkpoint.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..autograd import Function, backward, enable_grad

__all__ = ["checkpoint", "checkpoint_sequential"]


def _rng_state():
    try:
        from .._random import get_rng_state
        return get_rng_state()
    except ImportError:  # pragma: no cover
        return None


def _set_rng_state(state) -> None:
    if state is not None:
        from .._random import set_rng_state
        set_rng_state(state)


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx, fn, preserve_rng_state, *args):
        ctx.fn = fn
        ctx.rng = _rng_state() if preserve_rng_state else None
        ctx.inputs = args
        return fn(*args)

    @staticmethod
    def backward(ctx, *grads):
        after = _rng_state() if ctx.rng is not None else None
        _set_rng_state(ctx.rng)
        detached = tuple(a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a
                         for a in ctx.inputs)
        with enable_grad():
            outs = ctx.fn(*detached)
        _set_rng_state(after)
        outs = (outs,) if isinstance(outs, Tensor) else tuple(outs)
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            backward([p[0] for p in pairs], [p[1] for p in pairs])
        return (None, None) + tuple(d.grad if isinstance(d, Tensor) and d.requires_grad else None for d in detached)


def checkpoint(function, *args, use_reentrant: bool | None = None, preserve_rng_state: bool = True, **kwargs):
    """Run ``function(*args)`` without saving its activations; recompute them in backward."""
    if kwargs:
        raise ValueError(f"checkpoint: unexpected keyword arguments {sorted(kwargs)}")
    return _Checkpoint.apply(function, preserve_rng_state, *args)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          preserve_rng_state: bool = True):
    """Checkpoint a sequence of modules/functions in ``segments`` chunks."""
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if segments < 1:
        raise ValueError("checkpoint_sequential: segments must be at least 1")
    size = max(1, -(-len(functions) // segments))

    def run(chunk):
        def f(x):
            for fn in chunk:
                x = fn(x)
            return x
        return f

    x = input
    for start in range(0, len(functions), size):
        chunk = functions[start:start + size]
        x = checkpoint(run(chunk), x, preserve_rng_state=preserve_rng_state) if start + size < len(functions) \
            else run(chunk)(x)
    return x
