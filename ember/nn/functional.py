"""ember.nn.functional: stateless neural-network ops with torch.nn.functional's names.

>>> import ember.nn.functional as F
>>> F.pad(ember.ones(2), (1, 1)).tolist()
[0.0, 1.0, 1.0, 0.0]
"""

from __future__ import annotations

from .._pad import pad  # noqa: F401
from .._softmax import log_softmax, softmax  # noqa: F401
from ._activation import *  # noqa: F401,F403
from ._attention import *  # noqa: F401,F403
from ._conv import *  # noqa: F401,F403
from ._embedding import *  # noqa: F401,F403
from ._loss import *  # noqa: F401,F403
from ._norm import *  # noqa: F401,F403
from ._pool import *  # noqa: F401,F403
from ._sampling import *  # noqa: F401,F403
