"""Registry entries: elementwise ops (unary, binary, ternary), their method, operator, reflected
and in-place forms, and PyTorch's type promotion across every dtype pair.

Which dtypes raise follows PyTorch 2.13 CPU: e.g. ``abs`` of bool, ``floor_divide`` of bool,
bitwise ops of floats and ``hypot`` of integers raise NotImplementedError ("not implemented for
'Bool'"); ember raises a subclass of both TypeError and NotImplementedError there. The rules are
written out per op below (``_rules``) so each sample states what PyTorch does with it.
"""

from __future__ import annotations

import operator

import numpy as np

from .core import ALL, FLOATS, INTS, SHAPES, OpInfo, Sample, T, make, np_dtype

NUMERIC = INTS + FLOATS
INTLIKE = ("bool",) + INTS
NIE = NotImplementedError
BCAST = [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((5,), ()), ((), (2, 2)), ((0, 3), (1, 3)), ((2, 1, 3), (4, 1))]
_CAT = {"bool": 0, **{d: 1 for d in INTS}, **{d: 2 for d in FLOATS}}


# ---- a tiny model of PyTorch's promotion, used only to say which samples must raise ----------
def _cat(x) -> int:
    if isinstance(x, str):
        return _CAT[x]
    return 0 if isinstance(x, bool) else 1 if isinstance(x, int) else 2


def _rt(a, b) -> str:
    """Result dtype name for a dtype name (a tensor of that dtype) and a dtype name or scalar."""
    if isinstance(b, str):
        if a == b:
            return a
        if _cat(a) != _cat(b):
            return a if _cat(a) > _cat(b) else b
        if _cat(a) == 2:
            order = {"float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}
            return "float32" if order[a] == order[b] else (a if order[a] > order[b] else b)
        if "uint8" in (a, b):
            other = b if a == "uint8" else a
            return "int16" if other == "int8" else other
        return a if int(a[3:]) > int(b[3:]) else b
    if _cat(b) > _cat(a):
        return ("bool", "int64", "float32")[_cat(b)]
    return a


def _is_bool(x) -> bool:
    return x == "bool" if isinstance(x, str) else isinstance(x, bool)


# per-op error rules: fn(result dtype, lhs, rhs) -> exception type or None; lhs/rhs are dtype names
# (tensors) or Python scalars
def _never(r, a, b):
    return None


def _sub_rule(r, a, b):
    return RuntimeError if _is_bool(a) or _is_bool(b) else None


def _no_bool(r, a, b):
    return NIE if r == "bool" else None


def _pow_rule(r, a, b):
    if r == "bool" and (isinstance(b, str) or isinstance(a, bool)):
        return NIE
    if _cat(r) == 1 and not isinstance(b, str) and not isinstance(b, bool) and b < 0:
        return RuntimeError  # integers to negative integer powers
    return None


def _float_only(r, a, b):
    return NIE if _cat(r) < 2 else None


def _no_float(r, a, b):
    return NIE if _cat(r) == 2 else None


def _shift_rule(r, a, b):
    return NIE if r == "bool" or _cat(r) == 2 else None


# ---- tensor data ------------------------------------------------------------------------------
def _data(shape, dtype, rng, low=-3.0, high=3.0, special=False, nonzero=False) -> np.ndarray:
    a = make(shape, dtype, rng, low, high, special)
    if nonzero and dtype in INTLIKE:  # integer division by zero raises: dedicated samples test that
        a = np.where(a == 0, np.ones_like(a), a)
    return a


def _halves(dtype) -> np.ndarray:
    """Ties for rounding, signed zero and values on both sides of zero."""
    return np.array([-2.5, -1.5, -0.5, -0.0, 0.5, 1.5, 2.5, 3.5, 1.25, -7.75], dtype=np_dtype(dtype))


# ---- unary ops --------------------------------------------------------------------------------
def _unary_gen(low, high, errors, kwargs=None, nan=True):
    kw = kwargs or {}

    def gen(dtype, rng):
        if dtype in errors:
            yield Sample((T(make((2, 3), dtype, rng, low, high)),), dict(kw), name="unsupported dtype",
                         raises=errors[dtype])
            return
        for shape in SHAPES:
            yield Sample((T(make(shape, dtype, rng, low, high)),), dict(kw), name=f"{shape}")
        yield Sample((T(make((4, 3), dtype, rng, low, high), "transposed"),), dict(kw), name="transposed")
        yield Sample((T(make((3, 4), dtype, rng, low, high), "strided"),), dict(kw), name="strided")
        yield Sample((T(make((3, 4), dtype, rng, low, high), "expanded"),), dict(kw), name="expanded")
        if dtype in FLOATS:
            special = make((6,), dtype, rng, low, high, special=True)
            if not nan:
                special = special[1:]
            yield Sample((T(special),), dict(kw), name="nan-inf" if nan else "inf")
            yield Sample((T(_halves(dtype)),), dict(kw), name="halves")
        elif dtype in INTS:
            info = np.iinfo(np.dtype(dtype))
            yield Sample((T(np.array([info.min, info.max, 0, 1], dtype=dtype)),), dict(kw), name="extremes")
    return gen


def _unary(name, low=-3.0, high=3.0, errors=None, tol=None, kwargs=None, fn=None, label=None, dtypes=ALL,
           nan=True):
    fn = fn or (lambda lib, x, _n=name, **kw: getattr(lib, _n)(x, **kw))
    return OpInfo(label or name, fn, _unary_gen(low, high, errors or {}, kwargs, nan), dtypes, tol=tol)


_NIE_BOOL = {"bool": NIE}
_NIE_INTLIKE = {d: NIE for d in INTLIKE}
_NIE_FLOATS = {d: NIE for d in FLOATS}

# (name, low, high, errors); float-valued functions of any dtype give the default float for integers
FLOAT_UNARY = [
    ("exp", -3, 3), ("exp2", -3, 3), ("expm1", -3, 3), ("log", 0.01, 5), ("log1p", -0.9, 5),
    ("log2", 0.01, 5), ("log10", 0.01, 5), ("sqrt", 0.0, 5), ("rsqrt", 0.05, 5), ("sin", -3, 3),
    ("cos", -3, 3), ("tan", -1.4, 1.4), ("asin", -1, 1), ("acos", -1, 1), ("atan", -5, 5),
    ("sinh", -3, 3), ("cosh", -3, 3), ("tanh", -3, 3), ("asinh", -5, 5), ("acosh", 1, 5),
    ("atanh", -0.95, 0.95), ("erf", -3, 3), ("erfc", -3, 3), ("erfinv", -0.99, 0.99),
    ("sigmoid", -8, 8), ("reciprocal", 0.1, 5), ("lgamma", -3, 5), ("digamma", 0.1, 5),
]
SAME_UNARY = [
    ("abs", _NIE_BOOL), ("neg", {"bool": RuntimeError}), ("sign", {}), ("sgn", {}), ("square", {}),
    ("positive", {"bool": RuntimeError}), ("floor", _NIE_BOOL), ("ceil", _NIE_BOOL), ("round", _NIE_BOOL),
    ("trunc", _NIE_BOOL), ("frac", _NIE_INTLIKE), ("isnan", {}), ("isinf", {}), ("isfinite", {}),
    ("signbit", {}), ("nan_to_num", {}), ("logical_not", {}), ("bitwise_not", _NIE_FLOATS),
]
# float16/bfloat16 results of transcendental functions round differently by an ulp here and there
_TRANSC_TOL = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2), "float32": (3e-6, 1e-5)}
_UNARY_ERRORS = {n: {} for n, *_ in FLOAT_UNARY}
_UNARY_ERRORS.update({n: e for n, e in SAME_UNARY})

UNARY_OPS = [_unary(n, lo, hi, tol=_TRANSC_TOL) for n, lo, hi in FLOAT_UNARY]
# signbit skips NaN: the harness's float32 -> bfloat16 conversion in torch gives NaN a sign bit
UNARY_OPS += [_unary(n, errors=e, nan=n != "signbit") for n, e in SAME_UNARY]
UNARY_OPS += [
    _unary("round", errors=_NIE_INTLIKE, kwargs={"decimals": 1}, label="round(decimals=1)",
           fn=lambda lib, x, **kw: lib.round(x, **kw), tol={"float16": (1e-3, 2e-3)}),
    _unary("round", errors=_NIE_INTLIKE, kwargs={"decimals": -1}, label="round(decimals=-1)", high=60,
           low=-60, fn=lambda lib, x, **kw: lib.round(x, **kw)),
    _unary("round", errors=_NIE_INTLIKE, kwargs={"decimals": 3}, label="round(decimals=3)",
           fn=lambda lib, x, **kw: lib.round(x, **kw), tol={"float16": (1e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}),
    # PyTorch refuses integers with an explicit decimals=0 too; ember returns them unchanged
    _unary("round", errors=_NIE_BOOL, kwargs={"decimals": 0}, label="round(decimals=0)",
           fn=lambda lib, x, **kw: lib.round(x, **kw), dtypes=("bool",) + FLOATS),
    _unary("nan_to_num", kwargs={"nan": 1.5, "posinf": 100.0, "neginf": -7.0}, label="nan_to_num(values)"),
    _unary("nan_to_num", kwargs={"posinf": 1e30}, label="nan_to_num(posinf only)"),
]

# Forms of every unary op (method, in-place, operators) on one view per dtype. In-place forms of
# float-valued functions raise for integer tensors (the float result can't be cast back).
_INPLACE_UNARY = [n for n, *_ in FLOAT_UNARY] + ["abs", "neg", "sign", "sgn", "square", "floor", "ceil",
                                                 "round", "trunc", "frac", "nan_to_num", "logical_not",
                                                 "bitwise_not"]
_FLOAT_RESULT = {n for n, *_ in FLOAT_UNARY}


def _unary_forms(dtype, rng):
    x = lambda: T(make((4, 3), dtype, rng, 0.1, 0.9), "transposed")  # noqa: E731 - in every domain
    for name in sorted(_UNARY_ERRORS):
        yield Sample(("method", name, x()), raises=_UNARY_ERRORS[name].get(dtype), name=f"x.{name}()")
    for name in _INPLACE_UNARY:
        err = _UNARY_ERRORS[name].get(dtype)
        if err is None and name in _FLOAT_RESULT and dtype not in FLOATS:
            err = RuntimeError
        if name == "square" and dtype == "bool":
            err = RuntimeError  # bool squared is int64
        yield Sample(("inplace", name, x()), raises=err, name=f"x.{name}_()")
    yield Sample(("inplace", "exp", T(make((3, 4), dtype, rng), "expanded")),
                 raises=RuntimeError, name="in-place on an expanded view")
    float_type_error = {d: TypeError for d in FLOATS}  # ~x of a float: TypeError, unlike bitwise_not
    for name, err in (("-", {"bool": RuntimeError}), ("abs()", _NIE_BOOL), ("~", float_type_error),
                      ("+", {"bool": RuntimeError})):
        yield Sample(("operator", name, x()), raises=err.get(dtype), name=f"operator {name}")


_UNARY_PYOPS = {"-": operator.neg, "abs()": abs, "~": operator.invert, "+": operator.pos}


def _unary_form_fn(lib, form, name, x):
    if form == "method":
        return getattr(x, name)()
    if form == "inplace":
        r = getattr(x, name + "_")()
        assert r is x, "in-place ops return self"
        return r
    return _UNARY_PYOPS[name](x)


# (in-place forms are not differentiable on leaves; the function forms carry the gradient checks)
UNARY_OPS.append(OpInfo("unary forms", _unary_form_fn, _unary_forms, ALL, tol=_TRANSC_TOL, differentiable=False))


# ---- binary ops -------------------------------------------------------------------------------
class _B:
    """How to sample one binary op: operand ranges, scalars and the error rule."""

    def __init__(self, name, rule=_never, low=-3.0, high=3.0, rlow=None, rhigh=None, scalars=(2, -1.5, True),
                 nonzero=False, pyop=None, ipyop=None, rscalars=None, tensor_only=False, out="same",
                 zero_div=False, tol=None, inplace=True, differentiable=True):
        self.name, self.rule, self.low, self.high = name, rule, low, high
        self.rlow = low if rlow is None else rlow
        self.rhigh = high if rhigh is None else rhigh
        self.scalars = () if tensor_only else scalars
        self.rscalars = self.scalars if rscalars is None else rscalars
        self.nonzero, self.pyop, self.ipyop, self.out, self.zero_div = nonzero, pyop, ipyop, out, zero_div
        self.tol, self.inplace, self.differentiable = tol, inplace, differentiable

    def lhs(self, shape, dtype, rng, layout="contiguous", special=False):
        return T(_data(shape, dtype, rng, self.low, self.high, special), layout)

    def rhs(self, shape, dtype, rng, layout="contiguous", special=False):
        return T(_data(shape, dtype, rng, self.rlow, self.rhigh, special, self.nonzero), layout)

    def err(self, a, b):
        return self.rule(_rt(a, b) if isinstance(a, str) else _rt(b, a), a, b)

    def out_dtype(self, a, b):
        r = _rt(a, b) if isinstance(a, str) else _rt(b, a)
        if self.out == "bool":
            return "bool"
        if self.out == "float" and _cat(r) < 2:
            return "float32"
        if self.out == "float64":
            return "float64"
        return r

    def inplace_err(self, a, b):
        """The error of ``a.op_(b)`` (a: dtype name of self)."""
        if self.out == "float64" and a != "float64":
            return RuntimeError  # float_power_ needs a float64 self
        if _cat(self.out_dtype(a, b)) > _cat(a):
            return RuntimeError
        return self.err(a, b)


def _binary_gen(b: _B):
    def gen(dtype, rng):
        bad = b.err(dtype, dtype)
        if bad is not None:
            yield Sample((b.lhs((2, 3), dtype, rng), b.rhs((2, 3), dtype, rng)), raises=bad, name="unsupported dtype")
        else:
            for shape in SHAPES:
                yield Sample((b.lhs(shape, dtype, rng), b.rhs(shape, dtype, rng)), name=f"{shape}")
            for sa, sb in BCAST:
                yield Sample((b.lhs(sa, dtype, rng), b.rhs(sb, dtype, rng)), name=f"bcast{sa}{sb}")
            yield Sample((b.lhs((4, 3), dtype, rng, "transposed"), b.rhs((4, 3), dtype, rng, "strided")), name="views")
            yield Sample((b.lhs((3, 4), dtype, rng, "expanded"), b.rhs((3, 4), dtype, rng, "transposed")),
                         name="expanded")
            x = b.lhs((3, 4), dtype, rng)
            y = T(np.where(np.arange(12).reshape(3, 4) % 2 == 0, x.data, b.rhs((3, 4), dtype, rng).data))
            if not b.nonzero or dtype not in INTLIKE or (y.data != 0).all():
                yield Sample((x, y), name="equal values")
            if dtype in FLOATS:
                yield Sample((b.lhs((6,), dtype, rng, special=True), b.rhs((6,), dtype, rng, special=True)),
                             name="nan-inf")
            yield Sample((b.lhs((2, 3), dtype, rng), b.rhs((3, 2), dtype, rng)), raises=RuntimeError,
                         name="shape mismatch")
            if b.zero_div and dtype in INTS:
                yield Sample((b.lhs((3,), dtype, rng), T(np.array([1, 0, 2], dtype=dtype))), raises=RuntimeError,
                             name="integer division by zero")
        for sc in b.scalars:
            yield Sample((b.lhs((3, 2), dtype, rng), sc), raises=b.err(dtype, sc), name=f"scalar {sc!r}")
        if b.zero_div and dtype in INTS:
            yield Sample((b.lhs((3,), dtype, rng), 0), raises=RuntimeError, name="integer division by scalar 0")
        # mixed dtypes: with a 0-d float64 tensor and with a dimensioned int32 tensor
        for other in ("float64", "int32"):
            shape = () if other == "float64" else (3, 2)
            if other == "int32" and dtype == "bool" and b.nonzero:
                continue
            yield Sample((b.lhs((3, 2), dtype, rng), b.rhs(shape, other, rng)), raises=b.err(dtype, other),
                         name=f"with {other}{shape}")
    return gen


def _binary_forms_gen(b: _B):
    """Method, operator, reflected and in-place forms of one binary op."""
    def gen(dtype, rng):
        x = lambda shape=(3, 4), layout="contiguous": b.lhs(shape, dtype, rng, layout)  # noqa: E731
        y = lambda shape=(3, 4), layout="contiguous": b.rhs(shape, dtype, rng, layout)  # noqa: E731
        same = b.err(dtype, dtype)
        yield Sample(("method", x(), y()), raises=same, name="method")
        if b.pyop:
            yield Sample(("op", x(), y()), raises=same, name="operator")
        ierr = b.inplace_err(dtype, dtype)
        if b.inplace:
            yield Sample(("inplace", x((4, 3), "transposed"), y((3,))), raises=ierr, name="in-place, broadcast rhs")
        if ierr is None and b.inplace:
            yield Sample(("inplace", x((3, 1)), y((1, 4))), raises=RuntimeError, name="in-place, output would grow")
            yield Sample(("inplace", x((3, 4), "expanded"), y()), raises=RuntimeError, name="in-place on expanded")
            if b.ipyop:
                yield Sample(("iop", x(), y((4,))), name="augmented assignment")
        for other in ("float32", "int64") if b.inplace else ():
            if other == "int64" and b.nonzero and dtype == "bool":
                continue
            yield Sample(("inplace", x(), b.rhs((3, 4), other, rng)), raises=b.inplace_err(dtype, other),
                         name=f"in-place with {other}")
        for sc in b.scalars:
            yield Sample(("method", x(), sc), raises=b.err(dtype, sc), name=f"method scalar {sc!r}")
            if b.pyop:
                yield Sample(("op", x(), sc), raises=b.err(dtype, sc), name=f"operator scalar {sc!r}")
            if b.inplace:
                yield Sample(("inplace", x(), sc), raises=b.inplace_err(dtype, sc), name=f"in-place scalar {sc!r}")
        if b.pyop:
            for sc in b.rscalars:
                r = b.rhs((3, 4), dtype, rng)
                yield Sample(("rop", r, sc), raises=b.rule(_rt(dtype, sc), sc, dtype), name=f"reflected {sc!r}")
    return gen


def _binary_forms_fn(name, pyop, ipyop):
    def fn(lib, form, x, y):
        if form == "method":
            return getattr(x, name)(y)
        if form == "op":
            return pyop(x, y)
        if form == "rop":
            return pyop(y, x)  # y is the scalar: Python calls x.__rop__(y)
        if form == "iop":
            r = ipyop(x, y)
            assert r is x
            return r
        r = getattr(x, name + "_")(y)
        assert r is x, "in-place ops return self"
        return r
    return fn


_INT_POW = {d: (0.0, 3.0) for d in INTLIKE}
BINARY = [
    _B("add", pyop=operator.add, ipyop=operator.iadd),
    _B("sub", _sub_rule, pyop=operator.sub, ipyop=operator.isub),
    _B("mul", pyop=operator.mul, ipyop=operator.imul),
    _B("div", pyop=operator.truediv, ipyop=operator.itruediv, out="float", scalars=(2, -1.5, True, 0.0)),
    _B("true_divide", out="float"),
    _B("floor_divide", _no_bool, nonzero=True, zero_div=True, pyop=operator.floordiv, ipyop=operator.ifloordiv,
       scalars=(2, -1.5), differentiable=False),
    _B("remainder", _no_bool, nonzero=True, zero_div=True, pyop=operator.mod, ipyop=operator.imod,
       scalars=(2, -1.5, -3)),
    _B("fmod", _no_bool, nonzero=True, zero_div=True, scalars=(2, -1.5, -3)),
    _B("maximum", tensor_only=True, inplace=False), _B("minimum", tensor_only=True, inplace=False),
    _B("fmax", tensor_only=True), _B("fmin", tensor_only=True),
    _B("atan2", out="float", tensor_only=True, tol=_TRANSC_TOL),
    _B("hypot", _float_only, tensor_only=True),
    _B("copysign", out="float", scalars=(-1.0, 2, -0.0)),
    _B("nextafter", _float_only, tensor_only=True, differentiable=False),
    _B("logaddexp", _float_only, tensor_only=True, tol=_TRANSC_TOL, inplace=False),
    _B("xlogy", out="float", low=0.0, rlow=0.01, scalars=(2, 0.5)),
    _B("float_power", out="float64", low=0.1, rlow=-2, rhigh=2, scalars=(2, -0.5)),
    *[_B(n, out="bool", pyop=getattr(operator, n), ipyop=None, scalars=(2, -1.5, True, 2.0))
      for n in ("eq", "ne", "lt", "le", "gt", "ge")],
    *[_B(n, out="bool", tensor_only=True) for n in ("logical_and", "logical_or", "logical_xor")],
    _B("bitwise_and", _no_float, pyop=operator.and_, ipyop=operator.iand, scalars=(1, -1, True, 1.5)),
    _B("bitwise_or", _no_float, pyop=operator.or_, ipyop=operator.ior, scalars=(1, -1, True, 1.5)),
    _B("bitwise_xor", _no_float, pyop=operator.xor, ipyop=operator.ixor, scalars=(1, -1, True)),
    _B("bitwise_left_shift", _shift_rule, low=-8, high=8, rlow=0, rhigh=9, pyop=operator.lshift,
       ipyop=operator.ilshift, scalars=(1, 3, True, 1.5), rscalars=(1, 3)),
    _B("bitwise_right_shift", _shift_rule, low=-100, high=100, rlow=0, rhigh=9, pyop=operator.rshift,
       ipyop=operator.irshift, scalars=(1, 3, True), rscalars=(1, 64)),
]


def _pow_gen(dtype, rng):
    """pow: integer exponents stay >= 0 except in dedicated samples (torch: 2 ** -1 == 0 for ints)."""
    ints = dtype in INTLIKE
    lo, hi, elo, ehi = (-3, 3, 0, 3) if ints else (0.1, 3.0, -2.0, 2.0)
    if dtype == "uint8":
        lo = 0
    x = lambda shape, layout="contiguous": T(make(shape, dtype, rng, lo, hi), layout)  # noqa: E731
    e = lambda shape, layout="contiguous": T(make(shape, dtype, rng, elo, ehi), layout)  # noqa: E731
    if dtype == "bool":
        yield Sample((x((3,)), e((3,))), raises=NIE, name="bool ** bool")
    else:
        for shape in SHAPES:
            yield Sample((x(shape), e(shape)), name=f"{shape}")
        for sa, sb in BCAST:
            yield Sample((x(sa), e(sb)), name=f"bcast{sa}{sb}")
        yield Sample((x((4, 3), "transposed"), e((4, 3), "strided")), name="views")
        if dtype in FLOATS:
            base = T(make((4, 5), dtype, rng, -3, 3))
            exps = np.round(make((4, 5), dtype, rng, -3, 3).astype(np.float32)).astype(base.data.dtype)
            yield Sample((base, T(exps)), name="negative base, integral exponents")
            yield Sample((T(make((6,), dtype, rng, special=True)), T(make((6,), dtype, rng, special=True))),
                         name="nan-inf")
            yield Sample((T(np.array([0.0, -0.0, 0.0, 1.0, -1.0], dtype=base.data.dtype)),
                          T(np.array([-1.0, -1.0, 0.0, np.nan, np.inf], dtype=base.data.dtype))), name="edges")
        elif dtype != "uint8":
            yield Sample((T(np.array([0, -1, 2, -2, 1, -1, 3], dtype=dtype)),
                          T(np.array([-1, -1, -1, -3, -5, -2, 0], dtype=dtype))), name="negative integer exponents")
    for sc in (2, 0, 3, 0.5, -1.5, True, 2.0):
        r = _rt(dtype, sc)
        yield Sample((x((3, 2)), sc), raises=_pow_rule(r, dtype, sc), name=f"scalar exponent {sc!r}")
    if dtype in INTS:
        yield Sample((x((3, 2)), -1), raises=RuntimeError, name="negative int scalar exponent")
    elif dtype in FLOATS:
        yield Sample((x((3, 2)), -2), name="negative int scalar exponent")


def _pow_forms(dtype, rng):
    ints = dtype in INTLIKE
    e = T(make((3, 4), dtype, rng, 0 if ints else -2, 3 if ints else 2))
    for sc in (2, 2.5, -2, True):
        yield Sample(("rfn", sc, e), raises=_pow_rule(_rt(dtype, sc), sc, dtype), name=f"torch.pow({sc!r}, x)")
        yield Sample(("rop", sc, e), raises=_pow_rule(_rt(dtype, sc), sc, dtype), name=f"{sc!r} ** x")
    x = T(make((3, 4), dtype, rng, 0 if ints else 0.1, 3))
    same = NIE if dtype == "bool" else None
    yield Sample(("method", x, e), raises=same, name="x.pow(e)")
    yield Sample(("op", x, e), raises=same, name="x ** e")
    yield Sample(("inplace", x, e), raises=same, name="x.pow_(e)")
    yield Sample(("iop", x, e), raises=same, name="x **= e")
    yield Sample(("inplace", x, 2.5), raises=None if dtype in FLOATS else RuntimeError, name="x.pow_(2.5)")
    yield Sample(("inplace", x, 2), raises=RuntimeError if dtype == "bool" else None, name="x.pow_(2)")


def _pow_forms_fn(lib, form, a, b):
    if form == "rfn":
        return lib.pow(a, b)
    if form == "rop":
        return a ** b
    if form == "method":
        return a.pow(b)
    if form == "op":
        return a ** b
    if form == "iop":
        a **= b
        return a
    return a.pow_(b)


BINARY_OPS = []
for _b in BINARY:
    BINARY_OPS.append(OpInfo(_b.name, lambda lib, x, y, _n=_b.name: getattr(lib, _n)(x, y), _binary_gen(_b), ALL,
                             tol=_b.tol, differentiable=_b.differentiable))
    if _b.name not in ("true_divide", "fmax", "fmin", "nextafter"):
        BINARY_OPS.append(OpInfo(f"{_b.name} forms", _binary_forms_fn(_b.name, _b.pyop, _b.ipyop),
                                 _binary_forms_gen(_b), ALL, tol=_b.tol, differentiable=False))
BINARY_OPS += [
    OpInfo("pow", lambda lib, x, y: lib.pow(x, y), _pow_gen, ALL, tol={"float16": (2e-3, 2e-3)}),
    OpInfo("pow forms", _pow_forms_fn, _pow_forms, ALL, tol={"float16": (2e-3, 2e-3)}, differentiable=False),
]


# ---- div with rounding modes, add/sub with alpha -----------------------------------------------
def _div_mode_gen(mode):
    b = _B("div", _no_bool, nonzero=True, zero_div=True, scalars=(2, -1.5, 0.5, -3))
    plain = _binary_gen(b)

    def gen(dtype, rng):
        for s in plain(dtype, rng):
            yield Sample(s.args, {"rounding_mode": mode}, name=s.name, raises=s.raises)
        if dtype in FLOATS:
            yield Sample((T(np.array([7.0, -7.0, 7.0, -7.0, 0.5, -0.5], dtype=np_dtype(dtype))),
                          T(np.array([2.0, 2.0, -2.0, -2.0, 0.0, 0.0], dtype=np_dtype(dtype)))),
                         {"rounding_mode": mode}, name="signs and zero")
        elif dtype != "uint8" and dtype != "bool":
            num, den = np.array([7, -7, 7, -7, 6, -6], dtype=dtype), np.array([2, 2, -2, -2, 3, -3], dtype=dtype)
            yield Sample((T(num), T(den)), {"rounding_mode": mode}, name="signs")
        yield Sample((b.lhs((3,), dtype, rng), 2), {"rounding_mode": "round"}, raises=RuntimeError, name="bad mode")
    return gen


def _div_inplace_gen(dtype, rng):
    x = lambda shape=(3, 4), layout="contiguous": T(_data(shape, dtype, rng, nonzero=True), layout)  # noqa: E731
    for mode in ("floor", "trunc"):
        err = NIE if dtype == "bool" else None
        yield Sample((x((4, 3), "transposed"), x((3,))), {"rounding_mode": mode}, raises=err, name=f"{mode}")
        yield Sample((x(), -1.5), {"rounding_mode": mode}, raises=None if dtype in FLOATS else RuntimeError,
                     name=f"{mode}, float scalar")
    yield Sample((x(), x((4,))), {"rounding_mode": None}, raises=None if dtype in FLOATS else RuntimeError,
                 name="true division")


def _alpha_gen(op):
    def gen(dtype, rng):
        x = lambda shape=(3, 4): T(make(shape, dtype, rng))  # noqa: E731
        for alpha in (2, 0.5, True, 0, -1):
            if op == "sub" and dtype == "bool":
                yield Sample((x(), x()), {"alpha": alpha}, raises=RuntimeError, name=f"alpha={alpha!r}")
                continue
            err = None
            if isinstance(alpha, float) and dtype in INTLIKE:
                err = RuntimeError  # alpha must not be a float for integral tensors
            if isinstance(alpha, bool) and dtype != "bool":
                err = RuntimeError  # a bool alpha only for bool results
            yield Sample((x(), x((4,))), {"alpha": alpha}, raises=err, name=f"alpha={alpha!r}")
        if dtype in FLOATS:
            yield Sample((x(), 2), {"alpha": 0.5}, name="scalar other")
            yield Sample((x(), x(())), {"alpha": -2}, name="0-d other")
    return gen


BINARY_OPS += [
    # PyTorch's half-precision trunc division rounds the quotient to half first in its vectorized loop
    # but not in its scalar loop (tails, 0-d operands), so a quotient just below an integer can truncate
    # either way there: half dtypes compare to within 1
    OpInfo("div(rounding_mode='trunc')", lambda lib, x, y, **kw: lib.div(x, y, **kw), _div_mode_gen("trunc"), ALL,
           tol={"float16": (1e-3, 1.0), "bfloat16": (1.6e-2, 1.0)}),
    OpInfo("div(rounding_mode='floor')", lambda lib, x, y, **kw: lib.div(x, y, **kw), _div_mode_gen("floor"), ALL),
    OpInfo("div_(rounding_mode)", lambda lib, x, y, **kw: x.div_(y, **kw), _div_inplace_gen, ALL, differentiable=False),
    OpInfo("add(alpha)", lambda lib, x, y, **kw: lib.add(x, y, **kw), _alpha_gen("add"), ALL),
    OpInfo("sub(alpha)", lambda lib, x, y, **kw: lib.sub(x, y, **kw), _alpha_gen("sub"), ALL),
    OpInfo("add_(alpha)", lambda lib, x, y, **kw: x.add_(y, **kw),
           lambda d, rng: (s for s in _alpha_gen("add")(d, rng) if not isinstance(s.args[1], int)), FLOATS,
           differentiable=False),
]


# ---- ternary ops: where, lerp, clamp -----------------------------------------------------------
def _cond(shape, rng):
    return T(rng.random(shape) > 0.5)


def _where_gen(dtype, rng):
    x = lambda shape, layout="contiguous", special=False: T(make(shape, dtype, rng, special=special), layout)  # noqa: E731
    for shape in SHAPES:
        yield Sample((_cond(shape, rng), x(shape), x(shape)), name=f"{shape}")
    yield Sample((_cond((3, 1), rng), x((1, 4)), x(())), name="broadcast")
    yield Sample((_cond((2, 3, 4), rng), x((4,)), x((3, 1))), name="broadcast 3-d")
    yield Sample((T(rng.random((4, 3)) > 0.5, "transposed"), x((4, 3), "strided"), x((4, 3), "expanded")), name="views")
    yield Sample((_cond((), rng), x((2, 3)), x((2, 3))), name="0-d condition")
    if dtype in FLOATS:
        yield Sample((_cond((6,), rng), x((6,), special=True), x((6,))), name="nan-inf")
    for a, b in ((2, -1), (2.5, 0), (True, False), (1, True)):
        yield Sample((_cond((3, 2), rng), a, b), name=f"scalars {a!r}, {b!r}")
    for sc in (2, -1.5, True):
        yield Sample((_cond((3, 2), rng), x((3, 2)), sc), name=f"tensor, {sc!r}")
        yield Sample((_cond((3, 2), rng), sc, x((3, 2))), name=f"{sc!r}, tensor")
    yield Sample((_cond((3, 2), rng), x((3, 2)), T(make((3, 2), "float64", rng))), name="with float64")
    yield Sample((_cond((3, 2), rng), x((3, 2)), T(make((), "int32", rng))), name="with 0-d int32")
    yield Sample((T(make((3, 2), "int64", rng)), x((3, 2)), x((3, 2))), raises=RuntimeError, name="int64 condition")
    yield Sample((_cond((2, 3), rng), x((3, 2)), x((3, 2))), raises=RuntimeError, name="shape mismatch")


def _lerp_gen(dtype, rng):
    x = lambda shape, layout="contiguous", special=False: T(make(shape, dtype, rng, special=special), layout)  # noqa: E731
    if dtype not in FLOATS:
        yield Sample((x((3,)), x((3,)), 0.5), raises=NIE, name="integer lerp")
        return
    for shape in SHAPES:
        yield Sample((x(shape), x(shape), 0.3), name=f"{shape}")
    for w in (0.0, 0.7, 1.0, 2.0, -1.0, 1):
        yield Sample((x((3, 4)), x((3, 4)), w), name=f"weight {w!r}")
    yield Sample((x((3, 4)), x((4,)), T(make((3, 1), dtype, rng, 0, 1))), name="tensor weight, broadcast")
    yield Sample((x((4, 3), "transposed"), x((4, 3), "strided"), T(make((4, 3), dtype, rng, 0, 1))), name="views")
    yield Sample((x((3,)), x((3,)), T(make((), dtype, rng, 0, 1))), name="0-d weight")
    yield Sample((x((3, 1)), x((4,)), T(make((), "float64", rng, 0, 1))), name="0-d float64 weight")
    yield Sample((x((6,), special=True), x((6,)), 0.4), name="nan-inf")
    other = "float64" if dtype != "float64" else "float32"
    yield Sample((x((3,)), T(make((3,), other, rng)), 0.5), raises=RuntimeError, name="end of another dtype")
    yield Sample((x((3,)), x((3,)), T(make((3,), other, rng))), raises=RuntimeError, name="weight of another dtype")
    yield Sample((x((2, 3)), x((3, 2)), 0.5), raises=RuntimeError, name="shape mismatch")


def _clamp_gen(dtype, rng):
    x = lambda shape, layout="contiguous", special=False: T(make(shape, dtype, rng, special=special), layout)  # noqa: E731
    bad = NIE if dtype == "bool" else None
    for shape in SHAPES:
        yield Sample((x(shape),), {"min": -1, "max": 2}, name=f"{shape}")
    if dtype != "bool":
        yield Sample((x((4, 3), "transposed"),), {"min": 0}, name="min only")
        yield Sample((x((3, 4), "strided"),), {"max": 1}, name="max only")
        yield Sample((x((3, 4)),), {"min": 2, "max": 1}, name="min > max")
        yield Sample((x((3, 4)),), {"min": 0.5, "max": 2.5}, name="float bounds")
    else:
        yield Sample((x((3, 4)),), {"min": 0, "max": True}, name="bool, int bounds")
        yield Sample((x((3, 4)),), {"min": True, "max": True}, raises=NIE, name="bool bounds")
    lo, hi = T(make((3, 1), dtype, rng)), T(make((4,), dtype, rng))
    yield Sample((x((3, 4)), lo, hi), raises=bad, name="tensor bounds, broadcast")
    # a bool tensor clamps against one tensor bound (that is maximum/minimum), not two
    yield Sample((x((3, 1)), T(make((4,), dtype, rng))), name="tensor min grows the shape")
    yield Sample((x((3, 4)),), {"max": T(make((4,), dtype, rng))}, name="tensor max only")
    yield Sample((x((3, 4)), T(make((), "float64", rng)), None), name="0-d float64 min")
    yield Sample((x((3, 4)), T(make((3, 4), "float32", rng))), name="float32 tensor min")
    if dtype in FLOATS:
        yield Sample((x((6,), special=True),), {"min": -1.0, "max": 1.0}, name="nan-inf")
        yield Sample((x((3,)),), {"min": float("nan")}, name="nan bound")
    if dtype in ("int8", "uint8"):
        yield Sample((x((3,)),), {"min": 300}, raises=RuntimeError, name="bound out of range")
    if dtype == "float16":
        yield Sample((x((3,)),), {"min": 1e6}, raises=RuntimeError, name="bound out of range")
    yield Sample((x((3,)),), raises=RuntimeError, name="no bounds")


def _clamp_forms(dtype, rng):
    x = lambda: T(make((4, 3), dtype, rng), "transposed")  # noqa: E731
    bool_err = NIE if dtype == "bool" else None
    yield Sample(("clamp_min", x(), 0), raises=None, name="clamp_min")
    yield Sample(("clamp_max", x(), 1), raises=None, name="clamp_max")
    yield Sample(("clip", x(), -1, 1), name="clip")
    yield Sample(("method", x(), -1, 1), name="x.clamp")
    yield Sample(("clamp_", x(), 0, 1), raises=RuntimeError if dtype == "bool" else None, name="x.clamp_")
    yield Sample(("clamp_", x(), 0.5, 1), raises=None if dtype in FLOATS else RuntimeError, name="x.clamp_(float)")
    yield Sample(("clamp_", x(), T(make((3,), dtype, rng)), None), name="x.clamp_(tensor)")
    yield Sample(("clamp_", x(), T(make((3,), dtype, rng)), T(make((3,), dtype, rng))), raises=bool_err,
                 name="x.clamp_(tensor, tensor)")
    yield Sample(("clip_", x(), -1, 1), raises=RuntimeError if dtype == "bool" else None, name="x.clip_")


def _clamp_forms_fn(lib, form, x, *b):
    if form == "clamp_min":
        return lib.clamp_min(x, *b)
    if form == "clamp_max":
        return lib.clamp_max(x, *b)
    if form == "clip":
        return lib.clip(x, *b)
    if form == "method":
        return x.clamp(*b)
    r = getattr(x, form)(*b)
    assert r is x
    return r


TERNARY_OPS = [
    OpInfo("where", lambda lib, c, x, y: lib.where(c, x, y), _where_gen, ALL),
    OpInfo("Tensor.where", lambda lib, c, x, y: x.where(c, y) if hasattr(x, "where") else lib.where(c, x, y),
           _where_gen, ("float32", "int64", "bool")),
    OpInfo("lerp", lambda lib, a, b, w: lib.lerp(a, b, w), _lerp_gen, ALL, tol={"bfloat16": (2e-2, 3e-2)}),
    OpInfo("lerp_", lambda lib, a, b, w: a.lerp_(b, w),
           lambda d, rng: (s for s in _lerp_gen(d, rng) if s.name in ("(3, 4)", "weight 0.7", "views", "integer lerp")),
           ALL, differentiable=False),
    OpInfo("clamp", lambda lib, x, *a, **kw: lib.clamp(x, *a, **kw), _clamp_gen, ALL),
    OpInfo("clamp forms", _clamp_forms_fn, _clamp_forms, ALL, differentiable=False),
]


# ---- type promotion: every dtype pair, 0-d tensors and Python scalars --------------------------
def _promotion_gen(ops_dtypes=ALL, scalars=(2, 2.5, True), rule=_never, nonzero=False):
    def gen(_dtype, rng):
        def t(shape, d):
            return T(_data(shape, d, rng, 1, 3, nonzero=nonzero))
        for a in ops_dtypes:
            for b in ops_dtypes:
                yield Sample((t((3,), a), t((3,), b)), raises=rule(_rt(a, b), a, b), name=f"{a}[3] with {b}[3]")
                # a 0-d tensor counts only when its category is higher, and then with its own dtype
                r0 = a if _cat(b) <= _cat(a) else b
                yield Sample((t((3,), a), t((), b)), raises=rule(r0, a, b), name=f"{a}[3] with 0-d {b}")
                yield Sample((t((), a), t((), b)), raises=rule(_rt(a, b), a, b), name=f"0-d {a} with 0-d {b}")
            for sc in scalars:
                for shape in ((3,), ()):
                    yield Sample((t(shape, a), sc), raises=rule(_rt(a, sc), a, sc),
                                 name=f"{a}{list(shape)} with {sc!r}")
    return gen


PROMOTION_OPS = [
    OpInfo("promotion: mul", lambda lib, x, y: lib.mul(x, y), _promotion_gen(), ("float32",)),
    OpInfo("promotion: sub", lambda lib, x, y: lib.sub(x, y), _promotion_gen(NUMERIC, (2, 2.5)), ("float32",)),
    OpInfo("promotion: div", lambda lib, x, y: lib.div(x, y), _promotion_gen(), ("float32",)),
    OpInfo("promotion: eq", lambda lib, x, y: lib.eq(x, y), _promotion_gen(), ("float32",)),
    OpInfo("promotion: maximum", lambda lib, x, y: lib.maximum(x, y), _promotion_gen(scalars=()), ("float32",)),
    OpInfo("promotion: atan2", lambda lib, x, y: lib.atan2(x, y), _promotion_gen(scalars=()), ("float32",),
           tol=_TRANSC_TOL),
    OpInfo("promotion: bitwise_or", lambda lib, x, y: lib.bitwise_or(x, y), _promotion_gen(INTLIKE, (1, True)),
           ("float32",)),
    OpInfo("promotion: remainder", lambda lib, x, y: lib.remainder(x, y),
           _promotion_gen(NUMERIC, (2, 2.5), nonzero=True), ("float32",)),
    OpInfo("promotion: where", lambda lib, x, y: lib.where(lib.tensor([True, False, True], device=x.device)
                                                           if x.dim() else lib.tensor(False, device=x.device), x, y),
           _promotion_gen(), ("float32",)),
]

OPS = UNARY_OPS + BINARY_OPS + TERNARY_OPS + PROMOTION_OPS
