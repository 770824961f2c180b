"""Which ops Fusion records lazily, and how each elementwise op reads in the cube kernel language.

An elementwise op is fusible when its dtype is one cube computes exactly like the numpy backend
(float32, float64, int32, int64, bool) and its formula below matches the backend's semantics; every
other op is a sync point run on the inner backend. Formulas take the argument expressions (already
of the op's computation type) and the cube type name of the result's computation.
"""

from __future__ import annotations

import numpy as np

from .graph import FH

# ember dtype (numpy dtype) -> cube scalar type name; 16-bit floats, small ints and complex stay unfused
CUBE_TYPE = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.int32): "i32",
             np.dtype(np.int64): "i64", np.dtype(np.bool_): "bool_"}
FLOAT_TYPES = ("f32", "f64")
INT_TYPES = ("i32", "i64")

# unary float math: cube function names (exact libm calls on the C target)
_FLOAT_UNARY = {
    "exp": "cube.exp({0})", "exp2": "cube.exp2({0})", "expm1": "cube.expm1({0})", "log": "cube.log({0})",
    "log1p": "cube.log1p({0})", "log2": "cube.log2({0})", "log10": "cube.log10({0})", "sqrt": "cube.sqrt({0})",
    "rsqrt": "(1.0 / cube.sqrt({0}))", "sin": "cube.sin({0})", "cos": "cube.cos({0})", "tan": "cube.tan({0})",
    "asin": "cube.asin({0})", "acos": "cube.acos({0})", "atan": "cube.atan({0})", "sinh": "cube.sinh({0})",
    "cosh": "cube.cosh({0})", "tanh": "cube.tanh({0})", "asinh": "cube.asinh({0})", "acosh": "cube.acosh({0})",
    "atanh": "cube.atanh({0})", "erf": "cube.erf({0})", "erfc": "cube.erfc({0})",
    "reciprocal": "(1.0 / {0})", "floor": "cube.floor({0})", "ceil": "cube.ceil({0})",
    "trunc": "cube.trunc({0})", "round": "cube.round({0})",
    # the numpy backend's sigmoid: exp(-|x|) never overflows, the branches meet at 0
    "sigmoid": "_sigmoid({0})",
    "sign": "cube.where({0} > 0.0, cube.{T}(1.0), cube.where({0} < 0.0, cube.{T}(-1.0), cube.{T}(0.0)))",
}
_NUM_UNARY = {"neg": "(-{0})", "abs": "abs({0})", "square": "({0} * {0})"}
_FLOAT_PRED = {"isnan": "cube.isnan({0})", "isinf": "cube.isinf({0})", "isfinite": "cube.isfinite({0})"}

_NUM_BINARY = {"add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})",
               "maximum": "cube.max({0}, {1})", "minimum": "cube.min({0}, {1})"}
_FLOAT_BINARY = {"div": "({0} / {1})", "pow": "cube.pow({0}, {1})", "fmax": "cube.fmax({0}, {1})",
                 "fmin": "cube.fmin({0}, {1})", "atan2": "cube.atan2({0}, {1})", "hypot": "cube.hypot({0}, {1})",
                 "copysign": "cube.copysign({0}, {1})"}
_COMPARE = {"eq": "({0} == {1})", "ne": "({0} != {1})", "lt": "({0} < {1})", "le": "({0} <= {1})",
            "gt": "({0} > {1})", "ge": "({0} >= {1})"}
_LOGICAL = {"logical_and": "({0} and {1})", "logical_or": "({0} or {1})", "logical_xor": "({0} != {1})"}

UNARY_OPS = frozenset(_FLOAT_UNARY) | frozenset(_NUM_UNARY) | frozenset(_FLOAT_PRED) | {"logical_not"}
BINARY_OPS = frozenset(_NUM_BINARY) | frozenset(_FLOAT_BINARY) | frozenset(_COMPARE) | frozenset(_LOGICAL)
# ops recorded as elementwise nodes (besides these: cast, where, clamp, and "copy", an identity)
ELEMENTWISE = UNARY_OPS | BINARY_OPS | {"cast", "where", "clamp", "copy"}
REDUCTIONS = frozenset({"sum", "mean", "amax", "amin", "var"})
VIEWS = frozenset({"reshape", "permute", "expand", "slice", "diagonal"})
BOOL_RESULT = frozenset(_COMPARE) | frozenset(_LOGICAL) | frozenset(_FLOAT_PRED) | {"logical_not"}


def fusible_elementwise(op: str, in_types: tuple, out_type: str) -> bool:
    """Whether ``op`` on operands of cube types ``in_types`` (the computation type) can be fused."""
    if out_type is None or any(t is None for t in in_types):
        return False
    t = in_types[0] if in_types else out_type
    if op in _FLOAT_UNARY or op in _FLOAT_PRED or op in _FLOAT_BINARY:
        return t in FLOAT_TYPES
    if op in _NUM_UNARY or op in _NUM_BINARY:
        return t != "bool_"
    if op in _COMPARE:  # cube orders numbers only; bools compare with == and !=
        return t != "bool_" or op in ("eq", "ne")
    if op in _LOGICAL or op == "logical_not":
        return t == "bool_"
    if op == "clamp":  # cube.max/min order numbers only (bool clamps run on the inner backend)
        return t != "bool_"
    return op in ("cast", "where", "copy")


def formula(op: str, args: list, types: list, out_type: str) -> str:
    """The cube expression of ``op`` applied to argument expressions ``args`` of cube ``types``."""
    if op in _FLOAT_UNARY:
        return _FLOAT_UNARY[op].format(*args, T=out_type)
    if op in _NUM_UNARY:
        return _NUM_UNARY[op].format(*args)
    if op in _FLOAT_PRED:
        return _FLOAT_PRED[op].format(*args)
    if op == "logical_not":
        return f"(not {args[0]})"
    for table in (_NUM_BINARY, _FLOAT_BINARY, _COMPARE, _LOGICAL):
        if op in table:
            return table[op].format(*args)
    if op == "copy":
        return args[0]
    if op == "where":
        return f"cube.where({args[0]}, {args[1]}, {args[2]})"
    if op == "clamp":  # torch.clamp: max(lo) then min(hi), NaN in x propagates, hi wins when lo > hi
        x = args[0]
        if args[1] is not None:
            x = f"cube.max({x}, {args[1]})"
        if args[2] is not None:
            x = f"cube.min({x}, {args[2]})"
        return x
    if op == "cast":
        return cast(args[0], types[0], out_type)
    raise KeyError(op)


def cast(expr: str, src: str, dst: str) -> str:
    """A cube conversion with the numpy backend's semantics (float -> int truncates, -> bool is != 0)."""
    if src == dst:
        return expr
    if dst == "bool_":
        return f"({expr} != {'0.0' if src in FLOAT_TYPES else '0'})"
    if src == "bool_":
        one, zero = ("1.0", "0.0") if dst in FLOAT_TYPES else ("1", "0")
        return f"cube.where({expr}, cube.{dst}({one}), cube.{dst}({zero}))"
    return f"cube.{dst}({expr})"


def elementwise_types(op: str, inputs: tuple, attrs: dict, bool_dtype):
    """(computation dtype, result dtype) of a recordable elementwise op on ``inputs`` (Fusion handles,
    Python scalars, None), or False when it is not fusible (mixed dtypes, a dtype or op cube doesn't
    compute like the inner backend). ``bool_dtype`` is ember's bool (comparisons' results)."""
    hs = [x for x in inputs if x.__class__ is FH]
    if op == "where":
        vals = [x for x in inputs[1:] if x.__class__ is FH]
        if not vals:
            return False
        comp = vals[0].dtype
    elif op == "cast":
        comp = hs[0].dtype
    else:
        comp = inputs[0].dtype if inputs[0].__class__ is FH else hs[0].dtype
    ct = _ctype(comp)
    if op == "cast":
        out = attrs["dtype"]
    elif op in BOOL_RESULT:
        out = bool_dtype
    else:
        out = comp
    ot = _ctype(out)
    in_types = tuple(_ctype(h.dtype) for h in hs) if op != "where" else (ct,)
    if op not in ("cast", "where") and any(t != ct for t in in_types):
        return False  # mixed dtypes: the frontend normally promotes first
    if not fusible_elementwise(op, in_types if op != "where" else (ct,), ot):
        return False
    if op == "where" and inputs[0].__class__ is FH and _ctype(inputs[0].dtype) != "bool_":
        return False
    for k, x in enumerate(inputs):
        if x.__class__ is FH:
            continue
        if x is None:
            if op != "clamp":
                return False
        elif x.__class__ not in (bool, int, float) or (op == "where" and k == 0):
            return False
    return comp, out


def _ctype(dtype):
    return CUBE_TYPE.get(getattr(dtype, "np", None))
