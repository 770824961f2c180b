"""Backend switches under PyTorch's names (``torch.backends.cuda``, ``torch.backends.cudnn``).

They live in the backend layer because the CUDA backend reads them at every product and convolution;
the frontend re-exports them as ``ember.backends``.
"""

from __future__ import annotations

from . import cuda, cudnn

__all__ = ["cuda", "cudnn"]
