"""Optimizer steps of the CUDA backend: one Adam/AdamW update of a parameter as one kernel.

``optim.Adam``'s eager loop issues about ten ops per parameter (weight decay, two moment updates, the
square root, the division, the step); with ``adam_step_`` it issues one. The kernel follows the loop's
formulas in its order (kernels._ADAM); on numpy (the tests' stand-in for CuPy) the same formulas run as
array ops, which is also the path for dtypes the kernel doesn't take.
"""

from __future__ import annotations

import math

import numpy as np

from ..numpy.optim import adam_arrays, check_operands
from . import kernels
from ._util import LOW


def _ln(beta: float) -> float:
    """ln beta for the kernel's 1 - beta^t = -expm1(t ln beta); beta = 0 (allowed) gives -inf, so 1 - 0^t = 1."""
    return math.log(beta) if beta > 0 else -math.inf


def build(xp) -> dict:
    gpu = xp is not np

    def _adam_step_(p, g, m, v, *step_t, lr, beta1, beta2, eps, weight_decay, decoupled, step):
        check_operands(p, g, m, v)
        st = step_t[0] if step_t else None
        if st is None:
            bc1 = 1.0 - beta1 ** step
            sqrt_bc2 = math.sqrt(1.0 - beta2 ** step)
        else:  # the count on the device (a captured step): 0-d arrays, no read back
            t64 = st.reshape(()).astype(np.float64)
            bc1 = 1.0 - beta1 ** t64
            sqrt_bc2 = xp.sqrt(1.0 - beta2 ** t64)
        if gpu and (p.dtype in (np.float32, np.float64) or p.dtype in LOW) and all(
                a.flags.c_contiguous for a in (p, g, m, v)):
            acc = "double" if p.dtype == np.float64 else "float"
            if st is None:
                done = kernels.try_elementwise("adam_step", g, lr, beta1, beta2, eps, weight_decay, bool(decoupled),
                                               bc1, sqrt_bc2, p, m, v, acc=acc)
            else:
                done = kernels.try_elementwise("adam_step_t", g, st.reshape(1).astype(np.float32, copy=False), lr,
                                               _ln(beta1), _ln(beta2), beta1, beta2, eps, weight_decay,
                                               bool(decoupled), p, m, v, acc=acc)
            if done is not None:  # the kernel's outputs: p, m and v, updated in place
                return p
        return adam_arrays(xp, p, g, m, v, lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                           decoupled=decoupled, bc1=bc1, sqrt_bc2=sqrt_bc2)

    return {"adam_step_": _adam_step_}
