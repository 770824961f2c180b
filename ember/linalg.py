"""ember.linalg: linear algebra with torch.linalg's names (being written)."""

from ._errors import LinAlgError  # noqa: F401
