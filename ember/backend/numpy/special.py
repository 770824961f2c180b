"""Special functions numpy lacks (erf, erfc, erfinv, lgamma, digamma).

scipy.special is used when it is installed (fast, accurate); otherwise the functions fall back to
the C library's ``erf``/``erfc``/``lgamma`` applied per element, and to Newton-refined
approximations for erfinv and digamma. Both paths are accurate to a few ulp in float64.
"""

from __future__ import annotations

import math

import numpy as np

try:
    import scipy.special as _sp
except ImportError:  # pragma: no cover - exercised when scipy is absent
    _sp = None

_erf_py = np.frompyfunc(math.erf, 1, 1)
_erfc_py = np.frompyfunc(math.erfc, 1, 1)
_lgamma_py = np.frompyfunc(lambda v: math.lgamma(v) if not (v <= 0 and v == math.floor(v)) else math.inf, 1, 1)


def _as_float(fn, x):
    out = fn(x.astype(np.float64))
    return np.asarray(out, dtype=np.float64).astype(x.dtype, copy=False)


def erf(x):
    return _sp.erf(x) if _sp is not None else _as_float(_erf_py, x)


def erfc(x):
    return _sp.erfc(x) if _sp is not None else _as_float(_erfc_py, x)


def lgamma(x):
    return _sp.gammaln(x) if _sp is not None else _as_float(_lgamma_py, x)


def erfinv(x):
    if _sp is not None:
        return _sp.erfinv(x)
    xd = x.astype(np.float64)
    # Giles' single-precision approximation as a start, then Newton steps on erf(y) - x.
    w = -np.log((1.0 - xd) * (1.0 + xd))
    small = w < 5.0
    ws = w - 2.5
    ps = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):
        ps = c + ps * ws
    wl = np.sqrt(np.where(small, 5.0, w)) - 3.0
    pl = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):
        pl = c + pl * wl
    y = np.where(small, ps, pl) * xd
    two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
    for _ in range(2):
        err = _as_float(_erf_py, y) - xd
        y = y - err / (two_over_sqrt_pi * np.exp(-y * y))
    y = np.where(xd == 1.0, np.inf, np.where(xd == -1.0, -np.inf, y))
    y = np.where(np.abs(xd) > 1.0, np.nan, y)
    return y.astype(x.dtype, copy=False)


def digamma(x):
    if _sp is not None:
        r = _sp.psi(x)
        # torch: digamma at 0 is -inf (scipy gives nan for -0.0 / inf sign conventions differ)
        return np.where(x == 0, -np.inf, r).astype(x.dtype, copy=False)
    xd = x.astype(np.float64)
    result = np.zeros_like(xd)
    # reflection for negative arguments
    neg = xd < 0
    reflect = np.where(neg, -np.pi / np.tan(np.pi * xd), 0.0)
    v = np.where(neg, 1.0 - xd, xd)
    # recurrence up to v >= 6, then the asymptotic series
    for _ in range(6):
        lt = v < 6
        result = result - np.where(lt, 1.0 / np.where(v == 0, 1.0, v), 0.0)
        v = np.where(lt, v + 1, v)
    inv = 1.0 / v
    inv2 = inv * inv
    series = (np.log(v) - 0.5 * inv
              - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132)))))
    out = result + series + reflect
    out = np.where(xd == 0, -np.inf, out)
    out = np.where((xd < 0) & (xd == np.floor(xd)), np.nan, out)
    return out.astype(x.dtype, copy=False)
