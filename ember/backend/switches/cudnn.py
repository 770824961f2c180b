"""cuDNN switches (PyTorch's ``torch.backends.cudnn``), read by the CUDA backend at every convolution.

* ``enabled`` (default True): convolutions on CUDA use cuDNN when it is installed
  (``pip install ember[cuda]`` brings the ``nvidia-cudnn`` wheel); False uses ember's im2col + cuBLAS path.
* ``allow_tf32`` (default True, as in PyTorch): float32 convolutions may use TF32 tensor cores.
* ``benchmark`` (default False): time cuDNN's algorithms for each new shape and keep the fastest
  (costs a few milliseconds per new shape; worth it for a training loop with fixed shapes).
* ``deterministic`` (default False): only algorithms that give bitwise-reproducible results.

>>> import ember.backends
>>> ember.backends.cudnn.allow_tf32
True
>>> ember.backends.cudnn.benchmark = True
>>> ember.backends.cudnn.benchmark = False
"""

from __future__ import annotations

import sys
import types

__all__ = ["enabled", "allow_tf32", "benchmark", "deterministic", "is_available", "version"]


def is_available() -> bool:
    """Whether cuDNN can be loaded here (the library is found; says nothing about a GPU)."""
    from ..cuda import cudnn
    return cudnn.available()


def version() -> int | None:
    """cuDNN's version number (e.g. 91500 for 9.15.0), or None when it is not installed."""
    from ..cuda import cudnn
    return cudnn.version()


class _Flags(types.ModuleType):
    """The module's flags as checked attributes: a typo'd value raises instead of silently sticking."""

    _BOOLS = ("enabled", "allow_tf32", "benchmark", "deterministic")

    def __setattr__(self, name, value):
        if name in self._BOOLS and not isinstance(value, bool):
            raise TypeError(f"ember.backends.cudnn.{name} must be a bool, got {type(value).__name__}")
        super().__setattr__(name, value)


enabled = True
allow_tf32 = True
benchmark = False
deterministic = False

sys.modules[__name__].__class__ = _Flags
