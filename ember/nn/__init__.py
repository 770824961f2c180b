"""ember.nn: neural-network building blocks (PyTorch's torch.nn): Module, Parameter, containers,
``init``, ``utils`` and ``functional``."""

from __future__ import annotations

from . import functional, init, utils  # noqa: F401
from .container import Identity, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .module import Module  # noqa: F401
from .modules.loss import *  # noqa: E402,F401,F403 - loss classes (CrossEntropyLoss, ...)
from .parameter import Parameter  # noqa: F401
