"""ember.onnx.ops: the ember functions that imported ONNX models call, one per ONNX operator.

See ``_registry.py`` for the conventions every op follows.
"""

from ._registry import OPS, OnnxOpError, lookup, op, upgrader  # noqa: F401
from .control import *  # noqa: F401,F403
from .extra import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .tensor import *  # noqa: F401,F403
