"""ember.amp: automatic mixed precision (PyTorch's torch.amp): ``autocast`` regions and ``GradScaler``.

>>> import ember
>>> with ember.amp.autocast("cpu"):
...     y = ember.ones(2, 2) @ ember.ones(2, 2)
>>> y.dtype
ember.bfloat16
"""

from __future__ import annotations

from .autocast_mode import (  # noqa: F401
    autocast,
    clear_autocast_cache,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .grad_scaler import GradScaler, OptState  # noqa: F401

__all__ = ["autocast", "GradScaler", "OptState", "custom_fwd", "custom_bwd", "is_autocast_available",
           "is_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype", "set_autocast_enabled",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache"]
