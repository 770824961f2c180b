"""Elementwise ops: arithmetic, comparison, logical and bitwise operators, and math functions.

Binary ops follow PyTorch's type promotion (``_dtype.result_type``) and broadcasting. The fast
path at the top of each binary op (two tensors, same dtype, shape and device) is the per-op
overhead every user pays, so it avoids everything but one backend call.
"""

from __future__ import annotations

import builtins

import numpy as np

from . import _dtype as dt
from ._shape import broadcast_shapes
from ._tensor import Tensor, method, run, same_device, wrap
from .backend.autodiff.graph import STATE as _AD_STATE

_EMPTY: dict = {}
# kinds of binary ops: FLOATOP promotes integers to the default float (atan2), FLOATONLY refuses
# them (hypot), TRUEDIV is div
ARITH, TRUEDIV, FLOATOP, CMP, LOGICAL, BITWISE, FLOATONLY = range(7)
_INT_RANGES = {d: (int(np.iinfo(d.np).min), int(np.iinfo(d.np).max)) for d in dt.INTEGRAL}
# Python ints that PyTorch accepts as scalars: int64 and uint64 values
_PY_INT_MIN, _PY_INT_END = -(2 ** 63), 2 ** 64


def _scalar_for(x, d: dt.dtype):
    """A Python scalar as the weak operand of an op computed in dtype ``d``."""
    if x.__class__ is bool or isinstance(x, (bool, np.bool_)):
        return bool(x) if d is dt.bool else int(x) if d.category == 1 else float(x)
    if d.category == 1 and isinstance(x, (int, np.integer)):
        lo, hi = _INT_RANGES[d]
        x = int(x)
        if not lo <= x <= hi:  # wrap like a C cast, as PyTorch does
            x = (x - lo) % (hi - lo + 1) + lo
        return x
    if d.category == 2:
        return float(x)
    return x


def _check_scalar(x, op):
    if not isinstance(x, (int, float, bool, np.generic)):
        raise TypeError(f"{op}(): expected a Tensor or a Python number, got {type(x).__name__}")
    if x.__class__ is int and not _PY_INT_MIN <= x < _PY_INT_END:
        raise OverflowError(f"{op}(): Python int {x} is too big to convert to a tensor scalar")


def cast(x: Tensor, d: dt.dtype) -> Tensor:
    """x converted to dtype ``d`` (x itself when it already has it)."""
    if x._dtype is d:
        return x
    return run("cast", (x,), {"dtype": d}, x._shape, d)


def _is_bool(x) -> bool:
    return x._dtype is dt.bool if isinstance(x, Tensor) else isinstance(x, (bool, np.bool_))


def _sub_check(op, d, a, b):
    if _is_bool(a) and _is_bool(b):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _no_bool_check(op, d, a, b):
    if d is dt.bool:
        raise dt.unsupported(op, d, "convert the operands to an integer dtype first")


def _pow_check(op, d, a, b):
    # bool ** bool has no kernel, but a bool tensor to a Python bool power is bool (PyTorch)
    if d is dt.bool and (isinstance(b, Tensor) or not isinstance(a, Tensor)):
        raise dt.unsupported(op, d)
    if d.category == 1 and not isinstance(b, Tensor) and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


def _bitwise_check(op, d, a, b):
    if d.is_floating_point:
        raise dt.unsupported(op, d, "bitwise ops need integer or bool tensors")


def _shift_check(op, d, a, b):
    if d.is_floating_point or d is dt.bool:
        raise dt.unsupported(op, d, "shifts need integer tensors")


def _float_check(op, d, a, b):
    if not d.is_floating_point:
        raise dt.unsupported(op, d, "convert the operands to a floating dtype first")


# PyTorch's refusals that depend on the computation dtype; fn(op, dtype, a, b) raises
_CHECKS = {
    "sub": _sub_check, "floor_divide": _no_bool_check, "remainder": _no_bool_check, "fmod": _no_bool_check,
    "pow": _pow_check, "bitwise_and": _bitwise_check, "bitwise_or": _bitwise_check,
    "bitwise_xor": _bitwise_check, "bitwise_left_shift": _shift_check, "bitwise_right_shift": _shift_check,
    "hypot": _float_check, "nextafter": _float_check,
}


def _out_dtype(kind: int, d: dt.dtype) -> dt.dtype:
    """The result dtype of a binary op of ``kind`` computed in ``d``."""
    if kind == CMP or kind == LOGICAL:
        return dt.bool
    if (kind == TRUEDIV or kind == FLOATOP) and not d.is_floating_point:
        return dt.get_default_dtype()
    return d


def _array_operand(x, other):
    """A numpy array operand as a tensor on the other operand's device (anything else passes through)."""
    if x.__class__ is not np.ndarray:
        return x
    from ._creation import as_tensor
    return as_tensor(x, device=other._device if isinstance(other, Tensor) else None)


def _binary_slow(op: str, kind: int, a, b):
    if a.__class__ is np.ndarray or b.__class__ is np.ndarray:  # np_array + tensor: the array acts as a tensor
        a, b = _array_operand(a, b), _array_operand(b, a)
    ta, tb = a.__class__ is Tensor or isinstance(a, Tensor), b.__class__ is Tensor or isinstance(b, Tensor)
    if not ta:
        if not tb:
            raise TypeError(f"{op}(): at least one argument must be a Tensor, got "
                            f"{type(a).__name__} and {type(b).__name__}")
        _check_scalar(a, op)
    if not tb:
        _check_scalar(b, op)
    if ta and tb:
        device = same_device(op, a, b)
        shape = broadcast_shapes(a._shape, b._shape) if a._shape != b._shape else a._shape
    else:
        t = a if ta else b
        device, shape = t._device, t._shape
    d = dt.result_type(a, b)
    check = _CHECKS.get(op)
    if check is not None:
        check(op, d, a, b)
    if kind == LOGICAL:
        ins = (a if ta else bool(a), b if tb else bool(b))
        out_dtype = dt.bool
    else:
        if (kind == TRUEDIV or kind == FLOATOP) and not d.is_floating_point:
            d = dt.get_default_dtype()
        ins = (cast(a, d) if ta else _scalar_for(a, d), cast(b, d) if tb else _scalar_for(b, d))
        out_dtype = dt.bool if kind == CMP else d
    h = device.backend.run(op, tuple(x._h if isinstance(x, Tensor) else x for x in ins), _EMPTY)
    return wrap(h, shape, out_dtype, device)


_SCALAR_FAST = frozenset({"add", "sub", "mul", "div", "maximum", "minimum"})


def _make_binary(op: str, kind: int, doc: str):
    if kind == ARITH or kind == TRUEDIV:
        scalar_fast = op in _SCALAR_FAST

        def fn(input, other):
            # the fast paths below are the per-op overhead every user pays: keep them minimal
            ci, co = input.__class__, other.__class__
            if ci is Tensor:
                d = input._dtype
                if co is Tensor:
                    if d is other._dtype and input._shape == other._shape and input._device is other._device \
                            and (d.category == 2 or (kind == ARITH and d is not dt.bool)):
                        return wrap(input._device.backend.run(op, (input._h, other._h), _EMPTY),
                                    input._shape, d, input._device)
                elif scalar_fast and (co is float or co is int) and d.category == 2:
                    return wrap(input._device.backend.run(op, (input._h, float(other)), _EMPTY),
                                input._shape, d, input._device)
            elif scalar_fast and co is Tensor and (ci is float or ci is int) and other._dtype.category == 2:
                return wrap(other._device.backend.run(op, (float(input), other._h), _EMPTY),
                            other._shape, other._dtype, other._device)
            return _binary_slow(op, kind, input, other)
    else:
        def fn(input, other):
            return _binary_slow(op, kind, input, other)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = doc
    return fn


def _check_inplace(op: str, self: Tensor, out: dt.dtype, other=None):
    """In-place ops keep self's dtype and shape: the result must cast back and must not grow."""
    if not dt.can_cast(out, self._dtype):
        raise RuntimeError(f"{op}: result type {out.name.capitalize()} can't be cast to the desired output "
                           f"type {self._dtype.name.capitalize()}")
    if isinstance(other, Tensor):
        same_device(op, self, other)
        if other._shape != self._shape and broadcast_shapes(self._shape, other._shape) != self._shape:
            raise RuntimeError(f"{op}: output with shape {list(self._shape)} doesn't match the "
                               f"broadcast shape {list(broadcast_shapes(self._shape, other._shape))}")


def _inplace(op: str, kind: int):
    fn_out = _BINARY[op]

    def fn(self: Tensor, other):
        if not isinstance(other, Tensor):
            _check_scalar(other, op + "_")
        d = dt.result_type(self, other)
        _check_inplace(op + "_", self, _out_dtype(kind, d), other)
        backend = self._device.backend
        if d is self._dtype and kind == ARITH and backend.supports(op + "_") and not (
                self._base is not None and tracks_grad(self, other, self._base)):
            check = _CHECKS.get(op)
            if check is not None:
                check(op + "_", d, self, other)
            o = other._h if isinstance(other, Tensor) and other._dtype is d else (
                cast(other, d)._h if isinstance(other, Tensor) else _scalar_for(other, d))
            self._h = _write(backend, op + "_", (self._h, o))
        else:
            assign_(self, fn_out(self, other))
        return self
    fn.__name__ = op + "_"
    return fn


def _inplace_of(fn, name: str):
    """The in-place form of a composite ``fn(self, *args)``: compute, check the cast, write back."""
    def inplace(self: Tensor, *args, **kwargs):
        # a gradient rule of fn may keep self's old value, which the write below destroys: give fn a
        # copy when autodiff records (PyTorch saves a copy of self for such in-place ops too)
        src = self.clone() if tracks_grad(self, *args, *kwargs.values()) else self
        r = fn(src, *args, **kwargs)
        _check_inplace(name, self, r._dtype, r)
        assign_(self, r)
        return self
    inplace.__name__ = name
    inplace.__doc__ = f"In-place {fn.__name__}: writes the result into self."
    return inplace


def _write(backend, op, inputs, attrs=_EMPTY):
    try:
        return backend.run(op, inputs, attrs)
    except ValueError as e:
        if "read-only" in str(e):
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor "
                               "refers to a single memory location (an expanded tensor). Please clone() "
                               "the tensor before performing the operation.") from None
        raise




def assign_(dst: Tensor, src) -> Tensor:
    """Write ``src`` (tensor broadcastable to dst, or scalar) into ``dst``'s memory."""
    if isinstance(src, Tensor):
        same_device("copy_", dst, src)
        if src._shape != dst._shape:
            broadcast_shapes(dst._shape, src._shape)
            if broadcast_shapes(dst._shape, src._shape) != dst._shape:
                raise RuntimeError(f"copy_: source of shape {list(src._shape)} can't be broadcast to "
                                   f"destination shape {list(dst._shape)}")
        s = src._h
    else:
        _check_scalar(src, "fill_")
        s = _scalar_for(src, dst._dtype)
    if dst._base is not None and tracks_grad(dst, src, dst._base):
        _copy_slices(dst, src)
        return dst
    dst._h = _write(dst._device.backend, "assign", (dst._h, s))
    return dst


def tracks_grad(*items) -> bool:
    """True when autodiff must record a write involving these tensors (grad mode on, and one of
    them requires grad on a stack with Autodiff)."""
    if not _AD_STATE.grad_enabled:
        return False
    for t in items:
        if isinstance(t, Tensor):
            rg = getattr(t._device.backend, "requires_grad", None)
            if rg is not None and rg(t._h):
                return True
    return False


def zero_grad_from(out: Tensor, *sources) -> Tensor:
    """``out`` unchanged, recorded as depending on each tensor in ``sources`` (each broadcastable to
    out) with a zero gradient flowing back through it. For values PyTorch computes while ignoring
    an input that its gradient formula still reaches (addmm with beta=0, rounded division), so
    those inputs get a gradient (zeros, or NaN where the formula multiplies NaN by zero) as there.
    """
    for src in sources:
        if isinstance(src, Tensor) and tracks_grad(src):
            from ._creation import zeros
            never = zeros((), dtype=dt.bool, device=out._device)
            out = run("where", (never, cast(src, out._dtype), out), _EMPTY, out._shape, out._dtype)
    return out


def _copy_slices(dst: Tensor, src) -> None:
    """A recorded write into a view: rebuild the whole base functionally (as_strided_scatter), make
    that the base's new value and history, and re-derive the view from it (PyTorch's CopySlices)."""
    base = dst._base
    b = dst._device.backend
    if not base.is_contiguous() or base.storage_offset() != 0:
        raise RuntimeError("an in-place write into a view of a non-contiguous tensor that requires grad is not "
                           "supported: make the base contiguous (.contiguous()) before taking the view")
    geometry = {"size": dst._shape, "stride": tuple(dst.stride()), "storage_offset": dst.storage_offset()}
    if isinstance(src, Tensor):
        value = cast(src, dst._dtype)
        if value._shape != dst._shape:
            value = value.expand(dst._shape)
    else:
        from ._creation import full
        value = full(dst._shape, src, dtype=dst._dtype, device=dst._device)
    new_base = run("as_strided_scatter", (base, value), geometry, base._shape, base._dtype)
    base._h = _write(b, "assign", (base._h, new_base._h))
    dst._h = b.run("as_strided", (base._h,), geometry)


_BINARY_SPECS = {
    "add": (ARITH, "a + b, elementwise with broadcasting."),
    "sub": (ARITH, "a - b."), "mul": (ARITH, "a * b."),
    "div": (TRUEDIV, "True division a / b (integers give the default float dtype)."),
    "floor_divide": (ARITH, "a // b, rounded toward negative infinity."),
    "remainder": (ARITH, "Python-style modulus: the result has the sign of the divisor."),
    "fmod": (ARITH, "C-style modulus: the result has the sign of the dividend."),
    "pow": (ARITH, "a ** b."),
    "maximum": (ARITH, "Elementwise max; NaN propagates."), "minimum": (ARITH, "Elementwise min; NaN propagates."),
    "fmax": (ARITH, "Elementwise max ignoring NaN."), "fmin": (ARITH, "Elementwise min ignoring NaN."),
    "atan2": (FLOATOP, "atan(a / b) with the quadrant of (b, a)."),
    "hypot": (FLOATONLY, "sqrt(a² + b²) without overflow."),
    "copysign": (FLOATOP, "|a| with the sign of b."),
    "nextafter": (FLOATONLY, "The next float after a toward b."),
    "eq": (CMP, "a == b"), "ne": (CMP, "a != b"), "lt": (CMP, "a < b"), "le": (CMP, "a <= b"),
    "gt": (CMP, "a > b"), "ge": (CMP, "a >= b"),
    "logical_and": (LOGICAL, "Logical and (nonzero is true)."),
    "logical_or": (LOGICAL, "Logical or."), "logical_xor": (LOGICAL, "Logical xor."),
    "bitwise_and": (BITWISE, "a & b"), "bitwise_or": (BITWISE, "a | b"), "bitwise_xor": (BITWISE, "a ^ b"),
    "bitwise_left_shift": (BITWISE, "a << b"), "bitwise_right_shift": (BITWISE, "a >> b"),
}
_BINARY = {op: _make_binary(op, kind, doc) for op, (kind, doc) in _BINARY_SPECS.items()}
globals().update(_BINARY)

for _op, (_kind, _doc) in _BINARY_SPECS.items():
    setattr(Tensor, _op, _BINARY[_op])
    setattr(Tensor, _op + "_", _inplace(_op, _kind))


def _scaled(op: str, input, other, alpha):
    """``alpha * other`` for add/sub, with PyTorch's rules for alpha's type."""
    d = dt.result_type(input, other)
    if isinstance(alpha, (bool, np.bool_)):
        if d is not dt.bool:
            raise RuntimeError(f"{op}: Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, (float, np.floating)) and not d.is_floating_point:
        raise RuntimeError(f"{op}: For integral input tensors, argument alpha must not be a floating point number.")
    if d is dt.bool:  # alpha * other in bool: other if alpha is nonzero, else False
        return other if alpha else False
    if not isinstance(other, Tensor):
        return other * alpha
    return _BINARY["mul"](cast(other, d), _scalar_for(alpha, d))


def add(input, other, *, alpha=1):  # noqa: F811 - adds alpha to the generated op
    """input + alpha * other, elementwise with broadcasting.

    >>> ember.add(ember.tensor([1, 2]), ember.tensor([10, 20]), alpha=2)
    tensor([41, 42])
    """
    if alpha.__class__ is not int or alpha != 1:
        other = _scaled("add", input, other, alpha)
    return _BINARY["add"](input, other)


def sub(input, other, *, alpha=1):  # noqa: F811
    """input - alpha * other; bool tensors refuse subtraction, as in PyTorch."""
    if alpha.__class__ is not int or alpha != 1:
        if _is_bool(input) or _is_bool(other):
            _sub_check("sub", None, input, other)
        other = _scaled("sub", input, other, alpha)
    return _BINARY["sub"](input, other)


def div(input, other, *, rounding_mode: str | None = None):  # noqa: F811
    """input / other; rounding_mode None (true division), 'trunc' or 'floor'.

    >>> ember.div(ember.tensor([-7, 7]), 2, rounding_mode="trunc")
    tensor([-3,  3])
    """
    if rounding_mode is None:
        return _BINARY["div"](input, other)
    if rounding_mode == "floor":
        return _BINARY["floor_divide"](input, other)
    if rounding_mode != "trunc":
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"{rounding_mode!r}")
    d = dt.result_type(input, other)
    if d.is_floating_point:
        if tracks_grad(input, other):
            # PyTorch's gradient of rounded division is zero; chaining trunc's zero through div's
            # rule would make 0 / 0 = NaN where other is 0, so record a zero gradient directly
            a = input.detach() if isinstance(input, Tensor) else input
            b = other.detach() if isinstance(other, Tensor) else other
            return zero_grad_from(trunc(_BINARY["div"](a, b)), input, other)  # noqa: F821
        return trunc(_BINARY["div"](input, other))  # noqa: F821
    if d is dt.bool:
        raise dt.unsupported("div(rounding_mode='trunc')", d)
    # integers: floor division, plus one where the signs differ and the division is inexact
    a, b = _as_tensor(input, d, other), _as_tensor(other, d, input)
    q = _BINARY["floor_divide"](a, b)
    if not d.is_signed:
        return q
    inexact = _BINARY["ne"](_BINARY["fmod"](a, b), 0)
    signs_differ = _BINARY["ne"](_BINARY["lt"](a, 0), _BINARY["lt"](b, 0))
    return where(logical_and(inexact, signs_differ), _BINARY["add"](q, 1), q)  # noqa: F821


def _as_tensor(x, d: dt.dtype, ref: Tensor) -> Tensor:
    """x as a tensor of dtype d (a 0-d tensor on ref's device for a Python scalar)."""
    if isinstance(x, Tensor):
        return cast(x, d)
    from ._creation import full
    return full((), _scalar_for(x, d), device=ref._device, dtype=d)


def _add_(self, other, *, alpha=1):
    if alpha.__class__ is not int or alpha != 1:
        other = _scaled("add_", self, other, alpha)
    return _BINARY_INPLACE["add"](self, other)


def _sub_(self, other, *, alpha=1):
    if alpha.__class__ is not int or alpha != 1:
        if _is_bool(self) or _is_bool(other):
            _sub_check("sub_", None, self, other)
        other = _scaled("sub_", self, other, alpha)
    return _BINARY_INPLACE["sub"](self, other)


def _div_(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return _BINARY_INPLACE["div"](self, other)
    return _inplace_of(div, "div_")(self, other, rounding_mode=rounding_mode)


_BINARY_INPLACE = {op: getattr(Tensor, op + "_") for op in _BINARY_SPECS}
Tensor.add, Tensor.sub, Tensor.div = add, sub, div
Tensor.add_, Tensor.sub_, Tensor.div_ = _add_, _sub_, _div_
multiply, subtract, divide, true_divide = mul, sub, div, div  # noqa: F821 - from globals().update
Tensor.multiply, Tensor.subtract, Tensor.divide, Tensor.true_divide = mul, sub, div, div  # noqa: F821
Tensor.mul_, Tensor.multiply_ = Tensor.mul_, Tensor.mul_
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne  # noqa: F821
Tensor.greater, Tensor.greater_equal, Tensor.less, Tensor.less_equal, Tensor.not_equal = gt, ge, lt, le, ne  # noqa: F821


# ---- Python operators -------------------------------------------------------------------------
def _reflect(fn):
    return lambda self, other: fn(other, self)


# Python operator name -> op; each gets the plain, reflected (__r*__) and augmented (__i*__) forms
_OPERATORS = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
              "mod": "remainder", "pow": "pow", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
              "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift"}
for _py, _op in _OPERATORS.items():
    setattr(Tensor, f"__{_py}__", _BINARY[_op])
    setattr(Tensor, f"__r{_py}__", _reflect(_BINARY[_op]))
    setattr(Tensor, f"__i{_py}__", _BINARY_INPLACE[_op])


def _comparison_operator(fn):
    # ``x == None`` or ``x == "a"`` is False (and ``!=`` True), as in PyTorch: Python falls back to
    # identity when both sides answer NotImplemented
    def op(self, other):
        if other.__class__ is Tensor or isinstance(other, (Tensor, int, float, np.generic, np.ndarray)):
            return fn(self, other)
        return NotImplemented
    op.__name__ = fn.__name__
    return op


Tensor.__eq__ = _comparison_operator(_BINARY["eq"])
Tensor.__ne__ = _comparison_operator(_BINARY["ne"])
Tensor.__lt__, Tensor.__le__ = _BINARY["lt"], _BINARY["le"]
Tensor.__gt__, Tensor.__ge__ = _BINARY["gt"], _BINARY["ge"]
Tensor.__hash__ = lambda self: id(self)  # defining __eq__ would otherwise drop hashing


# ---- unary ops --------------------------------------------------------------------------------
FLOAT_UNARY = ("exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin",
               "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
               "atanh", "erf", "erfc", "erfinv", "sigmoid", "lgamma", "digamma", "reciprocal")
SAME_UNARY = ("neg", "abs", "square", "sign")
ROUNDING = ("floor", "ceil", "trunc")
PREDICATES = ("isnan", "isinf", "isfinite", "signbit")


def _make_unary(op: str):
    if op in FLOAT_UNARY:
        def fn(input):
            d = input._dtype
            x = input
            if not d.is_floating_point:
                d = dt.get_default_dtype()
                x = cast(input, d)
            return wrap(x._device.backend.run(op, (x._h,), _EMPTY), x._shape, d, x._device)
    elif op in ROUNDING:
        def fn(input):
            d = input._dtype
            if not d.is_floating_point:
                if d is dt.bool:
                    raise dt.unsupported(op, d)
                return input.clone()  # integers are already whole
            return wrap(input._device.backend.run(op, (input._h,), _EMPTY), input._shape, d, input._device)
    elif op in PREDICATES:
        def fn(input):
            if not input._dtype.is_floating_point:
                if op == "signbit" and input._dtype.is_signed:
                    return _BINARY["lt"](input, 0)
                from ._creation import full
                return full(input._shape, op == "isfinite", dtype=dt.bool, device=input._device)
            return wrap(input._device.backend.run(op, (input._h,), _EMPTY), input._shape, dt.bool, input._device)
    else:
        def fn(input):
            d = input._dtype
            x = input
            if d is dt.bool:
                if op == "neg":
                    raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                                       "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
                if op == "abs":
                    raise dt.unsupported(op, d)
                if op == "square":  # PyTorch squares bools as int64
                    d = dt.int64
                    x = cast(input, d)
            return wrap(x._device.backend.run(op, (x._h,), _EMPTY), x._shape, d, x._device)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Elementwise {op}."
    return fn


_UNARY = {op: _make_unary(op) for op in FLOAT_UNARY + SAME_UNARY + ROUNDING + PREDICATES}
globals().update(_UNARY)
for _op in _UNARY:
    setattr(Tensor, _op, _UNARY[_op])
    if _op not in PREDICATES:
        setattr(Tensor, _op + "_", _inplace_of(_UNARY[_op], _op + "_"))
absolute, negative, arcsin, arccos, arctan = abs, neg, asin, acos, atan  # noqa: F821
arcsinh, arccosh, arctanh, arctan2 = asinh, acosh, atanh, atan2  # noqa: F821
Tensor.absolute, Tensor.negative, Tensor.arctan2 = abs, neg, atan2  # noqa: F821
Tensor.__neg__ = neg  # noqa: F821
Tensor.__abs__ = abs  # noqa: F821


@method
def logical_not(input: Tensor) -> Tensor:
    """Elementwise not (nonzero is true); returns bool."""
    return run("logical_not", (input,), _EMPTY, input._shape, dt.bool)


@method
def bitwise_not(input: Tensor) -> Tensor:
    """~x for integer and bool tensors (bool: logical not)."""
    if input._dtype.is_floating_point:
        raise dt.unsupported("bitwise_not", input._dtype, "bitwise ops need integer or bool tensors")
    return run("bitwise_not", (input,), _EMPTY, input._shape, input._dtype)


def _invert(self: Tensor) -> Tensor:
    if self._dtype.is_floating_point:  # PyTorch's ~ raises TypeError for floats (bitwise_not: NotImplemented)
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(self)


Tensor.__invert__ = _invert


@method
def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001
    """Round half to even; ``decimals`` rounds to that many decimal places (negative: tens...).

    >>> ember.round(ember.tensor([0.5, 1.5, 1.25]), decimals=1)
    tensor([0.5000, 1.5000, 1.2000])
    """
    d = input._dtype
    if not d.is_floating_point:
        if d is dt.bool or decimals:
            raise dt.unsupported("round" if not decimals else "round(decimals)", d)
        return input.clone()
    if decimals:
        return run("round_decimals", (input,), {"decimals": int(decimals)}, input._shape, d)
    return run("round", (input,), _EMPTY, input._shape, d)


@method
def frac(input: Tensor) -> Tensor:
    """x - trunc(x), for floating tensors (the sign follows x).

    >>> ember.frac(ember.tensor([-1.5, 2.25]))
    tensor([-0.5000,  0.2500])
    """
    if not input._dtype.is_floating_point:
        raise dt.unsupported("frac", input._dtype)
    return input - trunc(input)  # noqa: F821


@method
def positive(input: Tensor) -> Tensor:
    """input itself (``+x``); refused for bool tensors, as in PyTorch."""
    if input._dtype is dt.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


Tensor.__pos__ = positive


@method
def sgn(input: Tensor) -> Tensor:
    """sign(x) (for real tensors the same as :func:`sign`)."""
    return sign(input)  # noqa: F821


@method
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """Replace NaN with ``nan`` and ±inf with the dtype's extremes (or the given values).

    >>> ember.nan_to_num(ember.tensor([float("nan"), float("inf")]), posinf=9.0)
    tensor([0., 9.])
    """
    if not input._dtype.is_floating_point:
        return input.clone()
    info = dt.finfo(input._dtype)
    attrs = {"nan": float(nan), "posinf": info.max if posinf is None else float(posinf),
             "neginf": info.min if neginf is None else float(neginf)}
    return run("nan_to_num", (input,), attrs, input._shape, input._dtype)


for _f in (logical_not, bitwise_not, round, frac, sgn, nan_to_num):
    setattr(Tensor, _f.__name__ + "_", _inplace_of(_f, _f.__name__ + "_"))


# ---- clamp, where, lerp ---------------------------------------------------------------------
def _bound_for(v, d: dt.dtype):
    """A Python clamp bound in dtype d; PyTorch refuses values d can't hold."""
    _check_scalar(v, "clamp")
    if d.category == 1 and not isinstance(v, bool):
        lo, hi = _INT_RANGES[d]
        if not (lo if d.is_signed else -hi) <= v <= hi:  # unsigned types take negatives that wrap
            raise RuntimeError(f"clamp: value {v} cannot be converted to type {d.name} without overflow")
    elif d.category == 2 and v == v and v not in (float("inf"), float("-inf")) and builtins.abs(v) > dt.finfo(d).max:
        raise RuntimeError(f"clamp: value {v} cannot be converted to type {d.name} without overflow")
    return _scalar_for(v, d)


@method
def clamp(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    """Limit values to [min, max] (tensors or numbers); min > max gives max, like PyTorch.

    >>> ember.clamp(ember.tensor([-2, 0, 5]), min=-1, max=3)
    tensor([-1,  0,  3])
    """
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    d = dt.result_type(*(v for v in (input, min, max) if v is not None))
    if d is dt.bool and (min is not None and max is not None or not isinstance(min if max is None else max, Tensor)):
        raise dt.unsupported("clamp", d, "bool tensors clamp only against one tensor bound")
    shape = broadcast_shapes(*(v._shape for v in (input, min, max) if isinstance(v, Tensor)))
    ins = [cast(input, d)]
    for v in (min, max):
        if v is None:
            ins.append(None)
        elif isinstance(v, Tensor):
            same_device("clamp", input, v)
            ins.append(cast(v, d))
        else:
            ins.append(_bound_for(v, d))
    return run("clamp", tuple(ins), _EMPTY, shape, d, input._device)


@method
def clamp_min(input: Tensor, min) -> Tensor:  # noqa: A002
    """clamp(input, min=min)."""
    return clamp(input, min=min)


@method
def clamp_max(input: Tensor, max) -> Tensor:  # noqa: A002
    """clamp(input, max=max)."""
    return clamp(input, max=max)


clip = clamp
Tensor.clip = clamp
clamp_ = _inplace_of(clamp, "clamp_")
Tensor.clamp_ = Tensor.clip_ = clamp_
Tensor.clamp_min_ = _inplace_of(clamp_min, "clamp_min_")
Tensor.clamp_max_ = _inplace_of(clamp_max, "clamp_max_")


def where(condition: Tensor, input=None, other=None) -> Tensor:
    """Elements of ``input`` where ``condition`` holds, else of ``other`` (tensors or numbers).
    With only a condition, returns ``nonzero(condition, as_tuple=True)``.

    >>> ember.where(ember.tensor([True, False]), 1.0, 0)
    tensor([1., 0.])
    """
    if input is None and other is None:
        from ._indexing import nonzero
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError("where(): condition must be a bool Tensor")
    if condition._dtype is not dt.bool:
        if condition._dtype is not dt.uint8:  # PyTorch still takes uint8 masks (deprecated)
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{condition._dtype.name}")
        condition = cast(condition, dt.bool)
    for v in (input, other):
        if not isinstance(v, Tensor):
            _check_scalar(v, "where")
    d = dt.result_type(input, other)
    tensors = [v for v in (condition, input, other) if isinstance(v, Tensor)]
    device = same_device("where", *tensors)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        # two numbers: one becomes a 0-d tensor of the result dtype, so the backend's select has a
        # typed operand (numpy would answer float64 for 2.5 where ember's result is float32)
        from ._creation import full
        values = (full((), input, dtype=d, device=device), other)
    else:
        values = (input, other)
    shape = broadcast_shapes(*(v._shape for v in tensors))
    ins = (condition,) + tuple(cast(v, d) if isinstance(v, Tensor) else _scalar_for(v, d) for v in values)
    return run("where", ins, _EMPTY, shape, d, device)


def _tensor_where(self: Tensor, condition: Tensor, other) -> Tensor:
    """x.where(condition, other): x where condition holds, else other."""
    return where(condition, self, other)


Tensor.where = _tensor_where


@method
def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """input + weight * (end - input) for floating tensors; ``weight`` a number or a tensor.

    >>> ember.lerp(ember.tensor([0.0, 10.0]), ember.tensor([10.0, 20.0]), 0.25)
    tensor([ 2.5000, 12.5000])
    """
    d = input._dtype
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp(): argument 'end' must be a Tensor, not {type(end).__name__}")
    if not d.is_floating_point:
        raise dt.unsupported("lerp", d)
    if end._dtype is not d:
        raise RuntimeError(f"lerp: expected dtype {d.name} for `end` but got dtype {end._dtype.name}")
    tensors = [input, end]
    if isinstance(weight, Tensor):
        if weight._dtype is not d and weight._shape:  # a 0-d weight of another dtype is converted
            raise RuntimeError(f"lerp: expected dtype {d.name} for `weight` but got dtype {weight._dtype.name}")
        weight = cast(weight, d)
        tensors.append(weight)
    else:
        _check_scalar(weight, "lerp")
        weight = float(weight)
    device = same_device("lerp", *tensors)
    shape = broadcast_shapes(*(t._shape for t in tensors))
    if device.backend.supports("lerp"):
        return run("lerp", (input, end, weight), _EMPTY, shape, d, device)
    return _lerp_composite(input, end, weight)


def _lerp_composite(start: Tensor, end: Tensor, weight) -> Tensor:
    # PyTorch's formula (exact at weight 0 and 1), in float32 for half-precision inputs
    d = start._dtype
    work = dt.float32 if d.itemsize < 4 else d
    a, b = cast(start, work), cast(end, work)
    w = cast(weight, work) if isinstance(weight, Tensor) else weight
    diff = b - a
    if isinstance(w, Tensor):
        r = where(abs(w) < 0.5, a + w * diff, b - diff * (1 - w))  # noqa: F821
    else:
        r = a + w * diff if builtins.abs(w) < 0.5 else b - diff * (1 - w)
    return cast(r, d)


Tensor.lerp_ = _inplace_of(lerp, "lerp_")


# ---- composites of the binary ops -----------------------------------------------------------
def _float_operands(op: str, input, other, d: dt.dtype | None = None):
    """Both operands as tensors/scalars of the op's floating computation dtype."""
    d = d or dt.result_type(input, other)
    if not d.is_floating_point:
        d = dt.get_default_dtype()
    ref = input if isinstance(input, Tensor) else other
    return _as_tensor(input, d, ref), _as_tensor(other, d, ref), d


@method
def float_power(input, exponent) -> Tensor:
    """pow computed in float64, whatever the input dtypes."""
    a = cast(input, dt.float64) if isinstance(input, Tensor) else float(input)
    b = cast(exponent, dt.float64) if isinstance(exponent, Tensor) else float(exponent)
    return _BINARY["pow"](a, b)


def _float_power_(self: Tensor, exponent) -> Tensor:
    if self._dtype is not dt.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {self._dtype.name} but the operation's "
                           "result requires dtype float64")
    return _inplace_of(float_power, "float_power_")(self, exponent)


Tensor.float_power_ = _float_power_


@method
def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """log(exp(a) + exp(b)) without overflow, for floating tensors."""
    d = dt.result_type(input, other)
    if not d.is_floating_point:
        raise dt.unsupported("logaddexp", d)
    a, b = cast(input, d), cast(other, d)
    device = same_device("logaddexp", a, b)
    if device.backend.supports("logaddexp"):
        return run("logaddexp", (a, b), _EMPTY, broadcast_shapes(a._shape, b._shape), d, device)
    work = dt.float32 if d.itemsize < 4 else d
    a, b = cast(a, work), cast(b, work)
    m = _BINARY["maximum"](a, b)
    r = m + log1p(exp(-abs(a - b)))  # noqa: F821
    return cast(where(logical_and(isinf(a), _BINARY["eq"](a, b)), a, r), d)  # noqa: F821


@method
def xlogy(input, other) -> Tensor:
    """x * log(y), and 0 where x == 0 (unless y is NaN)."""
    a, b, d = _float_operands("xlogy", input, other)
    backend = a._device.backend
    if backend.supports("xlogy"):  # one op, whose gradient is PyTorch's (the composite's is NaN at x == 0)
        return run("xlogy", (a, b), _EMPTY, broadcast_shapes(a._shape, b._shape), d)
    r = _BINARY["mul"](a, log(b))  # noqa: F821
    return where(logical_and(_BINARY["eq"](a, 0), logical_not(isnan(b))), 0.0, r)  # noqa: F821


Tensor.xlogy_ = _inplace_of(xlogy, "xlogy_")


@method
def true_divide_(self, other):
    return self.div_(other)
