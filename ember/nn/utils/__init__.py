"""ember.nn.utils: gradient clipping, parameter/vector conversion, parameter counts and model
summaries (torch.nn.utils plus ``num_params`` and ``summary``)."""

from __future__ import annotations

from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm  # noqa: F401
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .summary import ModelSummary, num_params, summary  # noqa: F401

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "num_params", "summary", "ModelSummary"]
