"""The kernel IR: typed expressions and structured statements, shared by every renderer.

A :class:`Kernel` is what the frontend builds from a ``@cube.kernel`` function for one
specialisation (constant values, block shape, argument dtypes), and what the fusion engine will
build directly. It is deliberately small:

* expressions are pure (no side effects) and typed with a :class:`~ember.cube.types.Scalar`;
* arrays are named (parameters, block-shared arrays, per-thread local arrays) and indexed with a
  *flat* element index: the frontend has already turned ``a[i, j]`` into ``a[i * a.shape[1] + j]``;
* vectors exist only in :class:`VecLoad` / :class:`VecStore` (their lanes are ordinary scalar
  variables), so targets without vector types need nothing special;
* side effects are statements: stores, atomics (whose old value goes to a variable), barriers and
  collectives (warp reductions and shuffles, whose result goes to a variable).

Every statement records the line of the user's source it came from, for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .types import Scalar, bool_, i32


# ---- expressions --------------------------------------------------------------------------------
class Expr:
    __slots__ = ()
    type: Scalar

    def children(self) -> tuple:
        return ()


@dataclass(frozen=True, slots=True)
class Const(Expr):
    value: object  # bool, int or float
    type: Scalar


@dataclass(frozen=True, slots=True)
class Var(Expr):
    name: str
    type: Scalar


@dataclass(frozen=True, slots=True)
class Special(Expr):
    """Launch geometry: ``what`` in thread_idx, block_idx, grid_dim (block_dim is a constant: kernels
    are specialised on the block shape), or ``warp_size`` / ``lane`` (axis 0)."""
    what: str
    axis: int
    type: Scalar = i32


@dataclass(frozen=True, slots=True)
class Dim(Expr):
    """The extent of axis ``axis`` of array parameter ``array`` (i32); for flat arrays, axis 0 is the size."""
    array: str
    axis: int
    type: Scalar = i32


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    op: str  # neg, not, bitnot
    a: Expr
    type: Scalar

    def children(self):
        return (self.a,)


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    """Arithmetic and logic. ops: add sub mul div floordiv mod pow min max and or bitand bitor bitxor shl shr.
    ``floordiv``/``mod`` follow Python (floor) semantics; ``min``/``max`` propagate NaN; ``and``/``or``
    take bools and short-circuit."""
    op: str
    a: Expr
    b: Expr
    type: Scalar

    def children(self):
        return (self.a, self.b)


@dataclass(frozen=True, slots=True)
class Compare(Expr):
    op: str  # lt le gt ge eq ne
    a: Expr
    b: Expr
    type: Scalar = bool_

    def children(self):
        return (self.a, self.b)


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """A math intrinsic (see ``ember.cube.intrinsics.MATH``) applied to scalars."""
    fn: str
    args: tuple
    type: Scalar

    def children(self):
        return self.args


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    a: Expr
    type: Scalar

    def children(self):
        return (self.a,)


@dataclass(frozen=True, slots=True)
class Select(Expr):
    """``a if cond else b``; only the chosen side is evaluated where the target allows."""
    cond: Expr
    a: Expr
    b: Expr
    type: Scalar

    def children(self):
        return (self.cond, self.a, self.b)


@dataclass(frozen=True, slots=True)
class Load(Expr):
    """``array[index]``; with ``mask``, lanes where it is false give ``other`` and touch no memory."""
    array: str
    index: Expr
    type: Scalar  # the compute type (f32 for f16/bf16 arrays)
    mask: Expr | None = None
    other: Expr | None = None

    def children(self):
        return tuple(e for e in (self.index, self.mask, self.other) if e is not None)


# ---- statements ---------------------------------------------------------------------------------
class Stmt:
    __slots__ = ()
    line: int


@dataclass(slots=True, eq=False)
class Assign(Stmt):
    var: Var
    value: Expr
    line: int = 0


@dataclass(slots=True, eq=False)
class Store(Stmt):
    array: str
    index: Expr
    value: Expr
    line: int = 0
    mask: Expr | None = None


@dataclass(slots=True, eq=False)
class VecLoad(Stmt):
    """``dsts[k] = array[index + k]`` for each lane; ``index`` is a multiple of ``len(dsts)``."""
    dsts: tuple
    array: str
    index: Expr
    line: int = 0


@dataclass(slots=True, eq=False)
class VecStore(Stmt):
    array: str
    index: Expr
    values: tuple
    line: int = 0


@dataclass(slots=True, eq=False)
class Atomic(Stmt):
    """Atomic read-modify-write of ``array[index]``: op in add sub max min and or xor xchg cas.
    ``dst`` (or None) receives the old value; ``compare`` is cas's expected value."""
    op: str
    array: str
    index: Expr
    value: Expr
    dst: Var | None
    line: int = 0
    compare: Expr | None = None


@dataclass(slots=True, eq=False)
class If(Stmt):
    cond: Expr
    body: list
    orelse: list
    line: int = 0


@dataclass(slots=True, eq=False)
class For(Stmt):
    """``for var in range(start, stop, step)``: ``stop`` and ``step`` are constants or variables that the
    loop does not assign (the frontend evaluates them once, as Python does)."""
    var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: list
    line: int = 0


@dataclass(slots=True, eq=False)
class While(Stmt):
    cond: Expr
    body: list
    line: int = 0


@dataclass(slots=True, eq=False)
class Break(Stmt):
    line: int = 0


@dataclass(slots=True, eq=False)
class Continue(Stmt):
    line: int = 0


@dataclass(slots=True, eq=False)
class Return(Stmt):
    line: int = 0


@dataclass(slots=True, eq=False)
class Barrier(Stmt):
    line: int = 0


@dataclass(slots=True, eq=False)
class Collective(Stmt):
    """A warp/subgroup operation over the lanes of each warp: op in sum max min (reductions: every
    lane gets the result), shfl (value of lane ``arg``), shfl_down / shfl_up / shfl_xor (lane
    ``lane + arg``, ``lane - arg``, ``lane ^ arg``; a lane whose source is outside the warp keeps
    its own value). ``value`` is a variable."""
    op: str
    dst: Var
    value: Var
    arg: Expr | None
    line: int = 0


# ---- the kernel ---------------------------------------------------------------------------------
@dataclass(slots=True)
class ArrayDecl:
    """An array: a parameter (``space`` 'global'), block-shared or per-thread local.
    ``shape`` holds ints (shared/local) or Dim expressions (parameters)."""
    name: str
    elem: Scalar
    space: str
    shape: tuple
    written: bool = False
    atomic: bool = False
    vector: int = 1  # the widest vector access (for alignment checks)


@dataclass(slots=True)
class Param:
    """A kernel parameter as the runtime passes it: an array (data + extents) or a scalar."""
    name: str
    kind: str  # 'array' or 'scalar'
    type: Scalar
    ndim: int = 0  # arrays: the number of extents passed (1 for flat arrays)


@dataclass(slots=True)
class Kernel:
    name: str
    params: list
    arrays: dict  # name -> ArrayDecl (parameters, shared and local arrays)
    variables: dict  # name -> Scalar, every scalar variable the body assigns
    body: list
    block: tuple  # (bx, by, bz): kernels are specialised on the block shape
    filename: str = "<kernel>"
    source_lines: dict = field(default_factory=dict)  # line -> text, for errors raised after the frontend
    contract: bool = False  # may the compiler fuse a * b + c into one FMA (cube.kernel(contract=True))
    eviction: str | None = None  # cache eviction hint for read-only arrays' loads (cube.kernel(eviction_policy=...))


# ---- walking ------------------------------------------------------------------------------------
def stmt_exprs(s: Stmt) -> tuple:
    """The expressions a statement evaluates itself (not those of nested statements)."""
    if isinstance(s, Assign):
        return (s.value,)
    if isinstance(s, Store):
        return tuple(e for e in (s.index, s.value, s.mask) if e is not None)
    if isinstance(s, VecLoad):
        return (s.index,)
    if isinstance(s, VecStore):
        return (s.index, *s.values)
    if isinstance(s, Atomic):
        return tuple(e for e in (s.index, s.value, s.compare) if e is not None)
    if isinstance(s, If | While):
        return (s.cond,)
    if isinstance(s, For):
        return (s.start, s.stop, s.step)
    if isinstance(s, Collective):
        return tuple(e for e in (s.value, s.arg) if e is not None)
    return ()


def sub_bodies(s: Stmt) -> tuple:
    if isinstance(s, If):
        return (s.body, s.orelse)
    if isinstance(s, For | While):
        return (s.body,)
    return ()


def walk_expr(e: Expr):
    """``e`` and every sub-expression, depth first."""
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(x.children())


def walk_stmts(body: list):
    """Every statement of ``body``, nested ones included, in source order."""
    for s in body:
        yield s
        for b in sub_bodies(s):
            yield from walk_stmts(b)


def assigned_vars(s: Stmt) -> tuple:
    """Names of the variables a statement (not its nested statements) writes."""
    if isinstance(s, Assign):
        return (s.var.name,)
    if isinstance(s, VecLoad):
        return tuple(v.name for v in s.dsts)
    if isinstance(s, Atomic):
        return (s.dst.name,) if s.dst is not None else ()
    if isinstance(s, For):
        return (s.var.name,)
    if isinstance(s, Collective):
        return (s.dst.name,)
    return ()


def expr_vars(e: Expr) -> set:
    return {x.name for x in walk_expr(e) if isinstance(x, Var)}
