"""Registry entries: elementwise unary and binary ops."""

from __future__ import annotations

from .core import ALL, FLOATS, INTS, OpInfo, binary_samples, unary_samples

NUMERIC = INTS + FLOATS


def _u(name, low=-3.0, high=3.0, dtypes=ALL, **kw):
    return OpInfo(name, lambda lib, x, _n=name: getattr(lib, _n)(x), unary_samples(low, high), dtypes, **kw)


def _b(name, dtypes=NUMERIC, low=-3.0, high=3.0, scalars=(2, -1.5, True), **kw):
    return OpInfo(name, lambda lib, x, y, _n=name: getattr(lib, _n)(x, y), binary_samples(low, high, scalars), dtypes, **kw)


OPS = [
    _u("exp"), _u("sin"), _u("tanh"), _u("sigmoid"), _u("neg", dtypes=NUMERIC), _u("abs"),
    _u("log", low=0.01, high=5.0), _u("sqrt", low=0.0, high=5.0),
    _b("add", dtypes=ALL), _b("mul", dtypes=ALL), _b("sub"), _b("maximum", dtypes=ALL),
    _b("eq", dtypes=ALL), _b("lt", dtypes=NUMERIC),
]
