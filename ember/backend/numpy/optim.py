"""Adam/AdamW's update of one parameter as array operations (``xp``: numpy or CuPy), in place.

These are ``ember.optim.Adam``'s op-by-op formulas in their order, for the backends whose ``adam_step_``
op runs one kernel: the compiled CPU backend and CUDA call this for what their kernels don't take
(other dtypes, strided arrays), so every path computes the same numbers. The numpy backend itself has
no ``adam_step_``: there the optimizer's own loop is the reference.

>>> import numpy as np
>>> p, g, m, v = np.ones(3, np.float32), np.full(3, 0.5, np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32)
>>> _ = adam_arrays(np, p, g, m, v, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, decoupled=False,
...                 bc1=0.1, sqrt_bc2=0.001 ** 0.5)
>>> round(float(p[0]), 4)
0.9
"""

from __future__ import annotations


def check_operands(p, g, m, v) -> None:
    """``adam_step_``'s inputs must share shape and dtype (the optimizer checks before it calls the op)."""
    if not (p.shape == g.shape == m.shape == v.shape and p.dtype == g.dtype == m.dtype == v.dtype):
        raise ValueError(f"adam_step_: param, grad and moments must share shape and dtype, got "
                         f"{[(a.shape, str(a.dtype)) for a in (p, g, m, v)]}")


def adam_arrays(xp, p, g, m, v, *, lr, beta1, beta2, eps, weight_decay, decoupled, bc1, sqrt_bc2):
    """Update ``p``, ``m`` and ``v`` in place; ``bc1`` (1 - beta1^t) and ``sqrt_bc2`` (sqrt(1 - beta2^t)) are
    Python floats, or 0-d arrays when the step count lives on the device. Returns ``p``."""
    t = p.dtype.type

    def num(x):  # a Python float or a 0-d array of the count's math, in p's dtype
        return t(x) if isinstance(x, float) else x.astype(p.dtype)
    if weight_decay != 0:
        if decoupled:
            p *= t(1 - lr * weight_decay)
        else:
            g = g + p * t(weight_decay)
    w = 1 - beta1  # lerp(m, g, w) as the frontend computes it
    m[...] = m + t(w) * (g - m) if abs(w) < 0.5 else g - (g - m) * t(1 - w)
    v *= t(beta2)
    v += g * g * t(1 - beta2)
    denom = xp.sqrt(v) / num(sqrt_bc2) + t(eps)
    p -= num(lr / bc1) * (m / denom)
    return p


__all__ = ["adam_arrays", "check_operands"]
