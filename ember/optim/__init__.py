"""ember.optim: optimizers with PyTorch's names, options, update rules and state-dict layout, and
``lr_scheduler``.

>>> w = ember.nn.Parameter(ember.tensor([2.0]))
>>> opt = ember.optim.SGD([w], lr=0.25)
>>> for _ in range(3):
...     opt.zero_grad()
...     (w * w).sum().backward()
...     _ = opt.step()
>>> w
Parameter containing:
tensor([0.2500], requires_grad=True)
"""

from __future__ import annotations

from . import lr_scheduler  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .adam_variants import Adamax, NAdam, RAdam  # noqa: F401
from .adaptive import Adadelta, Adagrad, RMSprop  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from .lion import Lion  # noqa: F401
from .muon import Muon  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .sgd import SGD  # noqa: F401

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adagrad", "Adadelta", "RMSprop",
           "Lion", "LBFGS", "Muon", "lr_scheduler"]
