"""Matrix products on the CUDA backend: cuBLAS through CuPy's matmul.

float16/bfloat16 products accumulate in float32 (cuBLAS compute type 32F); float32 products use TF32
tensor cores only while ``ember.backends.cuda.matmul.allow_tf32`` is True (PyTorch's switch and
default, False). The switch is read at each product and pushed into CuPy's per-dtype compute type
when it changed, so flipping it takes effect at once.
"""

from __future__ import annotations

import numpy as np

from ._util import LOW

_BF16 = LOW[-1]


class _ComputeType:
    """Keeps CuPy's cuBLAS compute types in line with ember's allow_tf32 flag."""

    def __init__(self, xp):
        self.gpu = xp is not np
        self.tf32 = None
        if self.gpu:
            from cupy._core import _routines_linalg as rl
            self.rl = rl
            for d in LOW:  # fp32 accumulation for half precision
                try:
                    rl.set_compute_type(d, rl.COMPUTE_TYPE_FP32)
                except Exception:  # noqa: BLE001 - a CuPy that doesn't know the dtype keeps its default (FP32)
                    pass

    def sync(self) -> None:
        from ...backends import cuda as flags
        want = bool(flags.matmul.allow_tf32)
        if want is not self.tf32 and self.gpu:
            rl = self.rl
            rl.set_compute_type(np.float32, rl.COMPUTE_TYPE_TF32 if want else rl.COMPUTE_TYPE_DEFAULT)
        self.tf32 = want


def build(xp) -> dict:
    ct = _ComputeType(xp)
    from ...backends import cuda as flags
    matmul_flags = flags.matmul

    def _matmul(a, b):
        if matmul_flags.allow_tf32 is not ct.tf32:
            ct.sync()
        if a.dtype.kind == "b":
            return xp.matmul(a.astype(np.int64), b.astype(np.int64)) != 0
        if a.dtype == _BF16:
            return _bf16_matmul(a, b)
        return xp.matmul(a, b)

    def _bf16_matmul(a, b):
        """CuPy 14 multiplies bfloat16 as plain 2-d GEMMs only: fold a's batch dims into rows when b is
        a matrix, otherwise compute in float32 (exact products of bfloat16 inputs) and round once."""
        try:
            if a.ndim == 2 and b.ndim == 2:
                return xp.matmul(a, b)
            if b.ndim == 2 and a.ndim > 2:
                return xp.matmul(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + (b.shape[-1],))
        except TypeError:  # a layout CuPy's bfloat16 GEMM refuses ("data type 'E' not understood")
            pass
        return xp.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)

    return {"matmul": _matmul}
