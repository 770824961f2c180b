"""Registry entries: ember.nn.functional's non-conv ops (activations, norms, attention, sampling,
embedding, dropout, distances) against torch.nn.functional.

Each op is sampled over empty tensors, 0-d and size-1 dims, non-contiguous views and, for the
elementwise activations, every kink and special value (0, ±3, ±inf, NaN, the softplus threshold),
so forward values and (in tests/test_registry_grad.py) gradients must agree with PyTorch exactly
where PyTorch picks a side. Error samples follow PyTorch 2.13's exception types.
"""

from __future__ import annotations

import numpy as np

from .core import FLOATS, INTS, SHAPES, OpInfo, Sample, T, make, np_dtype

NIE = NotImplementedError
F32_64 = ("float32", "float64")
HALF_TOL = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}


def _kinks(dtype) -> np.ndarray:
    """Values where activations change branch, plus inf/NaN and the softplus threshold."""
    v = [-20.5, -6.0, -3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, 6.0, 20.0, 20.5, 1e-4, -1e-4,
         np.inf, -np.inf, np.nan, 100.0, -100.0]
    return np.array(v, dtype=np.float64).astype(np_dtype(dtype))


def _act_gen(kwargs=(), int_ok=False, bool_error=None, int_error=None, low=-4.0, high=4.0, no_posinf=False):
    """Samples for an elementwise activation ``fn(lib, x, **kw)``, one sample per kw set.
    ``no_posinf``: leave +inf out of the kinks (where PyTorch's float32 kernel gives NaN, ember inf)."""
    kws = list(kwargs) or [{}]

    def gen(dtype, rng):
        if dtype == "bool":
            yield Sample((T(make((2, 3), dtype, rng)),), dict(kws[0]), name="bool", raises=bool_error)
            return
        if dtype in INTS and not int_ok:
            yield Sample((T(make((2, 3), dtype, rng)),), dict(kws[0]), name="int", raises=int_error)
            return
        for kw in kws:
            for shape in SHAPES:
                yield Sample((T(make(shape, dtype, rng, low, high)),), dict(kw), name=f"{shape}{kw}")
            yield Sample((T(make((4, 3), dtype, rng, low, high), "transposed"),), dict(kw), name=f"transposed{kw}")
            yield Sample((T(make((3, 4), dtype, rng, low, high), "strided"),), dict(kw), name=f"strided{kw}")
            yield Sample((T(make((3, 4), dtype, rng, low, high), "expanded"),), dict(kw), name=f"expanded{kw}")
            if dtype in FLOATS:
                k = _kinks(dtype)
                yield Sample((T(k[k != np.inf] if no_posinf else k),), dict(kw), name=f"kinks{kw}")
    return gen


def _f(name):
    return lambda lib, x, **kw: getattr(lib.nn.functional, name)(x, **kw)


def _inplace(name):
    """The in-place form on a clone (a leaf that requires grad can't be written in place)."""
    return lambda lib, x, **kw: getattr(lib.nn.functional, name)(x.clone(), **kw)


def _act(name, fn=None, dtypes=FLOATS, kwargs=(), tol=None, differentiable=True, **gen):
    return OpInfo(name, fn or _f(name), _act_gen(kwargs, **gen), dtypes, tol={**HALF_TOL, **(tol or {})},
                  differentiable=differentiable)


ALL_D = ("bool",) + INTS + FLOATS
_FLOAT_ONLY = {"bool_error": NIE, "int_error": NIE}

ACTIVATIONS = [
    _act("relu", dtypes=ALL_D, int_ok=True, bool_error=RuntimeError),
    _act("relu(inplace)", lambda lib, x: lib.nn.functional.relu(x.clone(), inplace=True), dtypes=ALL_D,
         int_ok=True, bool_error=RuntimeError),
    _act("relu_", _inplace("relu_"), dtypes=("int64",) + FLOATS, int_ok=True),
    _act("Tensor.relu", lambda lib, x: x.relu(), dtypes=("int32", "float32", "float64"), int_ok=True),
    _act("Tensor.relu_", lambda lib, x: x.clone().relu_(), dtypes=("float32", "float64")),
    _act("relu6", dtypes=ALL_D, int_ok=True, bool_error=RuntimeError, kwargs=[{}, {"inplace": False}]),
    _act("hardtanh", dtypes=("bool", "int8", "int64") + FLOATS, int_ok=True, bool_error=RuntimeError,
         kwargs=[{}, {"min_val": -2.0, "max_val": 3.0}, {"min_val": 0.5, "max_val": 0.5}]),
    _act("hardtanh_", _inplace("hardtanh_"), dtypes=("int64",) + FLOATS, int_ok=True,
         kwargs=[{}, {"min_val": 0.0, "max_val": 6.0}]),
    _act("leaky_relu", kwargs=[{}, {"negative_slope": 0.2}, {"negative_slope": -1.5}], **_FLOAT_ONLY),
    _act("leaky_relu_", _inplace("leaky_relu_"), kwargs=[{}, {"negative_slope": 0.3}], **_FLOAT_ONLY),
    _act("elu", kwargs=[{}, {"alpha": 0.5}, {"alpha": -1.0}], **_FLOAT_ONLY),
    _act("elu_", _inplace("elu_"), kwargs=[{"alpha": 2.0}], **_FLOAT_ONLY),
    _act("selu", **_FLOAT_ONLY),
    _act("selu_", _inplace("selu_"), dtypes=F32_64),
    _act("celu", kwargs=[{}, {"alpha": 0.5}, {"alpha": 3.0}], **_FLOAT_ONLY),
    _act("celu_", _inplace("celu_"), dtypes=F32_64, kwargs=[{"alpha": 2.0}]),
    # PyTorch's vectorised float32/bfloat16 gelu gives NaN at +inf (float64 gives inf, as ember does)
    _act("gelu", kwargs=[{}, {"approximate": "tanh"}, {"approximate": "none"}], no_posinf=True, **_FLOAT_ONLY),
    _act("silu", kwargs=[{}, {"inplace": False}], **_FLOAT_ONLY),
    _act("silu(inplace)", lambda lib, x: lib.nn.functional.silu(x.clone(), inplace=True), dtypes=F32_64),
    _act("mish", **_FLOAT_ONLY),
    _act("softplus", kwargs=[{}, {"beta": 2.0}, {"beta": 0.5, "threshold": 3.0}, {"beta": -1.0}], **_FLOAT_ONLY),
    _act("hardsigmoid", **_FLOAT_ONLY),
    _act("hardsigmoid(inplace)", lambda lib, x: lib.nn.functional.hardsigmoid(x.clone(), inplace=True),
         dtypes=F32_64),
    _act("hardswish", **_FLOAT_ONLY),
    _act("hardswish(inplace)", lambda lib, x: lib.nn.functional.hardswish(x.clone(), inplace=True), dtypes=F32_64),
    _act("logsigmoid", **_FLOAT_ONLY),
    _act("softsign", dtypes=ALL_D, int_ok=True, bool_error=NIE),
    _act("tanhshrink", dtypes=ALL_D, int_ok=True, bool_error=RuntimeError),
    _act("hardshrink", kwargs=[{}, {"lambd": 1.0}, {"lambd": 0.0}], **_FLOAT_ONLY),
    _act("Tensor.hardshrink", lambda lib, x, **kw: x.hardshrink(**kw), dtypes=F32_64),
    _act("softshrink", kwargs=[{}, {"lambd": 1.0}, {"lambd": 0.0}], **_FLOAT_ONLY),
    _act("threshold", lambda lib, x, **kw: lib.nn.functional.threshold(x, **kw),
         dtypes=("int64",) + FLOATS, int_ok=True,
         kwargs=[{"threshold": 1.0, "value": -2.0}, {"threshold": -0.5, "value": 20.0}]),
    _act("threshold_", lambda lib, x, **kw: lib.nn.functional.threshold_(x.clone(), **kw), dtypes=F32_64,
         kwargs=[{"threshold": 0.0, "value": 5.0}]),
    _act("F.sigmoid", _f("sigmoid"), dtypes=ALL_D, int_ok=True),
    _act("F.tanh", _f("tanh"), dtypes=ALL_D, int_ok=True),
    _act("rrelu(eval)", lambda lib, x, **kw: lib.nn.functional.rrelu(x, **kw),
         kwargs=[{}, {"lower": 0.1, "upper": 0.3}, {"training": False}], **_FLOAT_ONLY),
]


def _errors(*cases):
    """Error samples for ``fn(lib, pick, x, **kw)``: cases are (pick, x, kw, exception), ``pick`` choosing
    the function from the library's functional module, ``x`` a shape (a tensor of it) or a value."""
    def gen(dtype, rng):
        for i, (pick, x, kw, exc) in enumerate(cases):
            arg = T(make(x, dtype, rng)) if isinstance(x, tuple) else x
            yield Sample((pick, arg), kw, name=f"error{i}", raises=exc)
    return gen


def _glu_gen(dtype, rng):
    if dtype in INTS:
        yield Sample((T(make((2, 4), dtype, rng)),), name="int", raises=NIE)
        return
    for shape, dim in [((4,), -1), ((2, 6), 1), ((4, 3), 0), ((2, 0, 4), -1), ((0, 2), 1), ((3, 2, 2), 2)]:
        yield Sample((T(make(shape, dtype, rng)),), {"dim": dim}, name=f"{shape}dim{dim}")
    yield Sample((T(make((2, 4), dtype, rng), "transposed"),), {"dim": 0}, name="transposed")
    yield Sample((T(make((2, 4), dtype, rng, special=True)),), name="nan-inf")
    yield Sample((T(make((3,), dtype, rng)),), name="odd", raises=RuntimeError)
    yield Sample((T(make((), dtype, rng)),), name="0-d", raises=RuntimeError)
    yield Sample((T(make((4, 2), dtype, rng)),), {"dim": 2}, name="bad dim", raises=IndexError)


def _prelu_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    w = lambda s: T(rng.uniform(-0.5, 0.5, s).astype(np_dtype(dtype)))  # noqa: E731
    for xs, ws in [((2, 3, 4), (3,)), ((2, 3, 4), (1,)), ((2, 3), (3,)), ((4,), (1,)), ((), (1,)), ((2, 3, 4), ()),
                   ((0, 3), (3,)), ((2, 1, 5, 5), (1,)), ((1, 3, 2, 2), (3,))]:
        yield Sample((x(xs), w(ws)), name=f"{xs}w{ws}")
    yield Sample((x((2, 3, 4), "transposed"), w((3,))), name="transposed")
    yield Sample((T(_kinks(dtype).reshape(1, 20)), w((1,))), name="kinks")
    yield Sample((x((2, 3, 4)), w((4,))), name="channel mismatch", raises=RuntimeError)
    yield Sample((x((4,)), w((4,))), name="1-d has one channel", raises=RuntimeError)
    yield Sample((x((2, 3)), w((1, 3))), name="2-d weight", raises=RuntimeError)


def _softmin_gen(dtype, rng):
    for shape, dim in [((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -1), ((0, 3), 1), ((), 0), ((5,), 0)]:
        yield Sample((T(make(shape, dtype, rng)),), {"dim": dim}, name=f"{shape}dim{dim}")
    yield Sample((T(make((3, 4), dtype, rng, special=True)),), {"dim": 1}, name="nan-inf")
    yield Sample((T(make((3, 4), dtype, rng), "transposed"),), {"dim": 1}, name="transposed")
    yield Sample((T(make((3, 4), dtype, rng)),), {"dim": 1, "dtype": "float64"}, name="dtype")


def _softmin(lib, x, dtype=None, **kw):
    if dtype is not None:
        kw["dtype"] = getattr(lib, dtype)
    return lib.nn.functional.softmin(x, **kw)


OTHER_ACT = [
    OpInfo("glu", lambda lib, x, **kw: lib.nn.functional.glu(x, **kw), _glu_gen, ("int64",) + FLOATS, tol=HALF_TOL),
    OpInfo("prelu", lambda lib, x, w: lib.nn.functional.prelu(x, w), _prelu_gen, FLOATS, tol=HALF_TOL),
    OpInfo("Tensor.prelu", lambda lib, x, w: x.prelu(w), _prelu_gen, F32_64),
    OpInfo("softmin", _softmin, _softmin_gen, FLOATS, tol=HALF_TOL),
    OpInfo("activation errors", lambda lib, pick, x, **kw: pick(lib.nn.functional)(x, **kw), _errors(
        (lambda F: F.gelu, (2, 3), {"approximate": "erf"}, RuntimeError),
        (lambda F: F.hardtanh, (2, 3), {"min_val": 2.0, "max_val": 1.0}, ValueError),
        (lambda F: F.celu, (2, 3), {"alpha": 0.0}, RuntimeError),
        (lambda F: F.rrelu, (2, 3), {"lower": 0.5, "upper": 0.2}, RuntimeError),
        (lambda F: F.softshrink, (2, 3), {"lambd": -1.0}, RuntimeError),
        (lambda F: F.relu, [1.0, 2.0], {}, TypeError),
        (lambda F: F.hardtanh, T(np.arange(3, dtype=np.uint8)), {}, RuntimeError),
    ), F32_64, differentiable=False),

]



# ---- normalisation -------------------------------------------------------------------------------
NORM_TOL = {"float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2), "float32": (1e-5, 2e-5)}


def _w(shape, dtype, rng, low=0.5, high=1.5):
    return T(rng.uniform(low, high, shape).astype(np_dtype(dtype)))


def _layer_norm_gen(dtype, rng):
    x = lambda s, layout="contiguous", **k: T(make(s, dtype, rng, **k), layout)  # noqa: E731
    yield Sample((x((2, 3, 4)), (4,)), name="last dim")
    yield Sample((x((2, 3, 4)), [3, 4], _w((3, 4), dtype, rng), _w((3, 4), dtype, rng, -1, 1)), name="2 dims affine")
    yield Sample((x((2, 3, 4)), (2, 3, 4), None, _w((2, 3, 4), dtype, rng)), name="all dims bias only")
    yield Sample((x((5,)), [5], _w((5,), dtype, rng)), {"eps": 0.1}, name="list shape eps")
    yield Sample((x((5,)), 5), name="int shape", raises=TypeError)
    yield Sample((x((3, 1)), (1,), _w((1,), dtype, rng), _w((1,), dtype, rng)), name="size-1 norm dim")
    yield Sample((x((0, 4)), (4,), _w((4,), dtype, rng)), name="empty batch")
    yield Sample((x((4, 3), "transposed"), (3,), _w((3,), dtype, rng)), name="transposed")
    yield Sample((x((3, 4), "strided"), (4,)), name="strided")
    yield Sample((T(make((2, 6), dtype, rng, special=True)), (6,)), name="nan-inf")
    yield Sample((x((4, 3), low=10, high=11), (3,)), name="large offset")
    yield Sample((x((2, 3)), (4,)), name="wrong shape", raises=RuntimeError)
    yield Sample((x((2, 3)), (3,), _w((2,), dtype, rng)), name="wrong weight", raises=RuntimeError)
    yield Sample((x((2, 3)), ()), name="empty normalized_shape", raises=RuntimeError)


def _layer_norm(lib, x, ns, w=None, b=None, **kw):
    return lib.nn.functional.layer_norm(x, ns, w, b, **kw)


def _rms_norm_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    yield Sample((x((2, 3, 4)), (4,)), name="last dim")
    yield Sample((x((2, 3, 4)), (3, 4), _w((3, 4), dtype, rng)), name="2 dims weight")
    yield Sample((x((5,)), [5], _w((5,), dtype, rng)), {"eps": 0.5}, name="eps")
    yield Sample((x((0, 4)), (4,)), name="empty")
    yield Sample((x((2, 1)), (1,)), name="size-1")
    yield Sample((x((4, 3), "transposed"), (3,), _w((3,), dtype, rng)), name="transposed")
    yield Sample((T(make((2, 6), dtype, rng, special=True)), (6,)), name="nan-inf")
    yield Sample((x((2, 3)), (2,)), name="wrong shape", raises=RuntimeError)


def _group_norm_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    yield Sample((x((2, 6, 4)), 3, _w((6,), dtype, rng), _w((6,), dtype, rng, -1, 1)), name="3 groups affine")
    yield Sample((x((2, 6)), 2), name="2-d")
    yield Sample((x((2, 4, 3, 3)), 4, _w((4,), dtype, rng)), name="instance-like")
    # (weight None with a bias: PyTorch's backward fails there, "tensor does not have a device")
    yield Sample((x((2, 4, 3, 3)), 1, _w((4,), dtype, rng), _w((4,), dtype, rng)), name="one group")
    yield Sample((x((1, 2, 2, 2, 2)), 2), {"eps": 0.5}, name="5-d eps")
    yield Sample((x((0, 4, 3)), 2), name="empty batch")
    yield Sample((x((3, 4, 2), "transposed"), 2, _w((4,), dtype, rng)), name="transposed")
    yield Sample((x((2, 3)), 2), name="indivisible", raises=RuntimeError)
    yield Sample((x((3,)), 1), name="1-d", raises=RuntimeError)
    yield Sample((x((2, 4, 3)), 2, _w((3,), dtype, rng)), name="weight size", raises=RuntimeError)


def _group_norm(lib, x, g, w=None, b=None, **kw):
    return lib.nn.functional.group_norm(x, g, w, b, **kw)


def _stats(c, dtype, rng):
    return (rng.uniform(-1, 1, c).astype(np_dtype(dtype)), rng.uniform(0.5, 2, c).astype(np_dtype(dtype)))


def _batch_norm(lib, x, rm, rv, w=None, b=None, **kw):
    """Running statistics come as numpy arrays (made into tensors here, so the grad test leaves them
    alone); the result includes them to compare the in-place update."""
    rm = None if rm is None else lib.tensor(rm, device=x.device)
    rv = None if rv is None else lib.tensor(rv, device=x.device)
    y = lib.nn.functional.batch_norm(x, rm, rv, w, b, **kw)
    return (y,) + tuple(t for t in (rm, rv) if t is not None)


def _batch_norm_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    for training in (True, False):
        kw = {"training": training}
        yield Sample((x((4, 3)), *_stats(3, dtype, rng)), kw, name=f"2-d {kw}")
        yield Sample((x((2, 3, 4)), *_stats(3, dtype, rng), _w((3,), dtype, rng), _w((3,), dtype, rng, -1, 1)),
                     dict(kw, momentum=0.3), name=f"3-d affine {kw}")
        yield Sample((x((2, 3, 2, 2)), *_stats(3, dtype, rng), _w((3,), dtype, rng)), dict(kw, eps=0.1),
                     name=f"4-d {kw}")
        yield Sample((x((2, 2, 2, 1, 2)), *_stats(2, dtype, rng)), kw, name=f"5-d {kw}")
        yield Sample((x((3, 4, 2), "transposed"), *_stats(4, dtype, rng), None, _w((4,), dtype, rng)), kw,
                     name=f"transposed {kw}")
        yield Sample((T(make((4, 2), dtype, rng, special=True)), *_stats(2, dtype, rng)), kw, name=f"nan {kw}")
    yield Sample((x((1, 3, 4)), *_stats(3, dtype, rng)), {"training": True}, name="one sample, 4 positions")
    yield Sample((x((0, 3)), *_stats(3, dtype, rng)), {"training": True}, name="empty batch")
    yield Sample((x((4, 3)), None, None, _w((3,), dtype, rng)), {"training": True}, name="no running stats")
    yield Sample((x((1, 3)), *_stats(3, dtype, rng)), {"training": True}, name="one value", raises=ValueError)
    yield Sample((x((4, 3)), None, None), {"training": False}, name="eval without stats", raises=RuntimeError)
    yield Sample((x((4, 3)), *_stats(2, dtype, rng)), {"training": True}, name="stats size", raises=RuntimeError)
    yield Sample((x((4, 3)), *_stats(3, dtype, rng), _w((2,), dtype, rng)), {"training": True},
                 name="weight size", raises=RuntimeError)


def _instance_norm(lib, x, rm=None, rv=None, w=None, b=None, **kw):
    rm = None if rm is None else lib.tensor(rm, device=x.device)
    rv = None if rv is None else lib.tensor(rv, device=x.device)
    y = lib.nn.functional.instance_norm(x, rm, rv, w, b, **kw)
    return (y,) + tuple(t for t in (rm, rv) if t is not None)


def _instance_norm_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    yield Sample((x((2, 3, 4)),), name="3-d")
    yield Sample((x((2, 3, 2, 3)), None, None, _w((3,), dtype, rng), _w((3,), dtype, rng, -1, 1)), name="affine")
    yield Sample((x((2, 3, 4)), *_stats(3, dtype, rng)), {"momentum": 0.4}, name="running stats")
    yield Sample((x((2, 3, 4)), *_stats(3, dtype, rng), _w((3,), dtype, rng)), {"use_input_stats": False},
                 name="use running stats")
    yield Sample((x((3, 2, 4), "transposed"),), {"eps": 0.1}, name="transposed")
    yield Sample((x((0, 3, 4)),), name="empty batch")
    yield Sample((x((2, 3, 1)),), name="one position", raises=ValueError)
    yield Sample((x((2, 3, 4)),), {"use_input_stats": False}, name="no stats", raises=RuntimeError)


def _lrn_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    yield Sample((x((2, 5, 4)), 3), name="3-d")
    yield Sample((x((2, 6, 3, 3)), 2), {"alpha": 0.1, "beta": 0.5, "k": 2.0}, name="4-d even size")
    yield Sample((x((1, 3, 2, 2, 2)), 4), name="5-d")
    yield Sample((x((2, 2, 3)), 7), {"alpha": 1.0}, name="window wider than channels")
    yield Sample((x((2, 1, 3)), 1), name="one channel")
    yield Sample((x((3, 4, 2), "transposed"), 3), name="transposed")
    yield Sample((x((0, 3, 4)), 2), name="empty")
    yield Sample((x((2, 3)), 2), name="2-d", raises=ValueError)


def _normalize_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    yield Sample((x((3, 4)),), name="default")
    yield Sample((x((3, 4)),), {"p": 1.0, "dim": 0}, name="p1 dim0")
    yield Sample((x((2, 3, 4)),), {"p": 3.0, "dim": -1}, name="p3")
    yield Sample((x((2, 3, 4)),), {"p": float("inf"), "dim": 1}, name="pinf")
    yield Sample((T(np.zeros((2, 3), dtype=np_dtype(dtype))),), name="zero rows (eps)")
    yield Sample((x((5,)),), {"dim": 0, "eps": 10.0}, name="1-d big eps")
    yield Sample((x((0, 3)),), name="empty")
    yield Sample((x((4, 3), "transposed"),), name="transposed")
    yield Sample((T(np.arange(6).reshape(2, 3)),), name="int", raises=RuntimeError)


OPS = ACTIVATIONS + OTHER_ACT + [
    OpInfo("layer_norm", _layer_norm, _layer_norm_gen, FLOATS, tol=NORM_TOL),
    OpInfo("rms_norm", lambda lib, x, ns, w=None, **kw: lib.nn.functional.rms_norm(x, ns, w, **kw), _rms_norm_gen,
           FLOATS, tol=NORM_TOL),
    OpInfo("group_norm", _group_norm, _group_norm_gen, FLOATS, tol=NORM_TOL),
    OpInfo("batch_norm", _batch_norm, _batch_norm_gen, F32_64, tol=NORM_TOL),
    OpInfo("instance_norm", _instance_norm, _instance_norm_gen, F32_64, tol=NORM_TOL),
    OpInfo("local_response_norm", lambda lib, x, n, **kw: lib.nn.functional.local_response_norm(x, n, **kw),
           _lrn_gen, F32_64, tol=NORM_TOL),
    OpInfo("normalize", lambda lib, x, **kw: lib.nn.functional.normalize(x, **kw), _normalize_gen, FLOATS,
           tol=NORM_TOL),
]


# ---- attention ------------------------------------------------------------------------------------
ATTN_TOL = {"float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2), "float32": (1e-5, 1e-5)}


def _sdpa(lib, q, k, v, **kw):
    return lib.nn.functional.scaled_dot_product_attention(q, k, v, **kw)


def _sdpa_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng, -1.5, 1.5), layout)  # noqa: E731
    yield Sample((x((2, 3, 5, 4)), x((2, 3, 6, 4)), x((2, 3, 6, 7))), name="4-d")
    yield Sample((x((3, 4)), x((5, 4)), x((5, 2))), name="2-d")
    yield Sample((x((2, 5, 4)), x((2, 5, 4)), x((2, 5, 3))), {"is_causal": True}, name="causal")
    yield Sample((x((1, 6, 4)), x((1, 3, 4)), x((1, 3, 2))), {"is_causal": True}, name="causal L > S")
    yield Sample((x((1, 2, 4)), x((1, 5, 4)), x((1, 5, 2))), {"is_causal": True}, name="causal L < S")
    mask = rng.random((5, 6)) > 0.3
    mask[1] = False  # a row with every key masked gives 0
    yield Sample((x((2, 3, 5, 4)), x((2, 3, 6, 4)), x((2, 3, 6, 7))), {"attn_mask": T(mask)}, name="bool mask")
    yield Sample((x((2, 3, 5, 4)), x((2, 3, 6, 4)), x((2, 3, 6, 7))),
                 {"attn_mask": T(rng.random((2, 1, 5, 6)) > 0.2)}, name="bool mask per batch")
    yield Sample((x((2, 3, 5, 4)), x((2, 3, 6, 4)), x((2, 3, 6, 7))), {"attn_mask": x((5, 6))}, name="float mask")
    fm = make((2, 3, 5, 6), dtype, rng)
    fm[0, 0, 2] = -np.inf
    yield Sample((x((2, 3, 5, 4)), x((2, 3, 6, 4)), x((2, 3, 6, 7))), {"attn_mask": T(fm)}, name="float mask -inf")
    yield Sample((x((2, 5, 4)), x((2, 5, 4)), x((2, 5, 4))), {"scale": 0.3}, name="scale")
    yield Sample((x((2, 4, 3, 4)), x((2, 1, 5, 4)), x((2, 1, 5, 6))), name="broadcast heads")
    yield Sample((x((2, 4, 3, 4)), x((2, 2, 5, 4)), x((2, 2, 5, 6))), {"enable_gqa": True}, name="gqa")
    yield Sample((x((2, 3, 4), "transposed"), x((2, 5, 4), "transposed"), x((2, 5, 6), "strided")),
                 name="non-contiguous")
    yield Sample((x((2, 0, 4)), x((2, 5, 4)), x((2, 5, 6))), name="no queries")
    yield Sample((x((2, 3, 4)), x((2, 0, 4)), x((2, 0, 6))), name="no keys")
    yield Sample((x((0, 3, 4)), x((0, 5, 4)), x((0, 5, 6))), name="empty batch")
    yield Sample((x((2, 3, 4)), x((2, 5, 4)), x((2, 5, 6))), {"dropout_p": 1.0}, name="dropout 1")
    qn = make((2, 3, 4), dtype, rng)
    qn[0, 1, 2] = np.nan  # (an infinite query makes inf - inf scores: NaN either way, in different places)
    yield Sample((T(qn), x((2, 5, 4)), x((2, 5, 6))), name="nan")
    yield Sample((x((2, 3, 4)), x((2, 5, 4)), x((2, 5, 6))), {"attn_mask": T(mask[:3, :5]), "is_causal": True},
                 name="mask and causal", raises=RuntimeError)
    yield Sample((x((2, 3, 4)), x((2, 5, 3)), x((2, 5, 6))), name="embedding mismatch", raises=RuntimeError)
    yield Sample((x((2, 3, 4)), x((2, 5, 4)), x((2, 4, 6))), name="length mismatch", raises=RuntimeError)
    yield Sample((x((2, 3, 4)), x((2, 5, 4)), x((2, 5, 6))), {"attn_mask": x((3, 4))}, name="mask shape",
                 raises=RuntimeError)
    yield Sample((x((2, 3, 4)), x((2, 5, 4)), x((2, 5, 6))), {"attn_mask": T(np.zeros((3, 5), np.int64))},
                 name="int mask", raises=RuntimeError)
    yield Sample((x((2, 4, 3, 4)), x((2, 3, 5, 4)), x((2, 3, 5, 6))), {"enable_gqa": True}, name="gqa heads",
                 raises=RuntimeError)
    yield Sample((x((4,)), x((4,)), x((4,))), name="1-d", raises=RuntimeError)
    yield Sample((x((2, 3, 4)), x((2, 5, 4)), x((2, 5, 6))), {"dropout_p": 1.5}, name="bad p", raises=RuntimeError)


# ---- embedding, one_hot, linear, bilinear ---------------------------------------------------------------
def _embedding(lib, idx, w, **kw):
    out = lib.nn.functional.embedding(idx, w, **kw)
    return (out, w.detach().clone()) if "max_norm" in kw else out


def _idx(shape, n, rng, dtype=np.int64):
    return T(rng.integers(0, n, shape).astype(dtype))


def _embedding_gen(dtype, rng):
    w = lambda: T(make((6, 3), dtype, rng))  # noqa: E731
    yield Sample((_idx((4,), 6, rng), w()), name="1-d")
    yield Sample((_idx((2, 3), 6, rng), w()), name="2-d")
    yield Sample((_idx((), 6, rng), w()), name="0-d")
    yield Sample((_idx((0,), 6, rng), w()), name="empty")
    yield Sample((_idx((3, 4), 6, rng, np.int32), w()), name="int32")
    yield Sample((_idx((2, 3), 6, rng, np.int64), T(make((6, 3), dtype, rng), "transposed")), name="transposed w")
    yield Sample((T(np.array([0, 2, 2, 5, 2])), w()), {"padding_idx": 2}, name="padding_idx")
    yield Sample((T(np.array([0, 5, 1, 5])), w()), {"padding_idx": -1}, name="negative padding_idx")
    yield Sample((T(np.array([[0, 2, 2], [2, 1, 0]])), w()), {"scale_grad_by_freq": True}, name="scale_grad_by_freq")
    yield Sample((T(np.array([0, 2, 2, 4])), w()), {"scale_grad_by_freq": True, "padding_idx": 0}, name="both")
    big = make((6, 3), dtype, rng, -4, 4)
    yield Sample((T(np.array([1, 3, 3])), T(big)), {"max_norm": 1.5}, name="max_norm")
    yield Sample((T(np.array([1, 3, 4])), T(big)), {"max_norm": 2.0, "norm_type": 1.0}, name="max_norm L1")
    yield Sample((T(np.array([1.0, 2.0])), w()), name="float indices", raises=RuntimeError)
    yield Sample((T(np.array([1, 6])), w()), name="out of range", raises=IndexError)
    yield Sample((T(np.array([1, -1])), w()), name="negative index", raises=IndexError)
    yield Sample((T(np.array([1, 2])), w()), {"padding_idx": 6}, name="padding out of range", raises=AssertionError)
    yield Sample((T(np.array([1, 2])), T(make((6,), dtype, rng))), name="1-d weight", raises=RuntimeError)


def _one_hot_gen(dtype, rng):
    yield Sample((T(np.array([0, 2, 1, 2])),), name="infer")
    yield Sample((T(np.array([[0, 2], [1, 1]])),), {"num_classes": 4}, name="2-d classes")
    yield Sample((T(np.array(3)),), {"num_classes": 5}, name="0-d")
    yield Sample((T(np.zeros((0,), np.int64)),), {"num_classes": 3}, name="empty")
    yield Sample((T(np.array([[0, 1, 2]]), "transposed"),), name="transposed")
    yield Sample((T(np.zeros((0,), np.int64)),), name="empty infer", raises=RuntimeError)
    yield Sample((T(np.array([1, -1])),), name="negative", raises=RuntimeError)
    yield Sample((T(np.array([1, 3])),), {"num_classes": 3}, name="too big", raises=RuntimeError)
    yield Sample((T(np.array([1, 2], np.int32)),), name="int32", raises=RuntimeError)


def _linear_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    yield Sample((x((3, 4)), x((2, 4)), x((2,))), name="2-d bias")
    yield Sample((x((3, 4)), x((2, 4))), name="no bias")
    yield Sample((x((4,)), x((2, 4)), x((2,))), name="1-d input")
    yield Sample((x((2, 3, 4)), x((5, 4)), x((5,))), name="3-d input")
    yield Sample((x((3, 4)), x((4,))), name="1-d weight")
    yield Sample((x((3, 4)), x((4,)), x(())), name="1-d weight with bias", raises=RuntimeError)
    yield Sample((x((0, 4)), x((2, 4)), x((2,))), name="empty batch")
    yield Sample((x((3, 0)), x((2, 0)), x((2,))), name="zero features")
    yield Sample((x((3, 4), "transposed"), x((2, 4), "transposed"), x((2,), "expanded")), name="views")
    yield Sample((x((3, 4)), x((2, 3))), name="shape mismatch", raises=RuntimeError)
    yield Sample((x((3, 4)), x((2, 4)), x((3,))), name="bias mismatch", raises=RuntimeError)


def _bilinear_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    yield Sample((x((3, 4)), x((3, 5)), x((2, 4, 5)), x((2,))), name="2-d")
    yield Sample((x((4,)), x((5,)), x((2, 4, 5))), name="1-d no bias")
    yield Sample((x((2, 3, 4)), x((2, 3, 5)), x((1, 4, 5)), x((1,))), name="3-d")
    yield Sample((x((0, 4)), x((0, 5)), x((2, 4, 5))), name="empty")
    yield Sample((x((3, 4), "transposed"), x((3, 5)), x((2, 4, 5), "transposed")), name="transposed")
    yield Sample((x((3, 4)), x((2, 5)), x((2, 4, 5))), name="batch mismatch", raises=RuntimeError)
    yield Sample((x((3, 4)), x((3, 5)), x((2, 4, 6))), name="weight mismatch", raises=RuntimeError)


# ---- dropout (the deterministic corners: eval, p = 0, p = 1; the random draws are tested in
# tests/test_nn_functional_extra.py) ---------------------------------------------------------------------
_DROPOUTS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")


def _dropout(lib, name, x, **kw):
    return getattr(lib.nn.functional, name)(x, **kw)


def _dropout_gen(dtype, rng):
    shapes = {"dropout": (2, 3), "dropout1d": (2, 3, 4), "dropout2d": (2, 3, 2, 2), "dropout3d": (2, 3, 2, 2, 2),
              "alpha_dropout": (2, 3), "feature_alpha_dropout": (2, 3, 4)}
    for name, shape in shapes.items():
        for kw in ({"training": False}, {"p": 0.0, "training": True}, {"p": 1.0, "training": True}):
            yield Sample((name, T(make(shape, dtype, rng))), dict(kw), name=f"{name}{kw}")
        yield Sample((name, T(make(shape, dtype, rng))), {"p": 1.5}, name=f"{name} bad p", raises=ValueError)
    yield Sample(("dropout", T(make((0, 3), dtype, rng))), {"p": 0.5}, name="empty")
    yield Sample(("dropout", T(make((3,), dtype, rng, special=True))), {"p": 1.0}, name="p=1 keeps NaN")
    yield Sample(("dropout1d", T(make((2, 3, 4, 5), dtype, rng))), {"p": 0.5}, name="dropout1d 4-d",
                 raises=RuntimeError)


# ---- distances -------------------------------------------------------------------------------------------------
def _cos_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    yield Sample((x((3, 4)), x((3, 4))), name="default dim")
    yield Sample((x((3, 4)), x((4,))), {"dim": -1}, name="broadcast")
    yield Sample((x((2, 3, 4)), x((2, 1, 4))), {"dim": 2, "eps": 1e-3}, name="3-d eps")
    yield Sample((x((5,)), x((5,))), {"dim": 0}, name="1-d")
    z = np.zeros((2, 4), dtype=np_dtype(dtype))
    z[1] = make((4,), dtype, rng)
    yield Sample((T(z), x((2, 4))), name="zero vector")
    yield Sample((x((0, 4)), x((0, 4))), name="empty")
    yield Sample((x((3, 4), "transposed"), x((3, 4), "strided")), name="views")
    yield Sample((T(np.array([1, 2])), T(np.array([2, 3]))), {"dim": 0}, name="ints", raises=RuntimeError)
    yield Sample((x((3, 4)), x((4,))), {"dim": 2}, name="bad dim", raises=IndexError)


def _pdist_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    yield Sample((x((3, 4)), x((3, 4))), name="default")
    yield Sample((x((3, 4)), x((4,))), {"p": 1.0}, name="broadcast p1")
    yield Sample((x((3, 4)), x((3, 4))), {"p": 3.0, "keepdim": True}, name="p3 keepdim")
    yield Sample((x((3, 4)), x((3, 4))), {"p": float("inf")}, name="pinf")
    yield Sample((x((4,)), x((4,))), {"eps": 0.1}, name="1-d eps")
    yield Sample((x(()), x(())), name="0-d")
    yield Sample((x((0, 4)), x((0, 4))), name="empty")
    yield Sample((x((4, 3), "transposed"), x((4, 3))), name="transposed")
    yield Sample((x((3, 4)), x((2, 4))), name="shape mismatch", raises=RuntimeError)


OPS += [
    OpInfo("scaled_dot_product_attention", _sdpa, _sdpa_gen, FLOATS, tol=ATTN_TOL),
    OpInfo("embedding", _embedding, _embedding_gen, F32_64),
    OpInfo("one_hot", lambda lib, x, **kw: lib.nn.functional.one_hot(x, **kw), _one_hot_gen, ("int64",),
           differentiable=False),
    OpInfo("linear", lambda lib, *a: lib.nn.functional.linear(*a), _linear_gen, FLOATS, tol=NORM_TOL),
    OpInfo("bilinear", lambda lib, *a: lib.nn.functional.bilinear(*a), _bilinear_gen, F32_64, tol=NORM_TOL),
    OpInfo("dropout (deterministic)", _dropout, _dropout_gen, FLOATS),
    OpInfo("cosine_similarity", lambda lib, a, b, **kw: lib.nn.functional.cosine_similarity(a, b, **kw), _cos_gen,
           FLOATS, tol=NORM_TOL),
    OpInfo("pairwise_distance", lambda lib, a, b, **kw: lib.nn.functional.pairwise_distance(a, b, **kw),
           _pdist_gen, FLOATS, tol=NORM_TOL),
]


# ---- sampling ------------------------------------------------------------------------------------------------
def _interp(lib, x, **kw):
    return lib.nn.functional.interpolate(x, **kw)


def _interp_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    cases = [
        ((2, 3, 5), {"size": 8}), ((2, 3, 5), {"scale_factor": 0.5}), ((2, 3, 4, 5), {"size": (7, 3)}),
        ((2, 3, 4, 5), {"scale_factor": 2}), ((2, 3, 4, 5), {"scale_factor": (1.7, 0.6)}),
        ((1, 2, 3, 4, 5), {"size": (2, 5, 7)}), ((2, 3, 4, 5), {"size": (6, 9), "mode": "nearest-exact"}),
        ((2, 3, 7), {"size": 3, "mode": "nearest-exact"}),
        ((2, 3, 5), {"size": 9, "mode": "linear"}), ((2, 3, 5), {"size": 9, "mode": "linear", "align_corners": True}),
        ((2, 3, 9), {"scale_factor": 0.4, "mode": "linear"}),
        ((2, 3, 9), {"scale_factor": 0.4, "mode": "linear", "recompute_scale_factor": True}),
        ((2, 3, 4, 5), {"size": (7, 3), "mode": "bilinear"}),
        ((2, 3, 4, 5), {"scale_factor": 1.5, "mode": "bilinear", "align_corners": True}),
        ((2, 3, 4, 5), {"size": (1, 1), "mode": "bilinear", "align_corners": True}),
        ((2, 3, 4, 5), {"size": (7, 3), "mode": "bicubic"}),
        ((2, 3, 4, 5), {"size": (8, 10), "mode": "bicubic", "align_corners": True}),
        ((2, 3, 8, 9), {"size": (3, 4), "mode": "bilinear", "antialias": True}),
        ((2, 3, 8, 9), {"size": (3, 12), "mode": "bicubic", "antialias": True}),
        ((1, 2, 3, 4, 5), {"scale_factor": (2, 0.5, 1.5), "mode": "trilinear"}),
        ((1, 2, 3, 4, 5), {"size": (5, 2, 3), "mode": "trilinear", "align_corners": True}),
        ((2, 3, 7), {"size": 3, "mode": "area"}), ((2, 3, 6, 7), {"size": (4, 10), "mode": "area"}),
        ((1, 2, 5, 4, 3), {"scale_factor": 0.5, "mode": "area"}),
        ((2, 3, 4, 5), {"size": (4, 5), "mode": "bilinear"}), ((0, 3, 4, 5), {"size": (2, 2), "mode": "bilinear"}),
        ((2, 1, 1, 1), {"size": (3, 2), "mode": "bicubic"}),
    ]
    for shape, kw in cases:
        if kw.get("antialias") and dtype in ("float16", "bfloat16"):
            continue  # PyTorch's CPU antialiasing has no 16-bit kernels (ember's has)
        yield Sample((x(shape),), kw, name=f"{shape}{kw}")
    yield Sample((x((2, 3, 5, 4), "transposed"),), {"size": (3, 7), "mode": "bilinear"}, name="transposed")
    yield Sample((T(make((1, 2, 6), dtype, rng, special=True)),), {"size": 4, "mode": "linear"}, name="nan-inf")
    errors = [((2, 3, 4, 5), {}, ValueError), ((2, 3, 4, 5), {"size": 2, "scale_factor": 2}, ValueError),
              ((2, 3, 4, 5), {"size": (2, 2, 2)}, ValueError), ((2, 3, 5), {"size": 4, "mode": "bilinear"}, NIE),
              ((2, 3, 4, 5), {"size": 4, "align_corners": True}, ValueError),
              ((2, 3, 4, 5), {"size": 4, "mode": "nearest", "antialias": True}, ValueError),
              ((2, 3, 4, 5), {"scale_factor": 0.1}, RuntimeError), ((2, 3), {"size": 4}, NIE),
              ((2, 3, 4, 5), {"size": 3, "recompute_scale_factor": True}, ValueError)]
    for shape, kw, exc in errors:
        yield Sample((x(shape),), kw, name=f"error {shape}{kw}", raises=exc)
    yield Sample((T(np.arange(24).reshape(1, 2, 3, 4)),), {"size": 2}, name="int64", raises=NIE)


def _grid_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    g = lambda s, lim=1.3: T(rng.uniform(-lim, lim, s).astype(np_dtype(dtype)))  # noqa: E731
    for mode in ("bilinear", "nearest", "bicubic"):
        for pm in ("zeros", "border", "reflection"):
            for ac in (False, True):
                kw = {"mode": mode, "padding_mode": pm, "align_corners": ac}
                yield Sample((x((2, 3, 4, 5)), g((2, 3, 2, 2))), kw, name=f"4-d {mode} {pm} {ac}")
    for mode in ("bilinear", "nearest"):
        for pm in ("zeros", "reflection"):
            yield Sample((x((1, 2, 3, 4, 5)), g((1, 2, 3, 2, 3), 1.6)),
                         {"mode": mode, "padding_mode": pm, "align_corners": False}, name=f"5-d {mode} {pm}")
    yield Sample((x((2, 3, 1, 1)), g((2, 2, 2, 2))), {"align_corners": True}, name="1x1 input")
    yield Sample((x((2, 3, 4, 5), "transposed"), g((2, 3, 2, 2))), {"align_corners": False}, name="transposed")
    yield Sample((x((0, 3, 4, 5)), g((0, 3, 2, 2))), {"align_corners": False}, name="empty batch")
    yield Sample((x((2, 3, 4, 5)), g((2, 0, 2, 2))), {"align_corners": False}, name="empty grid")
    yield Sample((x((2, 3, 4, 5)), g((2, 3, 2, 3))), {"align_corners": False}, name="grid last dim",
                 raises=RuntimeError)
    yield Sample((x((2, 3, 4, 5)), g((3, 3, 2, 2))), {"align_corners": False}, name="batch", raises=RuntimeError)
    yield Sample((x((1, 2, 3, 4, 5)), g((1, 2, 3, 2, 3))), {"mode": "bicubic", "align_corners": False},
                 name="5-d bicubic", raises=RuntimeError)
    yield Sample((x((2, 3, 4, 5)), g((2, 3, 2, 2))), {"mode": "area", "align_corners": False}, name="mode",
                 raises=ValueError)
    yield Sample((x((2, 3, 0, 5)), g((2, 3, 2, 2))), {"align_corners": False}, name="empty input",
                 raises=RuntimeError)


def _affine_gen(dtype, rng):
    th = lambda s: T(make(s, dtype, rng, -1, 1))  # noqa: E731
    for ac in (False, True):
        yield Sample((th((2, 2, 3)), (2, 3, 4, 5)), {"align_corners": ac}, name=f"2-d {ac}")
        yield Sample((th((1, 3, 4)), (1, 2, 3, 4, 2)), {"align_corners": ac}, name=f"3-d {ac}")
        yield Sample((th((2, 2, 3)), (2, 1, 1, 3)), {"align_corners": ac}, name=f"size 1 {ac}")
    yield Sample((th((2, 3, 2), ), (2, 3, 4, 5)), {"align_corners": False}, name="transposed theta")
    yield Sample((th((2, 3, 4)), (2, 3, 4, 5)), {"align_corners": False}, name="theta shape", raises=ValueError)
    yield Sample((th((2, 2, 3)), (2, 3, 4)), {"align_corners": False}, name="3-d size", raises=NIE)
    yield Sample((th((2, 2, 3)), (2, 3, 0, 5)), {"align_corners": False}, name="zero size", raises=ValueError)


def _affine(lib, theta, size, **kw):
    if tuple(theta.shape[1:]) == (3, 2):  # a transposed view with the right logical shape
        theta = theta.transpose(1, 2)
    return lib.nn.functional.affine_grid(theta, size, **kw)


def _shuffle_gen(dtype, rng):
    x = lambda s, layout="contiguous": T(make(s, dtype, rng), layout)  # noqa: E731
    yield Sample(("pixel_shuffle", x((2, 8, 3, 2)), 2), name="4-d")
    yield Sample(("pixel_shuffle", x((9, 2, 2)), 3), name="3-d")
    yield Sample(("pixel_shuffle", x((2, 1, 4, 3, 2)), 2), name="5-d")
    yield Sample(("pixel_shuffle", x((2, 4, 3, 2)), 1), name="factor 1")
    yield Sample(("pixel_shuffle", x((0, 4, 3, 2)), 2), name="empty")
    yield Sample(("pixel_shuffle", x((2, 4, 3, 2), "transposed"), 2), name="transposed")
    yield Sample(("pixel_unshuffle", x((2, 2, 4, 6)), 2), name="unshuffle 4-d")
    yield Sample(("pixel_unshuffle", x((1, 6, 9)), 3), name="unshuffle 3-d")
    yield Sample(("pixel_unshuffle", x((2, 2, 4, 6), "transposed"), 2), name="unshuffle transposed")
    yield Sample(("pixel_shuffle", x((7, 3, 3)), 2), name="channels", raises=RuntimeError)
    yield Sample(("pixel_shuffle", x((8, 3)), 2), name="2-d", raises=RuntimeError)
    yield Sample(("pixel_shuffle", x((8, 3, 3)), 0), name="factor 0", raises=RuntimeError)
    yield Sample(("pixel_unshuffle", x((2, 3, 4)), 2), name="height", raises=RuntimeError)


def _upsample_gen(dtype, rng):
    x = lambda s: T(make(s, dtype, rng))  # noqa: E731
    yield Sample(("upsample", x((2, 3, 4, 5))), {"scale_factor": 2}, name="upsample")
    yield Sample(("upsample", x((2, 3, 4))), {"size": 7, "mode": "linear"}, name="upsample linear")
    yield Sample(("upsample_nearest", x((2, 3, 4, 5))), {"size": (3, 7)}, name="nearest")
    yield Sample(("upsample_bilinear", x((2, 3, 4, 5))), {"scale_factor": 1.5}, name="bilinear")


def _upsample(lib, name, x, **kw):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(lib.nn.functional, name)(x, **kw)


OPS += [
    OpInfo("interpolate", _interp, _interp_gen, FLOATS, tol={**NORM_TOL, "float32": (1e-5, 1e-5)}),
    OpInfo("grid_sample", lambda lib, x, g, **kw: lib.nn.functional.grid_sample(x, g, **kw), _grid_gen, F32_64,
           tol=NORM_TOL),
    OpInfo("affine_grid", _affine, _affine_gen, F32_64, tol=NORM_TOL),
    OpInfo("pixel_shuffle", lambda lib, name, x, r: getattr(lib.nn.functional, name)(x, r), _shuffle_gen,
           ("bool", "int64") + FLOATS),
    OpInfo("upsample aliases", _upsample, _upsample_gen, F32_64),
]
