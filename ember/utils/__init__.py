"""ember.utils: activation checkpointing and other training utilities."""

from .checkpoint import checkpoint, checkpoint_sequential  # noqa: F401
