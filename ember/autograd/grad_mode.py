"""Grad-mode switches: no_grad, enable_grad, set_grad_enabled, inference_mode, detect_anomaly.

Each works as a context manager and as a function decorator, like PyTorch's. The state is
per thread and lives in the Autodiff backend (``ember.backend.autodiff.STATE``).
"""

from __future__ import annotations

import functools

from ..backend.autodiff.graph import STATE

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]


class _Switch:
    """Base: set a state field on enter, restore it on exit; usable as a decorator."""

    field = "grad_enabled"
    value = False

    def __enter__(self):
        self._prev = getattr(STATE, self.field)
        setattr(STATE, self.field, self.value)
        return self

    def __exit__(self, *exc):
        setattr(STATE, self.field, self._prev)
        return False

    def __call__(self, fn):
        field, value = self.field, self.value

        @functools.wraps(fn)
        def run(*args, **kwargs):
            prev = getattr(STATE, field)
            setattr(STATE, field, value)
            try:
                return fn(*args, **kwargs)
            finally:
                setattr(STATE, field, prev)
        return run


class no_grad(_Switch):  # noqa: N801 - PyTorch's name
    """Disable gradient recording: ``with ember.no_grad(): y = model(x)``."""

    value = False


class enable_grad(_Switch):  # noqa: N801
    """Re-enable gradient recording inside a no_grad region."""

    value = True


class set_grad_enabled(_Switch):  # noqa: N801
    """``set_grad_enabled(False)`` as a call, a context manager or a decorator."""

    def __init__(self, mode: bool):
        self.value = bool(mode)
        self._prev = STATE.grad_enabled
        STATE.grad_enabled = self.value  # takes effect immediately when used as a plain call

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        STATE.grad_enabled = self._prev
        return False


def is_grad_enabled() -> bool:
    return STATE.grad_enabled


class inference_mode(_Switch):  # noqa: N801
    """Like no_grad, for inference code (PyTorch's inference_mode)."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)
        self.value = not self.mode

    def __enter__(self):
        self._prev = (STATE.grad_enabled, STATE.inference)
        if self.mode:
            STATE.grad_enabled, STATE.inference = False, True
        return self

    def __exit__(self, *exc):
        STATE.grad_enabled, STATE.inference = self._prev
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def run(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return run


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class detect_anomaly(_Switch):  # noqa: N801
    """Anomaly mode: a backward rule that produces NaN raises an error naming the op and showing
    the forward call that created it."""

    field = "anomaly"
    value = True

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan


class set_detect_anomaly(_Switch):  # noqa: N801
    field = "anomaly"

    def __init__(self, mode: bool, check_nan: bool = True):
        self.value = bool(mode)
        self._prev = STATE.anomaly
        STATE.anomaly = self.value

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        STATE.anomaly = self._prev
        return False


def is_anomaly_enabled() -> bool:
    return STATE.anomaly
