"""ember.nn: neural-network building blocks (PyTorch's torch.nn). For now only ``functional``."""

from __future__ import annotations

from . import functional  # noqa: F401
