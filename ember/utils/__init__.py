"""ember.utils: activation checkpointing and other training utilities."""

from . import checkpoint  # noqa: F401 - ember.utils.checkpoint.checkpoint(fn, *args), as in PyTorch
