"""Backend switches under PyTorch's names: ``ember.backends.cuda.matmul.allow_tf32``.

>>> import ember.backends
>>> ember.backends.cuda.matmul.allow_tf32
False
"""

from __future__ import annotations

import sys

from ..backend.switches import cuda, cudnn

# ``import ember.backends.cudnn`` names the same module objects (they live in the backend layer, which
# reads them at every product and convolution)
sys.modules[__name__ + ".cuda"] = cuda
sys.modules[__name__ + ".cudnn"] = cudnn

__all__ = ["cuda", "cudnn"]
