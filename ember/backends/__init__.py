"""Backend switches under PyTorch's names: ``ember.backends.cuda.matmul.allow_tf32``.

>>> import ember.backends
>>> ember.backends.cuda.matmul.allow_tf32
False
"""

from __future__ import annotations

from . import cuda, cudnn

__all__ = ["cuda", "cudnn"]
