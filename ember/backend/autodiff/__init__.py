"""The Autodiff backend decorator: ``Autodiff(inner)`` adds reverse-mode differentiation."""

from .backend import Autodiff  # noqa: F401
from .graph import STATE, AccumulateGrad, Node, Var  # noqa: F401
