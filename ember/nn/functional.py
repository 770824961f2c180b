"""ember.nn.functional: stateless neural-network ops (torch.nn.functional).

>>> import ember.nn.functional as F
>>> F.pad(ember.ones(2), (1, 1)).tolist()
[0.0, 1.0, 1.0, 0.0]
"""

from __future__ import annotations

from .._pad import pad

__all__ = ["pad"]
