"""ember.autograd: reverse-mode differentiation with PyTorch's API.

>>> x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4., 6.])

The work is done by the Autodiff backend decorator (``ember.backend.autodiff``) that the default
devices include; this package is the user-facing API over it.
"""

from . import functional  # noqa: F401
from ._api import backward, grad  # noqa: F401
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .grad_mode import (  # noqa: F401
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401
