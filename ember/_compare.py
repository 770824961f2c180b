"""Whole-tensor comparisons: isclose, allclose, equal (composites of elementwise ops).

>>> a = ember.tensor([1.0, 2.0])
>>> ember.allclose(a, a + 1e-9), ember.equal(a, a.clone())
(True, True)
"""

from __future__ import annotations

from . import _dtype as dt
from ._tensor import Tensor, method, same_device

__all__ = ["isclose", "allclose", "equal"]


def _check(op: str, input, other):
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"{op}(): expected two Tensors, got {type(input).__name__} and {type(other).__name__}")
    same_device(op, input, other)


@method
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (equal infinities are close; NaN is
    close to NaN only with ``equal_nan``). Both tensors must have the same dtype, as in PyTorch.

    >>> ember.isclose(ember.tensor([1.0, 1.1]), ember.tensor([1.0, 1.0])).tolist()
    [True, False]
    """
    _check("isclose", input, other)
    if input._dtype is not other._dtype:
        raise RuntimeError(f"isclose(): {input._dtype} did not match {other._dtype}; convert one with .to(dtype)")
    if rtol < 0:
        raise RuntimeError(f"isclose(): rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"isclose(): atol must be greater than or equal to zero, but got {atol}")
    close = input == other
    if equal_nan and input._dtype.is_floating_point:
        close = close | (input.isnan() & other.isnan())
    if rtol == 0 and atol == 0:
        return close
    # integers and bools are compared in float64 so that differences neither wrap nor round
    a, b = (input, other) if input._dtype.is_floating_point else (input.to(dt.float64), other.to(dt.float64))
    diff = (a - b).abs()
    return close | (diff.isfinite() & (diff <= atol + rtol * b.abs()))


@method
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """True when every pair of elements is close (see :func:`isclose`); the shapes broadcast."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


@method
def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and equal elements (NaN never equals NaN).

    >>> ember.equal(ember.tensor([1, 2]), ember.tensor([1.0, 2.0]))
    True
    """
    _check("equal", input, other)
    if input._shape != other._shape:
        return False
    return bool((input == other).all())
