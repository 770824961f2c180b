"""OpInfo, Sample and the machinery to run a sample on ember and PyTorch and compare."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import numpy as np

import ember

try:
    import torch
except ImportError:  # pragma: no cover - the test extra installs torch
    torch = None

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("uint8", "int8", "int16", "int32", "int64")
ALL = ("bool",) + INTS + FLOATS
FLOAT32_64 = ("float32", "float64")

# (rtol, atol) per dtype for comparing against PyTorch
TOL = {"float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1.3e-6, 1e-5),
       "float64": (1e-7, 1e-7)}


@dataclasses.dataclass
class T:
    """A tensor argument: numpy data plus how to lay it out (``layout``: 'contiguous',
    'transposed' (a permuted view of a contiguous buffer), 'strided' (every other element),
    'expanded' (a broadcast view of a size-1 dim))."""

    data: np.ndarray
    layout: str = "contiguous"
    requires_grad: bool = False


@dataclasses.dataclass
class Sample:
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    name: str = ""
    raises: type | None = None   # the exception both libraries must raise (ember's may subclass)


@dataclasses.dataclass
class OpInfo:
    name: str
    fn: Callable                                # fn(lib, *args, **kwargs)
    samples: Callable[[str, np.random.Generator], Iterable[Sample]]
    dtypes: tuple = FLOAT32_64
    differentiable: bool = True
    tol: dict | None = None                     # per-dtype (rtol, atol) overrides
    reference: str = "torch"                    # or "numpy": fn(np, ...) gives the expected result
    check_dtype: bool = True
    skip: dict = dataclasses.field(default_factory=dict)  # dtype name or "*" -> reason
    nondeterministic_indices: bool = False      # e.g. topk ties: compare values only
    # samples whose result C leaves undefined (NaN or infinity cast to an integer): the CPU gives
    # numpy's value, which PyTorch matches there; a GPU gives its own, as PyTorch on CUDA does
    cpu_only_samples: tuple = ()


def np_dtype(name: str):
    return ember.as_dtype(name).np if hasattr(ember, "as_dtype") else getattr(ember, name).np


def _layout_np(arr: np.ndarray, layout: str):
    """(buffer to hand to the library, function that re-creates the view from a library tensor)."""
    if layout == "contiguous" or arr.ndim == 0:
        # np.array, not np.ascontiguousarray: the latter turns 0-d arrays into 1-d ones
        return np.array(arr, order="C"), lambda t: t
    if layout == "transposed":
        perm = tuple(range(arr.ndim - 1, -1, -1))
        return np.ascontiguousarray(arr.transpose(perm)), lambda t: t.permute(*perm)
    if layout == "strided":
        buf = np.repeat(arr[..., None], 2, axis=-1).reshape(arr.shape[:-1] + (arr.shape[-1] * 2,)) \
            if arr.shape[-1] else arr.copy()
        return np.ascontiguousarray(buf), (lambda t: t[..., ::2]) if arr.shape[-1] else (lambda t: t)
    if layout == "expanded":
        d = next((i for i, n in enumerate(arr.shape) if n > 1), None)
        if d is None:
            return np.ascontiguousarray(arr), lambda t: t
        first = np.take(arr, [0], axis=d)
        shape = arr.shape
        return np.ascontiguousarray(first), lambda t: t.expand(*shape)
    raise ValueError(layout)


def to_ember(x, device: str):
    if isinstance(x, T):
        buf, view = _layout_np(x.data, x.layout)
        t = view(ember.tensor(buf, device=device))
        if x.requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(x, (list, tuple)) and any(isinstance(v, T) for v in x):
        return type(x)(to_ember(v, device) for v in x)
    return x


def to_torch(x):
    if isinstance(x, T):
        buf, view = _layout_np(x.data, x.layout)
        if buf.dtype.name == "bfloat16":
            t = torch.from_numpy(buf.astype(np.float32)).to(torch.bfloat16)
        else:
            t = torch.from_numpy(buf.copy())
        t = view(t)
        if x.requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(x, (list, tuple)) and any(isinstance(v, T) for v in x):
        return type(x)(to_torch(v) for v in x)
    if isinstance(x, getattr(ember, "dtype", ())):
        return getattr(torch, x.name)
    return x


def _convert_kwargs(kwargs, conv, lib_dtype):
    out = {}
    for k, v in kwargs.items():
        if isinstance(v, ember.dtype):
            v = lib_dtype(v)
        out[k] = conv(v)
    return out


def run_ember(op: OpInfo, s: Sample, device: str):
    args = tuple(to_ember(a, device) for a in s.args)
    kwargs = _convert_kwargs(s.kwargs, lambda v: to_ember(v, device), lambda d: d)
    return op.fn(ember, *args, **kwargs)


def run_torch(op: OpInfo, s: Sample):
    args = tuple(to_torch(a) for a in s.args)
    kwargs = _convert_kwargs(s.kwargs, to_torch, lambda d: getattr(torch, d.name))
    return op.fn(torch, *args, **kwargs)


@dataclasses.dataclass
class Res:
    """One tensor result in comparable form."""

    array: np.ndarray
    dtype: str
    shape: tuple


def as_numpy(x):
    """A library result as :class:`Res` (or a tuple of them); other values pass through."""
    if isinstance(x, (tuple, list)):
        # plain tuples: ember's return types are namedtuples, whose constructors take fields, not an iterable
        return (list if isinstance(x, list) else tuple)(as_numpy(v) for v in x)
    if isinstance(x, ember.Tensor):
        a = np.asarray(x.numpy(force=True))
        # the backend's data must be what the tensor says it is (a float32 array behind a bfloat16 tensor
        # would compare equal here and go wrong later, in memory use, speed and the ops that read bits)
        assert a.dtype == x.dtype.np, f"the tensor says {x.dtype.name} but its data is {a.dtype}"
        return Res(a.astype(np.float32) if x.dtype is ember.bfloat16 else a.copy(), x.dtype.name, tuple(x.shape))
    if torch is not None and isinstance(x, torch.Tensor):
        t = x.detach()
        name = str(t.dtype).removeprefix("torch.")
        a = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
        return Res(a.copy(), name, tuple(t.shape))
    return x


def assert_close(got, want, dtype: str, op: OpInfo, where: str = ""):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), f"{where}: {got!r} vs {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            if op.nondeterministic_indices and i == 1:
                continue
            assert_close(g, w, dtype, op, f"{where}[{i}]")
        return
    if not isinstance(want, Res):
        assert got == want or (isinstance(want, float) and np.isclose(got, want, equal_nan=True)), \
            f"{where}: {got!r} != {want!r}"
        return
    assert isinstance(got, Res), f"{where}: got {got!r}, torch gave a tensor"
    ga, gd, gs = got.array, got.dtype, got.shape
    wa, wd, ws = want.array, want.dtype, want.shape
    assert gs == ws, f"{where}: shape {gs} != torch's {ws}"
    if op.check_dtype:
        assert gd == wd, f"{where}: dtype {gd} != torch's {wd}"
    if wa.dtype.kind in "biu" and ga.dtype.kind in "biu":
        np.testing.assert_array_equal(ga, wa, err_msg=where)
        return
    rtol, atol = (op.tol or {}).get(wd, TOL.get(wd, (1e-6, 1e-6)))
    np.testing.assert_allclose(ga.astype(np.float64), wa.astype(np.float64), rtol=rtol, atol=atol,
                               equal_nan=True, err_msg=where)


# ---- sample builders -------------------------------------------------------------------------
SHAPES = [(), (0,), (1,), (5,), (3, 4), (2, 1, 3), (2, 3, 4)]


def make(shape, dtype: str, rng: np.random.Generator, low=-3.0, high=3.0, special=False) -> np.ndarray:
    """Random data of a dtype; ``special`` sprinkles NaN/inf/-0.0 into floats."""
    npd = getattr(ember, dtype).np
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype in INTS:
        lo = 0 if dtype == "uint8" else int(low)
        return rng.integers(lo, max(int(high), lo + 1) + 1, size=shape).astype(npd)
    a = rng.uniform(low, high, size=shape)
    if special and a.size >= 3:
        flat = a.reshape(-1)
        flat[0], flat[1], flat[-1] = np.nan, np.inf, -np.inf
    return a.astype(npd)


def unary_samples(low=-3.0, high=3.0, special=True) -> Callable:
    def gen(dtype, rng):
        for shape in SHAPES:
            yield Sample((T(make(shape, dtype, rng, low, high)),), name=f"{shape}")
        yield Sample((T(make((4, 3), dtype, rng, low, high), "transposed"),), name="transposed")
        yield Sample((T(make((3, 4), dtype, rng, low, high), "strided"),), name="strided")
        yield Sample((T(make((3, 4), dtype, rng, low, high), "expanded"),), name="expanded")
        if special and dtype in FLOATS:
            yield Sample((T(make((6,), dtype, rng, low, high, special=True)),), name="nan-inf")
    return gen


def binary_samples(low=-3.0, high=3.0, scalars=(2, -1.5, True), rhs_low=None, rhs_high=None,
                   special=True) -> Callable:
    rl = low if rhs_low is None else rhs_low
    rh = high if rhs_high is None else rhs_high

    def gen(dtype, rng):
        for shape in SHAPES:
            yield Sample((T(make(shape, dtype, rng, low, high)), T(make(shape, dtype, rng, rl, rh))), name=f"{shape}")
        for a, b in [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((5,), ()), ((), (2, 2)), ((0, 3), (1, 3))]:
            yield Sample((T(make(a, dtype, rng, low, high)), T(make(b, dtype, rng, rl, rh))), name=f"bcast{a}{b}")
        yield Sample((T(make((4, 3), dtype, rng, low, high), "transposed"),
                      T(make((4, 3), dtype, rng, rl, rh), "strided")), name="views")
        for sc in scalars:
            yield Sample((T(make((3, 2), dtype, rng, low, high)), sc), name=f"scalar{sc!r}")
        if special and dtype in FLOATS:
            yield Sample((T(make((6,), dtype, rng, low, high, special=True)),
                          T(make((6,), dtype, rng, rl, rh, special=True))), name="nan-inf")
    return gen


def reduction_samples(keepdim=True, dims=True, nonempty=False) -> Callable:
    def gen(dtype, rng):
        shapes = [(), (1,), (5,), (3, 4), (2, 3, 4)] + ([] if nonempty else [(0,), (2, 0)])
        for shape in shapes:
            if nonempty and 0 in shape:
                continue
            yield Sample((T(make(shape, dtype, rng)),), name=f"{shape}")
            if dims and shape:
                yield Sample((T(make(shape, dtype, rng)),), {"dim": -1}, name=f"{shape}dim-1")
                if keepdim:
                    yield Sample((T(make(shape, dtype, rng)),), {"dim": 0, "keepdim": True}, name=f"{shape}dim0keep")
            if dims and len(shape) == 3 and not nonempty:
                yield Sample((T(make(shape, dtype, rng)),), {"dim": (0, 2)}, name=f"{shape}dims02")
        yield Sample((T(make((4, 3), dtype, rng), "transposed"),), {"dim": 1} if dims else {}, name="transposed")
    return gen
