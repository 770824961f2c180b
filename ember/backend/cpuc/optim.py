"""CpuC's ``adam_step_``: ``ember.optim.Adam``/``AdamW``'s update of a parameter as one C pass.

The optimizer's loop runs about ten array ops a parameter, each reading and writing whole arrays; the
kernel (_c_optim.py) reads the parameter, gradient and moments once and writes three of them once, with
the loop's arithmetic in the loop's order (the same bits). Float32/float64 arrays that are contiguous run
the kernel, over OpenMP threads when large; the rest run the same formulas as array ops.
"""

from __future__ import annotations

import math

import numpy as np

from ..numpy.optim import adam_arrays, check_operands
from ._lib import STREAM_MIN, call, fbits, par, ptr, suffix


def _adam_step_(p, g, m, v, *step_t, lr, beta1, beta2, eps, weight_decay, decoupled, step):
    check_operands(p, g, m, v)
    if step_t:  # the count as a tensor (an ember.compile capture): read it now, as each replay does
        step = float(np.asarray(step_t[0]).reshape(-1)[0])
    bc1 = 1.0 - beta1 ** step
    sqrt_bc2 = math.sqrt(1.0 - beta2 ** step)
    s = suffix(p.dtype)
    if s is None or not all(a.flags.c_contiguous for a in (p, g, m, v)):
        return adam_arrays(np, p, g, m, v, lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                           decoupled=decoupled, bc1=bc1, sqrt_bc2=sqrt_bc2)
    mode = 0 if weight_decay == 0 else 1 if decoupled else 2
    decay = 1 - lr * weight_decay if mode == 1 else weight_decay
    w = 1 - beta1
    call("adam_" + s, ptr(p), ptr(g), ptr(m), ptr(v), p.size, mode, fbits(decay), fbits(w), fbits(1 - w),
         int(abs(w) < 0.5), fbits(beta2), fbits(1 - beta2), fbits(sqrt_bc2), fbits(eps), fbits(-(lr / bc1)),
         par(p.size, STREAM_MIN))
    return p


OPS = {"adam_step_": _adam_step_}
