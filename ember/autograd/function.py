"""ember.autograd.Function: custom differentiable operations with a hand-written backward.

    class Exp(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)
"""

from __future__ import annotations

from .._tensor import Tensor, wrap
from .._tensor_autograd import autodiff_backend
from .grad_mode import no_grad

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """The ``ctx`` passed to forward and backward."""

    def __init__(self):
        self.saved_tensors: tuple = ()
        self.needs_input_grad: tuple = ()
        self.materialize_grads = True
        self._non_differentiable: set[int] = set()

    def save_for_backward(self, *tensors) -> None:
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save Tensors or None, got {type(t).__name__}")
        self.saved_tensors = tuple(tensors)

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors) -> None:  # in-place outputs need no special handling here
        pass




class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call ``apply``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must implement forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("a Function subclass must implement backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with no_grad():
            result = cls.forward(ctx, *args, **kwargs)
        is_tuple = isinstance(result, tuple)
        outs = result if is_tuple else (result,)
        if not tensor_pos or not any(ctx.needs_input_grad):
            return result
        b = autodiff_backend(args[tensor_pos[0]])
        if b is None:
            return result
        out_tensors = [(k, o) for k, o in enumerate(outs) if isinstance(o, Tensor)]
        nondiff = tuple(j for j, (k, o) in enumerate(out_tensors) if id(o) in ctx._non_differentiable)
        inputs = tuple(args[i]._h for i in tensor_pos)
        meta = [(o._shape, o._dtype, o._device) for _, o in out_tensors]

        def backward_fn(grad_handles):
            grads = []
            for gh, (shape, dtype, device) in zip(grad_handles, meta):
                if gh is None and ctx.materialize_grads:
                    from .._creation import zeros
                    grads.append(zeros(shape, dtype=dtype, device=device))
                else:
                    grads.append(None if gh is None else wrap(gh, shape, dtype, device))
            res = cls.backward(ctx, *grads)
            if not isinstance(res, tuple):
                res = (res,)
            if len(res) != len(args):
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients "
                                   f"(expected {len(args)}, got {len(res)})")
            out = []
            for i in tensor_pos:
                g = res[i]
                if g is not None and not isinstance(g, Tensor):
                    raise TypeError(f"{cls.__name__}.backward must return Tensors or None, got {type(g).__name__}")
                if g is not None and g._shape != args[i]._shape:
                    raise RuntimeError(f"Function {cls.__name__}Backward returned an invalid gradient at index {i} - "
                                       f"got {list(g._shape)} but expected shape compatible with "
                                       f"{list(args[i]._shape)}")
                out.append(None if g is None else g._h)
            return tuple(out)

        handles = b.custom(cls.__name__, inputs, tuple(o._h for _, o in out_tensors), backward_fn, nondiff)
        new_outs = list(outs)
        for (k, o), h in zip(out_tensors, handles):
            new_outs[k] = wrap(h, o._shape, o._dtype, o._device)
        return tuple(new_outs) if is_tuple else new_outs[0]


def once_differentiable(fn):
    """Mark a backward as not itself differentiable (runs it with grad disabled)."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, *grads):
        with no_grad():
            return fn(ctx, *grads)
    return wrapper
