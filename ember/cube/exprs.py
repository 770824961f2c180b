"""Expressions of a kernel: Python ast nodes to typed IR values (the frontend's expression half).

:class:`ExprMixin` is mixed into :class:`ember.cube.frontend.Frontend`, which provides scopes,
statement emission and error reporting. See :mod:`ember.cube.values` for the typing rules.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator

from . import intrinsics as K
from . import ir
from .types import Scalar, bool_, f32, i32, i64, u32
from .values import (
    INT_TYPES,
    ArrRef,
    Py,
    TypeErr,
    Val,
    Vec,
    VecView,
    const,
    describe,
    fold_int,
    is_number,
    to_val,
    unify,
)

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "bitand", ast.BitOr: "bitor", ast.BitXor: "bitxor",
           ast.LShift: "shl", ast.RShift: "shr"}
_PYOPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
          "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "bitand": operator.and_,
          "bitor": operator.or_, "bitxor": operator.xor, "shl": operator.lshift, "shr": operator.rshift}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%", "pow": "**",
           "bitand": "&", "bitor": "|", "bitxor": "^", "shl": "<<", "shr": ">>"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_PYCMP = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
          "ne": operator.ne}
_LANES = {"x": 0, "y": 1, "z": 2, "w": 3}
_AXES = {"x": 0, "y": 1, "z": 2}


class Shape:
    """``a.shape`` of an array: indexable with a constant, unpackable."""

    __slots__ = ("arr",)

    def __init__(self, arr: ArrRef):
        self.arr = arr


class ExprMixin:
    """Expression evaluation; the host class supplies ``lookup``, ``emit``, ``temp``, ``error``, ``block``,
    ``target`` and ``inline``."""

    no_effects = 0  # > 0 while evaluating code that may run conditionally (no statements may be emitted)

    # ---- entry ----------------------------------------------------------------------------------
    def expr(self, node: ast.AST):
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"{_syntax_name(node)} is not supported in cube kernels")
        return method(node)

    def value(self, node: ast.AST, like: Scalar | None = None) -> Val:
        """Evaluate ``node`` to a scalar Val (numbers typed like ``like``, else by default)."""
        v = self.expr(node)
        try:
            return to_val(v, like)
        except TypeErr as e:
            raise self.error(node, str(e)) from None

    def cond(self, node: ast.AST):
        """A condition: a bool Val or a compile-time Py value."""
        v = self.expr(node)
        if isinstance(v, Py):
            return v
        if not isinstance(v, Val) or v.type is not bool_:
            raise self.error(node, f"a condition must be a bool, got {describe(v)}; compare explicitly (x != 0)")
        return v

    # ---- leaves ---------------------------------------------------------------------------------
    def e_Constant(self, node):
        if node.value is None or isinstance(node.value, bool | int | float | str):
            return Py(node.value)
        raise self.error(node, f"the constant {node.value!r} can't be used in a kernel")

    def e_Name(self, node):
        return self.py_value(self.lookup(node.id, node))

    def py_value(self, v):
        """Compile-time names that stand for kernel values (``cube.warp_size``)."""
        if isinstance(v, Py) and v.value is K.warp_size:
            if self.target.warp_size is None:
                return Val(ir.Special("warp_size", 0))
            return Py(self.target.warp_size)
        return v

    def e_Tuple(self, node):
        items = [self.expr(e) for e in node.elts]
        if all(isinstance(i, Py) for i in items):
            return Py(tuple(i.value for i in items))
        return tuple(items)

    e_List = e_Tuple

    def e_Attribute(self, node):
        base = self.expr(node.value)
        attr = node.attr
        if isinstance(base, Py):
            obj = base.value
            if isinstance(obj, K.Geometry):
                return self.geometry(obj.what, attr, node)
            try:
                return self.py_value(Py(getattr(obj, attr)))
            except AttributeError:
                raise self.error(node, f"{obj!r} has no attribute {attr!r}") from None
        if isinstance(base, ArrRef):
            if attr == "shape":
                return Shape(base)
            if attr == "size":
                return self.array_size(base, node)
            if attr == "dtype":
                return Py(base.decl.elem)
            if attr in ("vec2", "vec4"):
                if base.decl.space == "local":
                    raise self.error(node, "vector access is for global and shared arrays")
                return VecView(base, int(attr[3]))
            if attr == "ndim":
                if base.ndim is None:
                    raise self.error(node, f"'{base.decl.name}' has no fixed rank: declare it as cube.Array[t, ndim]")
                return Py(base.ndim)
            raise self.error(node, f"arrays have shape, size, dtype, ndim, vec2 and vec4, not {attr!r}")
        if isinstance(base, Vec) and attr in _LANES:
            k = _LANES[attr]
            if k >= len(base.lanes):
                raise self.error(node, f"a {len(base.lanes)}-lane vector has no lane {attr!r}")
            return base.lanes[k]
        raise self.error(node, f"{describe(base)} has no attribute {attr!r}")

    def geometry(self, what: str, attr: str, node) -> Py | Val:
        if attr not in _AXES:
            raise self.error(node, f"cube.{what} has axes x, y and z, not {attr!r}")
        axis = _AXES[attr]
        size = self.block[axis]
        if what == "block_dim":
            return Py(size)
        if what == "thread_idx":
            return Py(0) if size == 1 else Val(ir.Special("thread_idx", axis))
        if what == "global_idx":
            b = Val(ir.Special("block_idx", axis))
            t = Py(0) if size == 1 else Val(ir.Special("thread_idx", axis))
            return self.binop("add", self.binop("mul", b, Py(size), node), t, node)
        return Val(ir.Special(what, axis))

    def array_size(self, arr: ArrRef, node) -> Py | Val:
        d = arr.decl
        if d.space != "global":
            return Py(math.prod(d.shape))
        if arr.ndim is None:
            return Val(d.shape[0])
        out = Val(d.shape[0])
        for e in d.shape[1:]:
            out = self.binop("mul", out, Val(e), node)
        return out

    # ---- operators ------------------------------------------------------------------------------
    def e_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"the operator {_syntax_name(node.op)} is not supported in cube kernels")
        return self.binop(op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op: str, a, b, node):
        if isinstance(a, Vec) or isinstance(b, Vec):
            return self.lanewise(lambda x, y: self.binop(op, x, y, node), a, b, node)
        if isinstance(a, Py) and isinstance(b, Py):
            try:
                return Py(_PYOPS[op](a.value, b.value))
            except Exception as e:  # noqa: BLE001 - any failure of constant arithmetic is the user's error
                raise self.error(node, f"constant expression failed: {e}") from None
        for v in (a, b):
            if not isinstance(v, Val | Py) or (isinstance(v, Py) and not is_number(v)):
                raise self.error(node, f"can't apply {_SYMBOL[op]} to {describe(v)}")
        if op == "pow":
            return self.power(a, b, node)
        try:
            a, b = unify(a, b)
        except TypeErr as e:
            raise self.error(node, f"{_SYMBOL[op]}: {e}") from None
        t = a.type
        if t is bool_ and op not in ("bitand", "bitor", "bitxor"):
            raise self.error(node, f"{_SYMBOL[op]} is not defined for bool; use and/or/not, or convert with cube.i32()")
        if op == "div" and t.is_int:
            raise self.error(node, f"/ of {t.name} values: use // for integer division, or convert to a float type")
        if op in ("bitand", "bitor", "bitxor", "shl", "shr") and t.is_float:
            raise self.error(node, f"{_SYMBOL[op]} needs integer operands, got {t.name}")
        return self.make_binary(op, a, b)

    def make_binary(self, op: str, a: Val, b: Val) -> Val:
        t = a.type
        ea, eb = a.expr, b.expr
        if isinstance(ea, ir.Const) and isinstance(eb, ir.Const) and t.is_int:
            r = fold_int(op, ea.value, eb.value, t)
            if r is not None:
                return Val(ir.Const(r, t))
        # identities that keep index arithmetic of specialised kernels short
        if t.is_int:
            if op in ("add", "bitor") and isinstance(eb, ir.Const) and eb.value == 0:
                return a
            if op == "add" and isinstance(ea, ir.Const) and ea.value == 0:
                return b
            if op == "mul" and isinstance(eb, ir.Const) and eb.value == 1:
                return a
            if op == "mul" and isinstance(ea, ir.Const) and ea.value == 1:
                return b
            zero_a = isinstance(ea, ir.Const) and ea.value == 0
            if op == "mul" and (zero_a or isinstance(eb, ir.Const) and eb.value == 0):
                return Val(ir.Const(0, t))
        return Val(ir.Binary(op, ea, eb, t))

    def power(self, a, b, node):
        if is_number(b) and isinstance(b.value, int) and not isinstance(b.value, bool) and 0 <= b.value <= 4:
            base = to_val(a)
            if base.type is bool_:
                raise self.error(node, "** is not defined for bool")
            if b.value == 0:
                return const(1, base.type)
            out = base
            for _ in range(b.value - 1):
                out = Val(ir.Binary("mul", out.expr, base.expr, base.type))
            return out
        if is_number(b) and b.value == 0.5:
            return self.math("sqrt", [a], node)
        try:
            a, b = unify(a, b)
        except TypeErr as e:
            raise self.error(node, f"**: {e}") from None
        if not a.type.is_float:
            raise self.error(node, f"** of {a.type.name} values needs a constant exponent from 0 to 4; "
                                   "convert to a float type for other powers")
        return Val(ir.Call("pow", (a.expr, b.expr), a.type))

    def e_UnaryOp(self, node):
        v = self.expr(node.operand)
        if isinstance(v, Vec):
            return Vec(tuple(self.unary(node, lane) for lane in v.lanes))
        return self.unary(node, v)

    def unary(self, node, v):
        op = type(node.op)
        if isinstance(v, Py):
            try:
                return Py({ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                           ast.Invert: operator.invert}[op](v.value))
            except Exception as e:  # noqa: BLE001
                raise self.error(node, f"constant expression failed: {e}") from None
        if not isinstance(v, Val):
            raise self.error(node, f"can't apply {_syntax_name(node.op)} to {describe(v)}")
        t = v.type
        if op is ast.UAdd:
            return v
        if op is ast.USub:
            if t is bool_:
                raise self.error(node, "unary - is not defined for bool")
            if isinstance(v.expr, ir.Const):
                return const(-v.expr.value, t) if t.is_float else Val(ir.Const(-v.expr.value, t))
            return Val(ir.Unary("neg", v.expr, t))
        if op is ast.Not:
            if t is not bool_:
                raise self.error(node, f"not needs a bool, got {t.name}; compare explicitly")
            return Val(ir.Unary("not", v.expr, t))
        if not t.is_int:
            raise self.error(node, f"~ needs an integer, got {t.name}")
        return Val(ir.Unary("bitnot", v.expr, t))

    def e_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        result = None
        for k, operand in enumerate(node.values):
            if k:
                self.no_effects += 1
            try:
                v = self.cond(operand)
            finally:
                if k:
                    self.no_effects -= 1
            if isinstance(v, Py):
                if bool(v.value) != is_and:  # False in an 'and' / True in an 'or' decides
                    return Py(v.value) if result is None else Py(not is_and)
                continue
            result = v if result is None else Val(ir.Binary("and" if is_and else "or", result.expr, v.expr, bool_))
        return result if result is not None else Py(is_and)

    def e_Compare(self, node):
        left = self.expr(node.left)
        result = None
        for op_node, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            c = self.compare(_CMPOPS.get(type(op_node)), left, right, node, op_node)
            if isinstance(c, Py):
                if not c.value:
                    return Py(False)
            else:
                result = c if result is None else Val(ir.Binary("and", result.expr, c.expr, bool_))
            left = right
        return result if result is not None else Py(True)

    def compare(self, op, a, b, node, op_node):
        if isinstance(op_node, ast.In | ast.NotIn) and isinstance(a, Py) and isinstance(b, Py):
            try:
                return Py((a.value in b.value) == isinstance(op_node, ast.In))
            except TypeError as e:
                raise self.error(node, f"constant comparison failed: {e}") from None
        if op is None:
            raise self.error(node, f"the comparison {_syntax_name(op_node)} is not supported in cube kernels")
        if isinstance(a, Py) and isinstance(b, Py):
            try:
                return Py(_PYCMP[op](a.value, b.value))
            except TypeError as e:
                raise self.error(node, f"constant comparison failed: {e}") from None
        if isinstance(a, Vec) or isinstance(b, Vec):
            raise self.error(node, "vectors can't be compared; compare their lanes")
        try:
            a, b = unify(a, b)
        except TypeErr as e:
            raise self.error(node, f"comparison: {e}") from None
        if a.type is bool_ and op not in ("eq", "ne"):
            raise self.error(node, "bools compare only with == and !=")
        ea, eb = a.expr, b.expr
        if isinstance(ea, ir.Const) and isinstance(eb, ir.Const) and a.type.is_int:
            return Py(_PYCMP[op](ea.value, eb.value))
        return Val(ir.Compare(op, ea, eb))

    def e_IfExp(self, node):
        c = self.cond(node.test)
        if isinstance(c, Py):
            return self.expr(node.body if c.value else node.orelse)
        self.no_effects += 1
        try:
            a, b = self.expr(node.body), self.expr(node.orelse)
        finally:
            self.no_effects -= 1
        return self.select(c, a, b, node)

    def select(self, c: Val, a, b, node):
        if isinstance(a, Vec) or isinstance(b, Vec):
            return self.lanewise(lambda x, y: self.select(c, x, y, node), a, b, node)
        try:
            a, b = unify(a, b)
        except TypeErr as e:
            raise self.error(node, f"the two sides of a conditional: {e}") from None
        return Val(ir.Select(c.expr, a.expr, b.expr, a.type))

    def lanewise(self, fn, a, b, node):
        n = len(a.lanes) if isinstance(a, Vec) else len(b.lanes)
        if isinstance(a, Vec) and isinstance(b, Vec) and len(a.lanes) != len(b.lanes):
            raise self.error(node, f"vectors of {len(a.lanes)} and {len(b.lanes)} lanes don't combine")
        la = a.lanes if isinstance(a, Vec) else (a,) * n
        lb = b.lanes if isinstance(b, Vec) else (b,) * n
        return Vec(tuple(fn(x, y) for x, y in zip(la, lb)))

    # ---- subscripts -----------------------------------------------------------------------------
    def e_Subscript(self, node):
        base = self.expr(node.value)
        if isinstance(node.slice, ast.Slice):
            raise self.error(node, "slices are not supported in kernels; index single elements")
        if isinstance(base, Shape):
            k = self.expr(node.slice)
            return self.shape_dim(base.arr, k, node)
        if isinstance(base, tuple):
            k = self.expr(node.slice)
            if not (is_number(k) and isinstance(k.value, int) and -len(base) <= k.value < len(base)):
                raise self.error(node, f"a tuple index must be a constant from {-len(base)} to {len(base) - 1}")
            return base[k.value]
        if isinstance(base, Vec):
            k = self.expr(node.slice)
            if not (is_number(k) and isinstance(k.value, int) and 0 <= k.value < len(base.lanes)):
                raise self.error(node, f"a vector lane index must be a constant from 0 to {len(base.lanes) - 1}")
            return base.lanes[k.value]
        if isinstance(base, Py):
            k = self.expr(node.slice)
            if not isinstance(k, Py):
                raise self.error(node, f"can't index the Python value {base.value!r} with a runtime value")
            try:
                return Py(base.value[k.value])
            except Exception as e:  # noqa: BLE001
                raise self.error(node, f"constant indexing failed: {e}") from None
        if isinstance(base, ArrRef):
            return Val(ir.Load(base.decl.name, self.flat_index(base, node.slice, node), base.decl.elem.compute))
        if isinstance(base, VecView):
            return self.vec_load(base, node.slice, node)
        raise self.error(node, f"{describe(base)} can't be indexed")

    def shape_dim(self, arr: ArrRef, k, node):
        d = arr.decl
        if arr.ndim is None and d.space == "global":
            raise self.error(node, f"'{d.name}' is declared without a rank, so it has a size but no shape: "
                                   f"declare it as cube.Array[t, ndim] or use .size")
        rank = len(d.shape)
        if not (is_number(k) and isinstance(k.value, int) and -rank <= k.value < rank):
            raise self.error(node, f"shape index must be a constant from {-rank} to {rank - 1}")
        e = d.shape[k.value]
        return Py(e) if isinstance(e, int) else Val(e)

    def index_list(self, node_slice) -> list[ast.AST]:
        return list(node_slice.elts) if isinstance(node_slice, ast.Tuple) else [node_slice]

    def flat_index(self, arr: ArrRef, node_slice, node, vec: int = 1) -> ir.Expr:
        """The flat element index of ``arr[idx...]`` (for vector views the last index counts vectors)."""
        idx_nodes = self.index_list(node_slice)
        return self.flat_index_of(arr, [self.expr(n) for n in idx_nodes], node, vec)

    def flat_index_of(self, arr: ArrRef, idx: list, node, vec: int = 1) -> ir.Expr:
        d = arr.decl
        rank = 1 if arr.ndim is None and d.space == "global" else len(d.shape)
        if len(idx) != rank:
            what = "a flat array takes one index" if rank == 1 else f"'{d.name}' has {rank} dims"
            raise self.error(node, f"{what}, got {len(idx)} indices")
        types = set()
        for k, v in enumerate(idx):
            if isinstance(v, Py):
                if not is_number(v) or not isinstance(v.value, int) or isinstance(v.value, bool):
                    raise self.error(node, f"array indices must be integers, got {describe(v)}")
                if v.value < 0:
                    raise self.error(node, "negative indices don't wrap around in kernels")
                if d.space != "global" and v.value * (vec if k == rank - 1 else 1) >= d.shape[k]:
                    raise self.error(node, f"index {v.value} is out of range for axis {k} of "
                                           f"'{d.name}' (size {d.shape[k]})")
            elif isinstance(v, Val):
                if v.type not in INT_TYPES:
                    raise self.error(node, f"array indices must be integers, got {v.type.name}")
                types.add(v.type)
            else:
                raise self.error(node, f"array indices must be integers, got {describe(v)}")
        if len(types) > 1:
            raise self.error(node, f"the indices mix {' and '.join(sorted(t.name for t in types))}; convert them")
        it = types.pop() if types else i32
        if vec > 1:
            idx = idx[:-1] + [self.binop("mul", idx[-1], Py(vec), node)]
        dims = d.shape
        flat = to_val(idx[0], it)
        for k in range(1, rank):
            dim = Val(ir.Const(dims[k], it)) if isinstance(dims[k], int) else Val(dims[k])
            if dim.type is not it:
                dim = Val(ir.Cast(dim.expr, it))
            flat = self.make_binary("add", self.make_binary("mul", flat, dim), to_val(idx[k], it))
        return flat.expr

    def vec_load(self, view: VecView, node_slice, node) -> Vec:
        d = view.arr.decl
        index = self.flat_index(view.arr, node_slice, node, view.n)
        d.vector = max(d.vector, view.n)
        lanes = tuple(self.temp(d.elem.compute, "v") for _ in range(view.n))
        self.emit(ir.VecLoad(lanes, d.name, index), node)
        return Vec(tuple(Val(v) for v in lanes))

    # ---- calls ----------------------------------------------------------------------------------
    def e_Call(self, node):
        fn = self.expr(node.func)
        if not isinstance(fn, Py):
            raise self.error(node, f"{describe(fn)} is not callable")
        f = fn.value
        if isinstance(f, K.Intrinsic):
            return self.intrinsic(f, node)
        if isinstance(f, Scalar):
            self.no_kwargs(node, f"cube.{f.name}")
            if len(node.args) != 1:
                raise self.error(node, f"cube.{f.name}() takes one argument")
            return self.cast(f, self.expr(node.args[0]), node)
        if getattr(f, "__cube_func__", False):
            return self.inline(f, [self.expr(a) for a in node.args], node)
        if f is builtins.range:
            raise self.error(node, "range() can only be used as the iterable of a for loop")
        if f in (builtins.abs, builtins.min, builtins.max):
            return self.call_minmax(f.__name__, node)
        if f in (builtins.int, builtins.float, builtins.bool):
            target = {builtins.int: i32, builtins.float: f32, builtins.bool: bool_}[f]
            if len(node.args) != 1 or node.keywords:
                raise self.error(node, f"{f.__name__}() takes one argument in a kernel")
            v = self.expr(node.args[0])
            return Py(f(v.value)) if isinstance(v, Py) else self.cast(target, v, node)
        if f is builtins.len:
            v = self.expr(node.args[0]) if len(node.args) == 1 else None
            if isinstance(v, ArrRef):
                return self.array_size(v, node) if v.ndim is None and v.decl.space == "global" else \
                    self.shape_dim(v, Py(0), node)
            if isinstance(v, Vec):
                return Py(len(v.lanes))
            if isinstance(v, tuple):
                return Py(len(v))
        if f in K.PY_MATH:
            return self.call_math(K.PY_MATH[f], node)
        if f is K.cdiv:
            a, b = (self.expr(x) for x in node.args)
            return self.binop("floordiv", self.binop("sub", self.binop("add", a, b, node), Py(1), node), b, node)
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        if callable(f) and all(isinstance(a, Py) for a in [*args, *kwargs.values()]):
            try:  # a Python function of compile-time values runs at compile time
                return Py(f(*[a.value for a in args], **{k: v.value for k, v in kwargs.items()}))
            except Exception as e:  # noqa: BLE001
                raise self.error(node, f"calling {getattr(f, '__name__', f)!r} at compile time failed: {e}") from None
        raise self.error(node, f"can't call {getattr(f, '__name__', repr(f))!r} in a kernel "
                               "(kernels call cube functions, @cube.func functions and math functions)")

    def no_kwargs(self, node, name: str) -> None:
        if node.keywords:
            raise self.error(node, f"{name}() takes no keyword arguments")

    def cast(self, t: Scalar, v, node):
        if t.is_storage_only:
            raise self.error(node, f"{t.name} is a storage type: arrays hold it, values are f32 (a store rounds)")
        if isinstance(v, Vec):
            return Vec(tuple(self.cast(t, lane, node) for lane in v.lanes))
        if isinstance(v, Py):
            if not is_number(v):
                raise self.error(node, f"can't convert {describe(v)} to {t.name}")
            x = v.value
            if t is bool_:
                return Val(ir.Const(bool(x), t))
            if t.is_int:
                if isinstance(x, float) and not math.isfinite(x):
                    raise self.error(node, f"can't convert {x} to {t.name}")
                try:
                    return const(int(x), t)
                except TypeErr as e:
                    raise self.error(node, str(e)) from None
            return Val(ir.Const(float(x), t))
        if not isinstance(v, Val):
            raise self.error(node, f"can't convert {describe(v)} to {t.name}")
        if v.type is t:
            return v
        if t is bool_:
            return Val(ir.Compare("ne", v.expr, ir.Const(0 if v.type.is_int else 0.0, v.type)))
        return Val(ir.Cast(v.expr, t))

    def call_minmax(self, name: str, node):
        self.no_kwargs(node, name)
        args = [self.expr(a) for a in node.args]
        if name == "abs":
            if len(args) != 1:
                raise self.error(node, "abs() takes one argument")
            return self.math("abs", args, node)
        if len(args) < 2:
            raise self.error(node, f"{name}() in a kernel takes two or more arguments")
        out = args[0]
        for a in args[1:]:
            out = self.math(name, [out, a], node)
        return out

    def call_math(self, name: str, node):
        self.no_kwargs(node, f"cube.{name}")
        return self.math(name, [self.expr(a) for a in node.args], node)

    def math(self, name: str, args: list, node):
        nargs, kind = K.MATH[name]
        if len(args) != nargs:
            raise self.error(node, f"cube.{name}() takes {nargs} argument{'s' * (nargs > 1)}, got {len(args)}")
        if any(isinstance(a, Vec) for a in args):
            n = max(len(a.lanes) for a in args if isinstance(a, Vec))
            lanes = [a.lanes if isinstance(a, Vec) else (a,) * n for a in args]
            return Vec(tuple(self.math(name, [lane[k] for lane in lanes], node) for k in range(n)))
        if all(isinstance(a, Py) for a in args) and kind == "num":
            return Py({"abs": abs, "min": min, "max": max}[name](*(a.value for a in args)))
        try:
            vals = list(unify(args[0], args[1])) if nargs == 2 else [to_val(a) for a in args]
            if nargs == 3:
                vals = [to_val(a, next((v.type for v in vals if not isinstance(v.expr, ir.Const)), f32))
                        for a in args]
                if len({v.type for v in vals}) > 1:
                    raise TypeErr(f"mismatched types {', '.join(v.type.name for v in vals)}")
        except TypeErr as e:
            raise self.error(node, f"cube.{name}(): {e}") from None
        t = vals[0].type
        if kind in ("float", "pred") and not t.is_float:
            raise self.error(node, f"cube.{name}() needs float arguments, got {t.name}; convert with cube.f32()")
        if kind == "num" and t is bool_:
            raise self.error(node, f"cube.{name}() is not defined for bool")
        if name == "abs" and t.kind == "u":
            return vals[0]
        out_t = bool_ if kind == "pred" else t
        return Val(ir.Call(name, tuple(v.expr for v in vals), out_t))

    def intrinsic(self, f: K.Intrinsic, node):
        kind, name = f.kind, f.name
        if kind == "math":
            return self.call_math(name, node)
        if kind == "select":
            self.no_kwargs(node, "cube.where")
            if len(node.args) != 3:
                raise self.error(node, "cube.where(cond, a, b) takes three arguments")
            c = self.cond(node.args[0])
            a, b = self.expr(node.args[1]), self.expr(node.args[2])
            return (a if c.value else b) if isinstance(c, Py) else self.select(c, a, b, node)
        if kind == "vector":
            n = int(name[3])
            vals = [self.expr(a) for a in node.args]
            if len(vals) == 1:
                vals = vals * n
            if len(vals) != n:
                raise self.error(node, f"cube.{name}() takes 1 or {n} arguments")
            t = next((v.type for v in vals if isinstance(v, Val)), None)
            if t is None:
                t = f32 if any(isinstance(v.value, float) for v in vals) else i32
            try:
                return Vec(tuple(to_val(v, t) for v in vals))
            except TypeErr as e:
                raise self.error(node, f"cube.{name}(): {e}") from None
        if kind == "value":
            if name == "warp_size":
                raise self.error(node, "cube.warp_size is a value, not a function")
            return self.lane_id()
        if kind == "memory":
            return self.memory_call(name, node)
        if kind == "atomic":
            return self.atomic(name[len("atomic_"):], node, want=True)
        if kind == "collective":
            return self.collective(name, node)
        if kind == "barrier":
            raise self.error(node, "cube.sync_threads() is a statement, not a value")
        if kind == "alloc":
            raise self.error(node, f"cube.{name}() must be assigned to a name: buf = cube.{name}(cube.f32, 256)")
        raise self.error(node, f"cube.{name} can't be used here")

    def lane_id(self):
        if self.target.warp_size is None:
            return Val(ir.Special("lane", 0))
        bx, by, _ = self.block
        tid = Val(ir.Special("thread_idx", 0)) if bx > 1 else Py(0)
        if by > 1:
            tid = self.binop("add", tid, self.binop("mul", Val(ir.Special("thread_idx", 1)), Py(bx), None), None)
        if self.block[2] > 1:
            tz = self.binop("mul", Val(ir.Special("thread_idx", 2)), Py(bx * by), None)
            tid = self.binop("add", tid, tz, None)
        return self.binop("mod", tid, Py(self.target.warp_size), None)

    def array_arg(self, node, name: str) -> ArrRef:
        a = self.expr(node)
        if not isinstance(a, ArrRef):
            raise self.error(node, f"cube.{name}() needs an array as its first argument, got {describe(a)}")
        return a

    def index_arg(self, arr: ArrRef, node, whole) -> ir.Expr:
        v = self.expr(node)
        idx = list(v) if isinstance(v, tuple) else (list(map(Py, v.value)) if isinstance(v, Py) and
                                                   isinstance(v.value, tuple) else [v])
        return self.flat_index_of(arr, idx, whole)

    def memory_call(self, name: str, node):
        kw = {k.arg: k.value for k in node.keywords}
        pos = list(node.args)
        names = ["array", "index", "mask", "other"] if name == "load" else ["array", "index", "value", "mask"]
        if len(pos) > len(names) or set(kw) - set(names[len(pos):]):
            raise self.error(node, f"cube.{name}() takes ({', '.join(names)})")
        argn = dict(zip(names, pos)) | kw
        if "array" not in argn or "index" not in argn:
            raise self.error(node, f"cube.{name}() needs an array and an index")
        arr = self.array_arg(argn["array"], name)
        index = self.index_arg(arr, argn["index"], node)
        mask = None
        if argn.get("mask") is not None:
            c = self.cond(argn["mask"])
            if isinstance(c, Py):
                if not c.value:
                    if name == "store":
                        return Py(None)
                    return self.value(argn["other"], arr.decl.elem.compute) if "other" in argn else \
                        const(0, arr.decl.elem.compute)
            else:
                mask = c.expr
        t = arr.decl.elem.compute
        if name == "load":
            other = self.value(argn["other"], t) if "other" in argn else const(0 if t is not bool_ else False, t)
            if other.type is not t:
                raise self.error(node, f"cube.load(): other is {other.type.name} but '{arr.decl.name}' holds {t.name}")
            return Val(ir.Load(arr.decl.name, index, t, mask, other.expr if mask is not None else None))
        if "value" not in argn:
            raise self.error(node, "cube.store() needs a value")
        self.store_value(arr, index, self.expr(argn["value"]), node, mask)
        return Py(None)

    def store_value(self, arr: ArrRef, index: ir.Expr, value, node, mask=None) -> None:
        d = arr.decl
        t = d.elem.compute
        try:
            v = to_val(value, t)
        except TypeErr as e:
            raise self.error(node, f"storing into '{d.name}': {e}") from None
        if v.type is not t:
            raise self.error(node, f"storing {v.type.name} into '{d.name}', an array of {d.elem.name}: "
                                   f"convert with cube.{t.name}()")
        d.written = True
        self.emit(ir.Store(d.name, index, v.expr, mask=mask), node)

    def atomic(self, op: str, node, want: bool):
        self.no_kwargs(node, f"cube.atomic_{op}")
        nargs = 4 if op == "cas" else 3
        if len(node.args) != nargs:
            raise self.error(node, f"cube.atomic_{op}() takes {nargs} arguments")
        arr = self.array_arg(node.args[0], f"atomic_{op}")
        d = arr.decl
        if d.space == "local":
            raise self.error(node, "atomics work on global and shared arrays, not on local ones")
        if d.elem not in (i32, u32, i64, f32) and not (d.elem.name == "f64" and op in ("add", "sub", "xchg", "cas",
                                                                                        "max", "min")):
            raise self.error(node, f"cube.atomic_{op}() is not available for arrays of {d.elem.name}")
        if op in ("and", "or", "xor") and not d.elem.is_int:
            raise self.error(node, f"cube.atomic_{op}() needs an integer array, got {d.elem.name}")
        index = self.index_arg(arr, node.args[1], node)
        vals = []
        for a in node.args[2:]:
            v = self.value(a, d.elem)
            if v.type is not d.elem:
                raise self.error(node, f"cube.atomic_{op}() on an array of {d.elem.name} got a {v.type.name} value")
            vals.append(v.expr)
        self.check_effects(node, f"cube.atomic_{op}()")
        d.written = d.atomic = True
        dst = self.temp(d.elem, "old") if want else None
        compare, value = (vals[0], vals[1]) if op == "cas" else (None, vals[0])
        self.emit(ir.Atomic(op, d.name, index, value, dst, compare=compare), node)
        return Val(dst) if dst is not None else Py(None)

    def collective(self, name: str, node):
        self.no_kwargs(node, f"cube.{name}")
        nargs = 1 if name.startswith("warp_") else 2
        if len(node.args) != nargs:
            raise self.error(node, f"cube.{name}() takes {nargs} argument{'s' * (nargs > 1)}")
        v = self.expr(node.args[0])
        arg = self.value(node.args[1], i32) if nargs == 2 else None
        if arg is not None and arg.type is not i32:
            raise self.error(node, f"cube.{name}(): the lane argument must be i32, got {arg.type.name}")
        lanes = v.lanes if isinstance(v, Vec) else (v,)
        out = []
        for lane in lanes:
            lane = to_val(lane) if isinstance(lane, Py) else lane
            if not isinstance(lane, Val):
                raise self.error(node, f"cube.{name}() takes a number, got {describe(lane)}")
            if name.startswith("warp_") and lane.type is bool_:
                raise self.error(node, f"cube.{name}() is not defined for bool")
            self.check_effects(node, f"cube.{name}()")
            src = lane.expr if isinstance(lane.expr, ir.Var) else None
            if src is None:
                src = self.temp(lane.type, "w")
                self.emit(ir.Assign(src, lane.expr), node)
            arg_e = arg.expr if arg is not None else None
            if arg_e is not None and not isinstance(arg_e, ir.Const | ir.Var):
                tmp = self.temp(i32, "lane")
                self.emit(ir.Assign(tmp, arg_e), node)
                arg_e = tmp
            dst = self.temp(lane.type, "w")
            op = name[len("warp_"):] if name.startswith("warp_") else name
            self.emit(ir.Collective(op, dst, src, arg_e), node)
            out.append(Val(dst))
        return Vec(tuple(out)) if isinstance(v, Vec) else out[0]

    def check_effects(self, node, what: str) -> None:
        if self.no_effects:
            raise self.error(node, f"{what} can't be used inside a conditional expression, a loop condition or "
                                   "the right side of and/or; assign it to a variable first")


def _syntax_name(node) -> str:
    return {"ListComp": "a list comprehension", "Lambda": "lambda", "JoinedStr": "an f-string",
            "Starred": "*args", "Dict": "a dict", "Set": "a set", "MatMult": "@", "Is": "is", "IsNot": "is not",
            "In": "in", "NotIn": "not in", "NamedExpr": ":=", "Await": "await", "Yield": "yield",
            "GeneratorExp": "a generator expression", "Slice": "a slice"}.get(type(node).__name__,
                                                                               type(node).__name__)


__all__ = ["ExprMixin", "Shape"]
