"""The frontend: a ``@cube.kernel`` Python function (its ast) to the IR, for one specialisation.

A kernel is parsed once (:class:`Source`); the IR is built per *variant*: the values of its
``cube.Const`` arguments, its block shape, the dtypes of ``cube.Any`` arrays and the target. Those
are compile-time Python values here (``Py``), so ``if MODE == "sum":`` keeps one branch and
``cube.shared(cube.f32, cube.block_dim.x)`` has a constant size.

Scoping follows Python: one scope per kernel (``@cube.func`` helpers get their own, inlined). A
variable's type is fixed by its first assignment. A name assigned exactly once from a compile-time
number is a compile-time constant.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import itertools
import textwrap
from dataclasses import dataclass, field

from . import intrinsics as K
from . import ir
from .errors import CompileError
from .exprs import ExprMixin, Shape
from .types import ANY_ARRAY, ArrayType, ConstType, Scalar, bool_, f32, i32
from .values import ArrRef, Py, TypeErr, Val, Vec, VecView, describe, is_number, to_val, unify

# names no target may use for a variable (C, C++/CUDA and WGSL keywords, and cube's own prefix)
_RESERVED = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int long
register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
bool true false class new delete this template typename namespace using operator private public protected
virtual friend mutable explicit export asm catch try throw alignas alignof nullptr main
fn var let loop array vec2 vec3 vec4 mat2x2 mat3x3 mat4x4 f32 f16 i32 u32 ptr atomic sampler texture
storage uniform workgroup function private read write read_write override struct discard
select bitcast fallthrough enable requires diagnostic alias const_assert continuing elseif handle
min max abs exp log sqrt sin cos tan pow floor ceil round trunc fma sign clamp mix step dot cross
threadIdx blockIdx blockDim gridDim warpSize printf malloc free memcpy memset
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t size_t
isnan isinf isfinite INFINITY NAN fabs fmin fmax fmod copysign hypot atan2 rint lrint
""".split()) | frozenset(f"{n}{suffix}" for n in (
    "exp exp2 expm1 log log2 log10 log1p sqrt sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh erf erfc "
    "floor ceil trunc round rint pow atan2 copysign hypot fmod fmin fmax fma fabs").split() for suffix in ("", "f"))


class Source:
    """A Python function's parsed source, with what's needed to report errors at its lines."""

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__
        try:
            lines, first = inspect.getsourcelines(fn)
            self.filename = inspect.getsourcefile(fn) or "<unknown>"
        except (OSError, TypeError) as e:
            raise CompileError(f"can't read the source of {fn.__name__!r} ({e}): kernels must be defined in a file "
                               "or in a notebook cell") from None
        text = textwrap.dedent("".join(lines))
        self.first_line = first
        self.lines = text.splitlines()
        tree = ast.parse(text)
        fdef = tree.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            raise CompileError(f"{fn.__name__!r} is not a plain function", self.filename, first)
        self.tree = fdef
        self.globals = fn.__globals__
        self.closure = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:  # an empty cell: a name bound later in the enclosing function
                    pass
        self.annotations = inspect.get_annotations(fn, eval_str=True)
        self.params = [a.arg for a in fdef.args.args]
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise self.error(fdef, "kernel arguments must be plain positional parameters without defaults")
        self.assign_counts = _assign_counts(fdef.body)

    def abs_line(self, node) -> int:
        return self.first_line + getattr(node, "lineno", 1) - 1

    def line_text(self, node) -> str:
        k = getattr(node, "lineno", 1) - 1
        return self.lines[k] if 0 <= k < len(self.lines) else ""

    def error(self, node, message: str, kernel: str | None = None) -> CompileError:
        return CompileError(message, self.filename, self.abs_line(node), self.line_text(node), kernel)


def _assign_counts(body) -> dict:
    """How many times each name is assigned in a function body (loop targets and augmented ones count)."""
    counts: dict = {}

    def bump(target):
        if isinstance(target, ast.Name):
            counts[target.id] = counts.get(target.id, 0) + 1
        elif isinstance(target, ast.Tuple | ast.List):
            for t in target.elts:
                bump(t)

    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                bump(t)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For):
            bump(node.target)
            if isinstance(node, ast.AugAssign):
                bump(node.target)  # an augmented assignment makes a name a variable, never a constant
    return counts


@dataclass
class Target:
    """What the frontend needs to know about a target: its name and warp width (None: a runtime value)."""
    name: str
    warp_size: int | None = 32


@dataclass
class _Ctx:
    source: Source
    scope: dict = field(default_factory=dict)
    suffix: str = ""
    loops: int = 0  # runtime loops around the current statement (for break/continue)
    static_loops: int = 0


class Frontend(ExprMixin):
    """Builds the IR of one kernel variant. ``args`` maps parameter name to ('array', Scalar, ndim|None),
    ('scalar', Scalar) or ('const', value)."""

    def __init__(self, source: Source, args: dict, block: tuple, target: Target):
        self.source, self.args, self.block, self.target = source, args, tuple(block), target
        self.arrays: dict = {}
        self.variables: dict = {}
        self.var_lines: dict = {}
        self.used: set = set()
        self.ctx = _Ctx(source)
        self.out: list = []
        self.counter = itertools.count(1)
        self.depth = 0

    # ---- driver ---------------------------------------------------------------------------------
    def build(self) -> ir.Kernel:
        params = []
        for name in self.source.params:
            spec = self.args[name]
            kind = spec[0]
            if kind == "const":
                self.ctx.scope[name] = Py(spec[1])
                continue
            if self.source.assign_counts.get(name):
                raise self.error(self.source.tree, f"kernel parameter '{name}' is assigned in the kernel; "
                                                   "parameters are read-only (copy it to a new variable)")
            irname = self.fresh(name)
            if kind == "array":
                elem, ndim = spec[1], spec[2]
                n = 1 if ndim is None else ndim
                decl = ir.ArrayDecl(irname, elem, "global", tuple(ir.Dim(irname, k) for k in range(n)))
                self.arrays[irname] = decl
                self.ctx.scope[name] = ArrRef(decl, ndim)
                params.append(ir.Param(irname, "array", elem, n))
            else:
                t = spec[1]
                self.ctx.scope[name] = Val(ir.Var(irname, t))
                params.append(ir.Param(irname, "scalar", t))
        body = self.source.tree.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # docstring
        self.block_stmts(body)
        src = self.source
        lines = {src.first_line + k: text for k, text in enumerate(src.lines)}
        return ir.Kernel(src.name, params, self.arrays, self.variables, self.out, self.block, src.filename, lines)

    # ---- helpers --------------------------------------------------------------------------------
    def error(self, node, message: str) -> CompileError:
        src = self.ctx.source
        if node is None:
            return CompileError(message, src.filename, None, None, self.source.name)
        return src.error(node, message, self.source.name)

    def fresh(self, base: str) -> str:
        name = base if base.isidentifier() else "t"
        if name in _RESERVED or name.startswith(("cb_", "_")) or name in self.used:
            stem = name.lstrip("_") or "t"
            name = f"{stem}_{next(self.counter)}"
            while name in self.used or name in _RESERVED:
                name = f"{stem}_{next(self.counter)}"
        self.used.add(name)
        return name

    def temp(self, t: Scalar, base: str = "t") -> ir.Var:
        name = self.fresh(f"{base}_{next(self.counter)}")
        self.variables[name] = t
        return ir.Var(name, t)

    def emit(self, stmt, node=None) -> None:
        if self.no_effects:
            raise self.error(node, "this operation can't be used inside a conditional expression, a loop condition "
                                   "or the right side of and/or; assign it to a variable first")
        stmt.line = self.ctx.source.abs_line(node) if node is not None else 0
        self.out.append(stmt)

    def lookup(self, name: str, node):
        v = self.ctx.scope.get(name)
        if v is not None:
            return v
        src = self.ctx.source
        if name in src.closure:
            return Py(src.closure[name])
        if name in src.globals:
            return Py(src.globals[name])
        if hasattr(builtins, name):
            return Py(getattr(builtins, name))
        raise self.error(node, f"unknown name '{name}'")

    def sub_block(self, stmts) -> list:
        saved, self.out = self.out, []
        try:
            self.block_stmts(stmts)
            return self.out
        finally:
            self.out = saved

    def block_stmts(self, stmts) -> None:
        for s in stmts:
            method = getattr(self, "s_" + type(s).__name__, None)
            if method is None:
                raise self.error(s, f"the statement '{type(s).__name__}' is not supported in cube kernels")
            method(s)

    # ---- variables ------------------------------------------------------------------------------
    def new_var(self, name: str, t: Scalar, node) -> Val:
        irname = self.fresh(name + self.ctx.suffix)
        self.variables[irname] = t
        self.var_lines[irname] = self.ctx.source.abs_line(node)
        v = Val(ir.Var(irname, t))
        self.ctx.scope[name] = v
        return v

    def assign_name(self, name: str, value, node, declared: Scalar | None = None) -> None:
        scope = self.ctx.scope
        old = scope.get(name)
        if isinstance(old, ArrRef) or (isinstance(old, Py) and not is_number(old)):
            raise self.error(node, f"'{name}' names {describe(old)} and can't be reassigned")
        if isinstance(value, ArrRef | VecView | Shape | tuple) or (isinstance(value, Py) and not is_number(value)):
            if old is not None or self.ctx.source.assign_counts.get(name, 0) > 1:
                raise self.error(node, f"'{name}' can be bound to {describe(value)} only once")
            scope[name] = value
            return
        if isinstance(value, Vec):
            self.assign_vec(name, value, node)
            return
        if isinstance(old, Val) and isinstance(old.expr, ir.Var) and old.expr.name not in self.variables:
            raise self.error(node, f"kernel parameter '{name}' is read-only")
        if isinstance(old, Vec):
            raise self.error(node, f"'{name}' is a vector; assign a vector to it")
        if old is None and declared is None and isinstance(value, Py) and \
                self.ctx.source.assign_counts.get(name, 0) <= 1 and not self.ctx.loops:
            scope[name] = value  # assigned once from a compile-time number: a constant
            return
        if isinstance(old, Py):
            if self.ctx.static_loops and isinstance(value, Py):  # unrolled loops rebind their constants
                scope[name] = value
                return
            raise self.error(node, f"'{name}' was a compile-time constant; it can't be reassigned")
        want = declared or (old.type if old is not None else None)
        try:
            v = to_val(value, want)
        except TypeErr as e:
            raise self.error(node, f"assigning to '{name}': {e}") from None
        if want is not None and v.type is not want:
            first = self.var_lines.get(old.expr.name) if old is not None else None
            where = f" (line {first})" if first else ""
            raise self.error(node, f"'{name}' is {want.name}{where} but is assigned a {v.type.name} value; "
                                   f"convert with cube.{want.name}()")
        var = old if old is not None else self.new_var(name, v.type, node)
        self.emit(ir.Assign(var.expr, v.expr), node)

    def assign_vec(self, name: str, value: Vec, node) -> None:
        old = self.ctx.scope.get(name)
        if old is None:
            lanes = []
            for k, lane in enumerate(value.lanes):
                irname = self.fresh(f"{name}{self.ctx.suffix}_{'xyzw'[k]}")
                self.variables[irname] = lane.type
                lanes.append(Val(ir.Var(irname, lane.type)))
            old = Vec(tuple(lanes))
            self.ctx.scope[name] = old
        elif not isinstance(old, Vec) or len(old.lanes) != len(value.lanes) or old.type is not value.type:
            raise self.error(node, f"'{name}' is {describe(old)}; can't assign {describe(value)}")
        self.assign_many([lane.expr for lane in old.lanes], list(value.lanes), node)

    def assign_many(self, dsts: list, values: list, node) -> None:
        """dst_k = value_k for all k, as if simultaneously (a, b = b, a)."""
        names = {d.name for d in dsts}
        reads = set().union(*(ir.expr_vars(v.expr) for v in values)) if values else set()
        if len(dsts) > 1 and names & reads:
            tmps = []
            for v in values:
                t = self.temp(v.type)
                self.emit(ir.Assign(t, v.expr), node)
                tmps.append(Val(t))
            values = tmps
        for d, v in zip(dsts, values):
            if v.type is not d.type:
                raise self.error(node, f"assigning {v.type.name} to a {d.type.name} variable")
            self.emit(ir.Assign(d, v.expr), node)

    # ---- statements -----------------------------------------------------------------------------
    def s_Pass(self, node):
        pass

    def s_Expr(self, node):
        v = node.value
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return  # a string statement is a comment
        if not isinstance(v, ast.Call):
            raise self.error(node, "this expression statement has no effect")
        fn = self.expr(v.func)
        f = fn.value if isinstance(fn, Py) else None
        if isinstance(f, K.Intrinsic) and f.kind == "barrier":
            if v.args or v.keywords:
                raise self.error(node, "cube.sync_threads() takes no arguments")
            self.emit(ir.Barrier(), node)
            return
        if isinstance(f, K.Intrinsic) and f.kind == "atomic":
            self.atomic(f.name[len("atomic_"):], v, want=False)
            return
        self.expr(v)

    def s_Assign(self, node):
        value_node = node.value
        if isinstance(value_node, ast.Call):
            f = self.expr(value_node.func)
            if isinstance(f, Py) and isinstance(f.value, K.Intrinsic) and f.value.kind == "alloc":
                if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                    raise self.error(node, f"cube.{f.value.name}() must be assigned to a single name")
                self.alloc(node.targets[0].id, f.value.name, value_node)
                return
        value = self.expr(value_node)
        for target in node.targets:
            self.assign_target(target, value, node)

    def assign_target(self, target, value, node) -> None:
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, node)
        elif isinstance(target, ast.Subscript):
            self.store_target(target, value, node)
        elif isinstance(target, ast.Attribute):
            base = self.expr(target.value)
            lanes = {"x": 0, "y": 1, "z": 2, "w": 3}
            if not isinstance(base, Vec) or target.attr not in lanes or lanes[target.attr] >= len(base.lanes):
                raise self.error(node, "only vector lanes (v.x, v.y, ...) can be assigned as attributes")
            lane = base.lanes[lanes[target.attr]]
            self.assign_many([lane.expr], [self.typed(value, lane.type, node)], node)
        elif isinstance(target, ast.Tuple | ast.List):
            values = self.unpack(value, len(target.elts), node)
            if all(isinstance(t, ast.Name) for t in target.elts) and any(isinstance(v, Val) for v in values):
                # evaluate every right side before assigning (a, b = b, a)
                tmps = []
                for v in values:
                    if isinstance(v, Val) and not isinstance(v.expr, ir.Const):
                        t = self.temp(v.type)
                        self.emit(ir.Assign(t, v.expr), node)
                        v = Val(t)
                    tmps.append(v)
                values = tmps
            for t, v in zip(target.elts, values):
                self.assign_target(t, v, node)
        else:
            raise self.error(node, f"can't assign to {type(target).__name__}")

    def typed(self, value, t: Scalar, node) -> Val:
        try:
            v = to_val(value, t)
        except TypeErr as e:
            raise self.error(node, str(e)) from None
        if v.type is not t:
            raise self.error(node, f"expected a {t.name} value, got {v.type.name}")
        return v

    def unpack(self, value, n: int, node) -> list:
        if isinstance(value, tuple):
            items = list(value)
        elif isinstance(value, Py) and isinstance(value.value, tuple):
            items = [Py(x) for x in value.value]
        elif isinstance(value, Vec):
            items = list(value.lanes)
        elif isinstance(value, Shape):
            rank = len(value.arr.decl.shape) if value.arr.ndim is not None or value.arr.decl.space != "global" else 0
            items = [self.shape_dim(value.arr, Py(k), node) for k in range(rank)]
            if not rank:
                self.shape_dim(value.arr, Py(0), node)  # raises the flat-array error
        else:
            raise self.error(node, f"can't unpack {describe(value)}")
        if len(items) != n:
            raise self.error(node, f"can't unpack {len(items)} values into {n} names")
        return items

    def store_target(self, target: ast.Subscript, value, node) -> None:
        base = self.expr(target.value)
        if isinstance(target.slice, ast.Slice):
            raise self.error(node, "slices are not supported in kernels; index single elements")
        if isinstance(base, ArrRef):
            if base.decl.space == "global" and base.decl.name not in self.arrays:
                raise self.error(node, "internal: unknown array")
            self.store_value(base, self.flat_index(base, target.slice, node), value, node)
        elif isinstance(base, VecView):
            d = base.arr.decl
            index = self.flat_index(base.arr, target.slice, node, base.n)
            t = d.elem.compute
            if isinstance(value, Vec):
                if len(value.lanes) != base.n:
                    raise self.error(node, f"storing a {len(value.lanes)}-lane vector into a vec{base.n} view")
                lanes = [self.typed(lane, t, node) for lane in value.lanes]
            else:
                lanes = [self.typed(value, t, node)] * base.n
            d.written = True
            d.vector = max(d.vector, base.n)
            self.emit(ir.VecStore(d.name, index, tuple(v.expr for v in lanes)), node)
        elif isinstance(base, Vec):
            k = self.expr(target.slice)
            if not (is_number(k) and isinstance(k.value, int) and 0 <= k.value < len(base.lanes)):
                raise self.error(node, "a vector lane index must be a constant")
            lane = base.lanes[k.value]
            self.assign_many([lane.expr], [self.typed(value, lane.type, node)], node)
        else:
            raise self.error(node, f"can't assign into {describe(base)}")

    def s_AugAssign(self, node):
        from .exprs import _BINOPS
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"the operator {type(node.op).__name__} is not supported in cube kernels")
        target = node.target
        if isinstance(target, ast.Name):
            current = self.lookup(target.id, target)
            if isinstance(current, Py) and target.id not in self.ctx.scope:
                raise self.error(node, f"'{target.id}' is a global; kernels can't assign globals")
            self.assign_name(target.id, self.binop(op, current, self.expr(node.value), node), node)
            return
        if isinstance(target, ast.Subscript):
            load = ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load())
            ast.copy_location(load, target)
            self.store_target(target, self.binop(op, self.expr(load), self.expr(node.value), node), node)
            return
        if isinstance(target, ast.Attribute):
            load = ast.Attribute(value=target.value, attr=target.attr, ctx=ast.Load())
            ast.copy_location(load, target)
            self.assign_target(target, self.binop(op, self.expr(load), self.expr(node.value), node), node)
            return
        raise self.error(node, "unsupported augmented assignment target")

    def s_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "annotated assignments must name a variable")
        t = self.expr(node.annotation)
        if not isinstance(t, Py) or not isinstance(t.value, Scalar):
            raise self.error(node, "a variable annotation must be a cube scalar type (cube.f32, ...)")
        if t.value.is_storage_only:
            raise self.error(node, f"{t.value.name} is a storage type; variables holding its values are f32")
        if node.value is None:
            raise self.error(node, "an annotated variable needs a value")
        self.assign_name(node.target.id, self.expr(node.value), node, declared=t.value)

    def s_If(self, node):
        c = self.cond(node.test)
        if isinstance(c, Py):
            self.block_stmts(node.body if c.value else node.orelse)
            return
        body = self.sub_block(node.body)
        orelse = self.sub_block(node.orelse)
        self.emit(ir.If(c.expr, body, orelse), node)

    def s_While(self, node):
        if node.orelse:
            raise self.error(node, "while ... else is not supported in kernels")
        self.no_effects += 1
        try:
            c = self.cond(node.test)
        finally:
            self.no_effects -= 1
        if isinstance(c, Py):
            if not c.value:
                return
            c = Val(ir.Const(True, bool_))
        self.ctx.loops += 1
        try:
            body = self.sub_block(node.body)
        finally:
            self.ctx.loops -= 1
        self.emit(ir.While(c.expr, body), node)

    def s_For(self, node):
        if node.orelse:
            raise self.error(node, "for ... else is not supported in kernels")
        it = node.iter
        fn = self.expr(it.func) if isinstance(it, ast.Call) else None
        f = fn.value if isinstance(fn, Py) else None
        if f is not builtins.range and f is not getattr(K, "static_range", None):
            raise self.error(node, "kernels loop only over range(...) or cube.static_range(...)")
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "a for loop needs a single loop variable")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(node, "range() takes 1 to 3 positional arguments")
        args = [self.expr(a) for a in it.args]
        start, stop, step = (Py(0), args[0], Py(1)) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else Py(1))
        name = node.target.id
        if name in _stores_in(node.body):
            raise self.error(node, f"the loop variable '{name}' is assigned inside the loop")
        if f is not builtins.range:
            return self.static_for(name, start, stop, step, node)
        if is_number(step) and step.value == 0:
            raise self.error(node, "range() step must not be zero")
        try:
            a, b = unify(start, stop)
            a, s = unify(a, step)
            a, b = unify(a, b)
        except TypeErr as e:
            raise self.error(node, f"range(): {e}") from None
        if not a.type.is_int:
            raise self.error(node, f"range() needs integers, got {a.type.name}")
        old = self.ctx.scope.get(name)
        if isinstance(old, Val) and isinstance(old.expr, ir.Var) and old.type is a.type:
            var = old
        elif old is None:
            var = self.new_var(name, a.type, node)
        else:
            raise self.error(node, f"the loop variable '{name}' is already {describe(old)}")
        b = self.once(b, node, "stop")
        s = self.once(s, node, "step")
        self.ctx.loops += 1
        try:
            body = self.sub_block(node.body)
        finally:
            self.ctx.loops -= 1
        self.emit(ir.For(var.expr, a.expr, b.expr, s.expr, body), node)

    def once(self, v: Val, node, what: str) -> Val:
        """A loop bound evaluated once before the loop (as Python does): constants and parameters stay."""
        e = v.expr
        if isinstance(e, ir.Const | ir.Dim | ir.Special) or (isinstance(e, ir.Var) and e.name not in self.variables):
            return v
        t = self.temp(v.type, what)
        self.emit(ir.Assign(t, e), node)
        return Val(t)

    def static_for(self, name, start, stop, step, node):
        vals = [start, stop, step]
        if not all(is_number(v) and isinstance(v.value, int) for v in vals):
            raise self.error(node, "cube.static_range() needs compile-time integer bounds")
        r = range(start.value, stop.value, step.value)
        if len(r) > 1024:
            raise self.error(node, f"cube.static_range() unrolls at most 1024 iterations, got {len(r)}")
        old = self.ctx.scope.get(name)
        self.ctx.static_loops += 1
        try:
            for k in r:
                self.ctx.scope[name] = Py(k)  # the body sees a compile-time constant
                self.block_stmts(node.body)
        finally:
            self.ctx.static_loops -= 1
            if old is not None and not isinstance(old, Py):
                self.ctx.scope[name] = old  # a variable of the same name is left as it was

    def s_Break(self, node):
        self.loop_jump(node, ir.Break)

    def s_Continue(self, node):
        self.loop_jump(node, ir.Continue)

    def loop_jump(self, node, cls):
        if not self.ctx.loops:
            what = "cube.static_range() loops" if self.ctx.static_loops else "a loop"
            raise self.error(node, f"{cls.__name__.lower()} outside {what}" if not self.ctx.static_loops else
                             f"{cls.__name__.lower()} is not supported in {what}")
        self.emit(cls(), node)

    def s_Return(self, node):
        if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            raise self.error(node, "kernels return nothing; write results into an array argument")
        if self.depth:
            raise self.error(node, "a @cube.func returns once, as its last statement")
        self.emit(ir.Return(), node)

    def s_Assert(self, node):
        c = self.expr(node.test)
        if not isinstance(c, Py):
            raise self.error(node, "assert in a kernel needs a compile-time condition (constants, cube.Const "
                                   "arguments, the block shape)")
        if not c.value:
            msg = self.expr(node.msg).value if node.msg is not None else "assertion failed"
            raise self.error(node, f"compile-time assertion failed: {msg}")

    # ---- allocations ----------------------------------------------------------------------------
    def alloc(self, name: str, kind: str, call: ast.Call) -> None:
        args = [self.expr(a) for a in call.args]
        kwargs = {k.arg: self.expr(k.value) for k in call.keywords}
        if set(kwargs) - {"dtype", "shape"} or len(args) + len(kwargs) != 2:
            raise self.error(call, f"cube.{kind}(dtype, shape) takes two arguments")
        dtype, shape = (args + [kwargs.get("dtype"), kwargs.get("shape")])[:2] if len(args) == 2 else \
            (args[0] if args else kwargs["dtype"], kwargs["shape"])
        if not isinstance(dtype, Py) or not isinstance(dtype.value, Scalar):
            raise self.error(call, f"cube.{kind}(): the dtype must be a cube scalar type, got {describe(dtype)}")
        dims = shape.value if isinstance(shape, Py) else None
        dims = (dims,) if isinstance(dims, int) else dims
        if not isinstance(dims, tuple) or not dims or not all(isinstance(d, int) and d > 0 for d in dims):
            raise self.error(call, f"cube.{kind}(): the shape must be positive compile-time ints, got "
                                   f"{describe(shape)}")
        if self.ctx.scope.get(name) is not None or self.ctx.source.assign_counts.get(name, 0) > 1:
            raise self.error(call, f"'{name}' is assigned more than once; give each cube.{kind}() array its own name")
        irname = self.fresh(name + self.ctx.suffix)
        decl = ir.ArrayDecl(irname, dtype.value, "shared" if kind == "shared" else "local", dims)
        self.arrays[irname] = decl
        self.ctx.scope[name] = ArrRef(decl, len(dims))

    # ---- @cube.func inlining --------------------------------------------------------------------
    def inline(self, func, args: list, node):
        src = func.__cube_source__()
        if self.depth > 16:
            raise self.error(node, f"@cube.func '{src.name}' nests too deeply (recursion is not supported)")
        if len(args) != len(src.params):
            raise self.error(node, f"'{src.name}' takes {len(src.params)} arguments, got {len(args)}")
        body = src.tree.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        result_node = None
        if body and isinstance(body[-1], ast.Return):
            result_node, body = body[-1].value, body[:-1]
        outer = self.ctx
        self.ctx = _Ctx(src, {}, f"_{src.name}{next(self.counter)}", outer.loops, outer.static_loops)
        self.depth += 1
        try:
            for pname, a in zip(src.params, args):
                if isinstance(a, Val) and (src.assign_counts.get(pname) or not isinstance(a.expr, ir.Var | ir.Const)):
                    v = self.new_var(pname, a.type, src.tree)
                    self.emit(ir.Assign(v.expr, a.expr), node)
                elif isinstance(a, Vec):
                    self.assign_vec(pname, a, node)
                else:
                    self.ctx.scope[pname] = a
            self.block_stmts(body)
            return self.expr(result_node) if result_node is not None else Py(None)
        finally:
            self.depth -= 1
            self.ctx = outer


def _stores_in(body) -> set:
    names = set()
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def param_specs(source: Source) -> dict:
    """Each parameter's annotation as ('array', ArrayType) / ('scalar', Scalar) / ('const', ConstType)."""
    out = {}
    for name in source.params:
        ann = source.annotations.get(name)
        if ann is None:
            raise source.error(source.tree, f"kernel parameter '{name}' needs a type annotation "
                                            "(cube.Array[cube.f32], cube.i32, cube.Const[int], ...)")
        if type(ann).__name__ == "_ArrayFactory":  # bare cube.Array: any dtype, any rank
            ann = ANY_ARRAY
        elif type(ann).__name__ == "_ConstFactory":  # bare cube.Const: any hashable value
            ann = ConstType(object)
        if isinstance(ann, ArrayType):
            out[name] = ("array", ann)
        elif isinstance(ann, ConstType):
            out[name] = ("const", ann)
        elif isinstance(ann, Scalar):
            if ann.is_storage_only:
                raise source.error(source.tree, f"parameter '{name}': {ann.name} is a storage type; pass an f32")
            out[name] = ("scalar", ann)
        elif ann in (int, float, bool):
            out[name] = ("scalar", {int: i32, float: f32, bool: bool_}[ann])
        else:
            raise source.error(source.tree, f"parameter '{name}' has an unsupported annotation {ann!r}")
    return out

