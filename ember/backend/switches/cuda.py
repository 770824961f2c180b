"""CUDA backend switches (PyTorch's ``torch.backends.cuda``).

``matmul.allow_tf32`` (default False, as in PyTorch): float32 matrix products on CUDA may use TF32
tensor cores (10-bit mantissa inputs, float32 accumulation; about 7x faster on an H200 and a relative
error near 1e-3). The CUDA backend reads the flag at every product, so setting it takes effect at once.

>>> import ember.backends
>>> ember.backends.cuda.matmul.allow_tf32 = True
>>> ember.backends.cuda.matmul.allow_tf32
True
>>> ember.backends.cuda.matmul.allow_tf32 = False
"""

from __future__ import annotations

__all__ = ["matmul", "is_built"]


class _MatmulFlags:
    """``allow_tf32``: TF32 tensor cores for float32 matmul and convolution GEMMs on CUDA."""

    __slots__ = ("_tf32",)

    def __init__(self):
        self._tf32 = False

    @property
    def allow_tf32(self) -> bool:
        return self._tf32

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"allow_tf32 must be a bool, got {type(value).__name__}")
        self._tf32 = value

    def __repr__(self) -> str:
        return f"<ember.backends.cuda.matmul allow_tf32={self._tf32}>"


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether ember's CUDA backend can be used here (CuPy is importable); says nothing about a GPU."""
    import importlib.util
    return importlib.util.find_spec("cupy") is not None
