"""Registry entries: reductions (sum, mean, max, var, norm, ...) and scans (cumsum, cummax, ...).

Every reduction is sampled over full reductions, single and tuple dims (negative too), keepdim,
the ``dtype`` argument where PyTorch has one, empty tensors, 0-d tensors, non-contiguous views
and NaN. The errors follow PyTorch 2.13: a dim out of range raises IndexError, a repeated dim
RuntimeError; max/min/amax/amin of an empty tensor without a dim raise RuntimeError, over an empty
dim IndexError; argmax/argmin of an empty tensor IndexError; mean/var/std/norm of integers
RuntimeError.
"""

from __future__ import annotations

import numpy as np

from .core import ALL, FLOATS, INTS, OpInfo, Sample, T, make

NUMERIC = INTS + FLOATS
SHAPES = [(), (1,), (5,), (3, 4), (2, 3, 4)]
EMPTY = [(0,), (2, 0), (0, 3)]
_RED_TOL = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2), "float32": (5e-6, 1e-5)}


def _x(shape, dtype, rng, layout="contiguous", low=-3.0, high=3.0, nan=False):
    a = make(shape, dtype, rng, low, high)
    if nan and dtype in FLOATS and a.size >= 4:
        flat = a.reshape(-1)
        flat[1] = np.nan
        flat[-2] = np.inf
    return T(a, layout)


def _reduction_gen(*, int_error=None, empty_full_error=None, empty_dim_error=None, dtype_kw=(), multi_dim=True,
                   empty_list_dim=True, low=-3.0, high=3.0, extra_kw=None, bool_error=None, three_dims=True):
    """Samples for ``fn(lib, x, **kw)`` with kw in {dim, keepdim, dtype, *extra_kw}.

    int_error / bool_error: the exception integer / bool inputs raise (no other sample then);
    empty_full_error: the exception of a full reduction of an empty tensor;
    empty_dim_error: the exception of a reduction over a zero-size dim;
    dtype_kw: dtypes to pass as ``dtype=``; multi_dim: whether tuple dims are accepted.
    """
    extra = extra_kw or {}

    def gen(dtype, rng):
        err = bool_error if dtype == "bool" else int_error if dtype not in FLOATS else None
        if err is not None:
            yield Sample((_x((3, 4), dtype, rng, low=low, high=high),), dict(extra), raises=err,
                         name="unsupported dtype")
            yield Sample((_x((3, 4), dtype, rng, low=low, high=high),), {"dim": 1, **extra}, raises=err,
                         name="unsupported dtype, dim")
            return

        def x(shape, layout="contiguous", nan=False):
            return _x(shape, dtype, rng, layout, low, high, nan)
        for shape in SHAPES:
            yield Sample((x(shape),), dict(extra), name=f"{shape}")
            yield Sample((x(shape),), {"dim": -1, **extra}, name=f"{shape} dim=-1")
            yield Sample((x(shape),), {"dim": 0, "keepdim": True, **extra}, name=f"{shape} dim=0 keepdim")
        yield Sample((x((2, 3, 4)),), {"dim": 1, "keepdim": False, **extra}, name="middle dim")
        if multi_dim:
            yield Sample((x((2, 3, 4)),), {"dim": (0, 2), **extra}, name="dims (0, 2)")
            yield Sample((x((2, 3, 4)),), {"dim": (-1, -3), "keepdim": True, **extra}, name="dims (-1, -3) keepdim")
            if three_dims:
                yield Sample((x((2, 3, 4)),), {"dim": (0, 1, 2), **extra}, name="all dims as a tuple")
            yield Sample((x((2, 3, 4)),), {"dim": (1, -2), **extra}, raises=RuntimeError, name="repeated dim")
            if empty_list_dim:
                yield Sample((x((2, 3)),), {"dim": [], **extra}, name="empty dim list")
        yield Sample((x((4, 3), "transposed"),), {"dim": 1, **extra}, name="transposed")
        yield Sample((x((3, 4), "strided"),), {"dim": 0, **extra}, name="strided")
        yield Sample((x((3, 4), "expanded"),), {"dim": 1, **extra}, name="expanded")
        yield Sample((x((3, 4), "transposed"),), dict(extra), name="transposed, full")
        if dtype in FLOATS:
            yield Sample((x((3, 4), nan=True),), {"dim": 1, **extra}, name="nan-inf")
            yield Sample((x((3, 4), nan=True),), dict(extra), name="nan-inf, full")
        for shape in EMPTY:
            yield Sample((x(shape),), dict(extra), raises=empty_full_error, name=f"empty {shape}")
            yield Sample((x(shape),), {"dim": -1, **extra}, raises=empty_dim_error if shape[-1] == 0 else None,
                         name=f"empty {shape} dim=-1")
            yield Sample((x(shape),), {"dim": 0, "keepdim": True, **extra},
                         raises=empty_dim_error if shape[0] == 0 else None, name=f"empty {shape} dim=0 keepdim")
        yield Sample((x((2, 3)),), {"dim": 2, **extra}, raises=IndexError, name="dim out of range")
        yield Sample((x(()),), {"dim": 1, **extra}, raises=IndexError, name="0-d, dim 1")
        for d in dtype_kw:
            yield Sample((x((3, 4)),), {"dtype": d, **extra}, name=f"dtype={d}")
            yield Sample((x((3, 4)),), {"dim": 0, "dtype": d, **extra}, name=f"dim=0, dtype={d}")
    return gen


def _red(name, fn=None, dtypes=ALL, tol=_RED_TOL, differentiable=True, **kw):
    fn = fn or (lambda lib, x, _n=name, **k: getattr(lib, _n)(x, **k))
    return OpInfo(name, fn, _reduction_gen(**kw), dtypes, tol=tol, differentiable=differentiable)


def _int_dtype_arg(name, dtype_name, fn=None, **kw):
    """``name(x, dtype=<integer>)``: converts before reducing; not differentiable (a separate entry)."""
    fn = fn or (lambda lib, x, _n=name, **k: getattr(lib, _n)(x, **k))
    d = _as_dtype_kw((dtype_name,))[0]

    def gen(dtype, rng):
        for shape in ((3, 4), (2, 3, 4), (0, 3), ()):
            yield Sample((_x(shape, dtype, rng, **kw),), {"dtype": d}, name=f"{shape}")
            if shape:
                yield Sample((_x(shape, dtype, rng, **kw),), {"dtype": d, "dim": 0}, name=f"{shape} dim=0")
    return OpInfo(f"{name}(dtype={dtype_name})", fn, gen, ALL, differentiable=False)


def _as_dtype_kw(names):
    import ember
    return tuple(getattr(ember, n) for n in names)


_DT = _as_dtype_kw
MEAN_INT_ERR = RuntimeError  # mean()/var()/norm() can't infer a floating output dtype from integers

REDUCTIONS = [
    _red("sum", dtype_kw=_DT(("float64", "float16"))),
    _int_dtype_arg("sum", "int32"), _int_dtype_arg("nansum", "int64"),
    _int_dtype_arg("prod", "int32", low=0.5, high=3),
    # PyTorch's bfloat16 nansum over several dims rounds partial sums to bfloat16 (errors to ~0.06 on
    # these inputs, against ~0.03 for a float32 accumulation)
    _red("nansum", dtype_kw=_DT(("float64",)), tol={**_RED_TOL, "bfloat16": (1.6e-2, 7e-2)}),
    # prod: one dim at a time; values near 1 keep the products in range
    _red("prod", multi_dim=False, low=0.5, high=1.5, dtype_kw=_DT(("float64",))),
    _red("mean", int_error=MEAN_INT_ERR, bool_error=MEAN_INT_ERR, dtype_kw=_DT(("float64",))),
    _red("nanmean", int_error=MEAN_INT_ERR, bool_error=MEAN_INT_ERR, dtype_kw=_DT(("float64",))),
    _red("amax", empty_full_error=RuntimeError, empty_dim_error=IndexError, empty_list_dim=False),
    _red("amin", empty_full_error=RuntimeError, empty_dim_error=IndexError, empty_list_dim=False),
    _red("all", dtypes=ALL), _red("any", dtypes=ALL),
    _red("logsumexp", fn=lambda lib, x, dim=(0,), **k: lib.logsumexp(x, dim, **k), empty_list_dim=False,
         tol={"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2), "float32": (5e-6, 2e-5)}),
    _red("var", int_error=MEAN_INT_ERR, bool_error=MEAN_INT_ERR),
    _red("std", int_error=MEAN_INT_ERR, bool_error=MEAN_INT_ERR),
    _red("var(correction=0)", fn=lambda lib, x, **k: lib.var(x, correction=0, **k),
         int_error=MEAN_INT_ERR, bool_error=MEAN_INT_ERR),
    _red("std(unbiased=False)", fn=lambda lib, x, **k: lib.std(x, unbiased=False, **k),
         int_error=MEAN_INT_ERR, bool_error=MEAN_INT_ERR),
    _red("var(correction=2.5)", fn=lambda lib, x, **k: lib.var(x, correction=2.5, **k),
         int_error=MEAN_INT_ERR, bool_error=MEAN_INT_ERR),
    # 'fro' (the default) over three dims is a matrix norm to PyTorch, which refuses it
    _red("norm", int_error=MEAN_INT_ERR, bool_error=MEAN_INT_ERR, empty_list_dim=False, three_dims=False),
    _red("norm(p=1)", fn=lambda lib, x, **k: lib.norm(x, 1, **k), int_error=MEAN_INT_ERR,
         bool_error=MEAN_INT_ERR, empty_list_dim=False),
    _red("norm(p=inf)", fn=lambda lib, x, **k: lib.norm(x, float("inf"), **k), int_error=MEAN_INT_ERR,
         bool_error=MEAN_INT_ERR, empty_list_dim=False, empty_full_error=RuntimeError,
         empty_dim_error=RuntimeError),
    _red("norm(p=3)", fn=lambda lib, x, **k: lib.norm(x, 3, **k), int_error=MEAN_INT_ERR,
         bool_error=MEAN_INT_ERR, empty_list_dim=False),
    _red("norm(p='fro')", fn=lambda lib, x, **k: lib.norm(x, "fro", **k), int_error=MEAN_INT_ERR,
         bool_error=MEAN_INT_ERR, empty_list_dim=False, three_dims=False),
]


# ---- max/min in all their forms, argmax/argmin ---------------------------------------------
def _extreme_gen(op):
    """max/min: full, (values, indices) over a dim, and elementwise with a tensor."""
    def gen(dtype, rng):
        def x(shape, layout="contiguous", nan=False, low=-3.0, high=3.0):
            return _x(shape, dtype, rng, layout, low, high, nan)
        for shape in SHAPES:
            yield Sample((x(shape),), name=f"{shape}")
            yield Sample((x(shape), -1), name=f"{shape} dim=-1")
            yield Sample((x(shape), 0, True), name=f"{shape} dim=0 keepdim")
        yield Sample((x((2, 3, 4)),), {"dim": 1}, name="dim keyword")
        yield Sample((x((4, 3), "transposed"), 1), name="transposed")
        yield Sample((x((3, 4), "strided"), 0), name="strided")
        yield Sample((x((3, 4), "expanded"), 1), name="expanded (ties everywhere)")
        yield Sample((x((3, 6), low=0, high=1), 1), name="ties")
        if dtype in FLOATS:
            yield Sample((x((3, 4), nan=True), 1), name="nan-inf")
            yield Sample((x((3, 4), nan=True),), name="nan-inf, full")
        yield Sample((x((0, 3)),), raises=RuntimeError, name="empty, full")
        yield Sample((x((0, 3)), 0), raises=IndexError, name="empty dim")
        yield Sample((x((0, 3)), 1), name="empty, non-empty dim")
        yield Sample((x((2, 3)), 2), raises=IndexError, name="dim out of range")
        yield Sample((x((3, 4)), x((4,))), name="elementwise with a tensor")
        yield Sample((x((3, 1)),), {"other": x((1, 4))}, name="other=")
        yield Sample((x((3, 4)), x((3, 2))), raises=RuntimeError, name="elementwise shape mismatch")
    return gen


def _arg_gen(dtype, rng):
    def x(shape, layout="contiguous", nan=False, low=-3.0, high=3.0):
        return _x(shape, dtype, rng, layout, low, high, nan)
    if dtype == "bool":
        yield Sample((x((3, 4)),), raises=RuntimeError, name="bool input")
        return
    for shape in SHAPES:
        yield Sample((x(shape),), name=f"{shape}")
        yield Sample((x(shape),), {"dim": -1}, name=f"{shape} dim=-1")
        yield Sample((x(shape),), {"dim": 0, "keepdim": True}, name=f"{shape} dim=0 keepdim")
    yield Sample((x((2, 3, 4)),), {"keepdim": True}, name="full, keepdim")
    yield Sample((x((4, 3), "transposed"),), {"dim": 1}, name="transposed")
    yield Sample((x((4, 3), "transposed"),), name="transposed, full")
    yield Sample((x((3, 4), "strided"),), {"dim": 0}, name="strided")
    yield Sample((x((3, 4), "expanded"),), {"dim": 1}, name="expanded (ties)")
    yield Sample((x((3, 6), low=0, high=1),), {"dim": 1}, name="ties")
    if dtype in FLOATS:
        yield Sample((x((3, 4), nan=True),), {"dim": 1}, name="nan-inf")
        yield Sample((x((3, 4), nan=True),), name="nan-inf, full")
    yield Sample((x((0, 3)),), raises=IndexError, name="empty, full")
    yield Sample((x((0, 3)),), {"dim": 0}, raises=IndexError, name="empty dim")
    yield Sample((x((0, 3)),), {"dim": 1}, name="empty, non-empty dim")
    yield Sample((x((2, 3)),), {"dim": -3}, raises=IndexError, name="dim out of range")


EXTREMES = [
    OpInfo("max", lambda lib, x, *a, **k: lib.max(x, *a, **k), _extreme_gen("max"), ALL),
    OpInfo("min", lambda lib, x, *a, **k: lib.min(x, *a, **k), _extreme_gen("min"), ALL),
    OpInfo("Tensor.max", lambda lib, x, *a, **k: x.max(*a, **k), _extreme_gen("max"), ("float32", "int64", "bool")),
    OpInfo("max(...).values/.indices", lambda lib, x: (x.max(1).values, x.max(dim=1).indices, x.min(0)[0]),
           lambda d, rng: iter([Sample((_x((3, 4), d, rng),))]), ("float32", "int32")),
    OpInfo("argmax", lambda lib, x, **k: lib.argmax(x, **k), _arg_gen, ALL),
    OpInfo("argmin", lambda lib, x, **k: lib.argmin(x, **k), _arg_gen, ALL),
    OpInfo("aminmax", lambda lib, x, **k: tuple(lib.aminmax(x, **k)),
           lambda d, rng: iter([Sample((_x((3, 4), d, rng),)), Sample((_x((3, 4), d, rng),), {"dim": 1}),
                                Sample((_x((2, 3, 4), d, rng),), {"dim": -1, "keepdim": True}),
                                Sample((_x((0,), d, rng),), raises=RuntimeError, name="empty")]), ALL),
]


# ---- scans --------------------------------------------------------------------------------
def _scan_gen(*, dtype_kw=(), low=-3.0, high=3.0):
    def gen(dtype, rng):
        def x(shape, layout="contiguous", nan=False):
            return _x(shape, dtype, rng, layout, low, high, nan)
        for shape in SHAPES:
            yield Sample((x(shape), 0), name=f"{shape} dim=0")
            yield Sample((x(shape), -1), name=f"{shape} dim=-1")
        yield Sample((x((2, 3, 4)), 1), name="middle dim")
        yield Sample((x((4, 3), "transposed"), 1), name="transposed")
        yield Sample((x((3, 4), "strided"), 1), name="strided")
        yield Sample((x((3, 4), "expanded"), 0), name="expanded")
        yield Sample((_x((3, 6), dtype, rng, low=0, high=1), 1), name="ties")
        if dtype in FLOATS:
            yield Sample((x((3, 5), nan=True), 1), name="nan-inf")
        for shape in EMPTY:
            yield Sample((x(shape), -1), name=f"empty {shape}")
        yield Sample((x((2, 3)), 2), raises=IndexError, name="dim out of range")
        yield Sample((x(()), 1), raises=IndexError, name="0-d, dim 1")
        for d in dtype_kw:
            yield Sample((x((3, 4)), 1), {"dtype": d}, name=f"dtype={d}")
    return gen


def _values_indices(fn):
    return lambda lib, x, dim, **k: tuple(fn(lib)(x, dim, **k))


SCANS = [
    OpInfo("cumsum", lambda lib, x, dim, **k: lib.cumsum(x, dim, **k), _scan_gen(dtype_kw=_DT(("float64",))),
           ALL, tol=_RED_TOL),
    OpInfo("cumsum(dtype=int32)", lambda lib, x, dim: lib.cumsum(x, dim, dtype=lib.int32),
           _scan_gen(), ALL, differentiable=False, cpu_only_samples=("nan-inf",)),
    OpInfo("cumprod", lambda lib, x, dim, **k: lib.cumprod(x, dim, **k),
           _scan_gen(dtype_kw=_DT(("float64",)), low=0.5, high=1.5), ALL, tol=_RED_TOL),
    OpInfo("Tensor.cumsum", lambda lib, x, dim, **k: x.cumsum(dim=dim, **k), _scan_gen(), ("float32", "int8")),
    OpInfo("cummax", _values_indices(lambda lib: lib.cummax), _scan_gen(), ALL),
    OpInfo("cummin", _values_indices(lambda lib: lib.cummin), _scan_gen(), ALL),
    OpInfo("logcumsumexp", lambda lib, x, dim: lib.logcumsumexp(x, dim), _scan_gen(), FLOATS, tol=_RED_TOL),
]


# ---- Tensor-method forms and argument spellings -------------------------------------------
def _forms_gen(dtype, rng):
    x = _x((2, 3, 4), dtype, rng)
    for form in ("sum(1)", "sum(dim=(0, 2), keepdim=True)", "sum(-1, True)", "prod(1)", "amax(-1)", "amin((0, 1))",
                 "all(1)", "any()", "cumsum(0)", "count_nonzero(1)", "max()", "min(1, True)"):
        yield Sample((form, x), name=form)
    if dtype in FLOATS:
        for form in ("mean(1)", "mean((0, 1), True)", "var(1)", "var(1, False)", "var(1, True, True)",
                     "std(dim=0, correction=0)", "std(None)", "var_mean(1)", "std_mean(0, correction=0)",
                     "nanmean(-1)", "nansum(0)", "logsumexp(1)", "norm()", "norm(2, 1)", "norm(p=1, dim=(0, 1))"):
            yield Sample((form, x), name=form)


def _forms_fn(lib, form, x):
    """Call ``x.<form>``; var_mean/std_mean are functions only (lib.var_mean(x, ...))."""
    name, args = form.split("(", 1)
    if name in ("var_mean", "std_mean"):
        method = lambda *a, **k: tuple(getattr(lib, name)(x, *a, **k))  # noqa: E731
    else:
        method = getattr(x, name)
    return eval(f"_m({args}", {"_m": method})


FORMS = [OpInfo("reduction methods", _forms_fn, _forms_gen, ("float32", "int64", "bool", "float16"), tol=_RED_TOL,
                differentiable=False)]

OPS = REDUCTIONS + EXTREMES + SCANS + FORMS
