"""ember.onnx.ops math operators (math.py, math2.py): the ONNX node-suite cases of these ops, upgraders
of older opset forms, refusals of dtypes ember lacks, and numpy/torch checks of the semantics that
differ from ember's own (integer Div, Mod, BitShift, empty reductions, coerce-to-2D Softmax...)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper  # noqa: E402

import ember  # noqa: E402
from ember.onnx import ops  # noqa: E402
from ember.onnx.ops import OPS, OnnxOpError  # noqa: E402

MINE = {k[1] for k, v in OPS.items() if v.fn.__module__.rsplit(".", 1)[-1] in ("math", "math2")}

# numpy dtypes with no ember counterpart: a node-suite case using one can only be refused
_UNREPRESENTABLE = ("uint16", "uint32", "uint64", "object", "str", "float8", "int4", "uint4",
                    "float4", "int2", "uint2", "e8m0", "complex")


def E(a, dtype=None):  # noqa: N802 - short helper
    return ember.from_numpy(np.array(a, dtype=dtype))


def N(t):  # noqa: N802
    return t.detach().numpy()


# ---------------------------------------------------------------- a tiny direct evaluator

def _attr(a):
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, onnx.TensorProto):
        return ember.from_numpy(numpy_helper.to_array(v).copy())
    if isinstance(v, list):
        return tuple(x.decode() if isinstance(x, bytes) else x for x in v)
    return v


def run_direct(model, inputs):
    """Evaluate a graph of registered ops by calling their functions, applying upgraders like the
    importer does (independent of the importer, so op bugs and importer bugs stay apart)."""
    opset = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")][0]
    env = {vi.name: ember.from_numpy(np.array(x, copy=True, order="C"))
           for vi, x in zip(model.graph.input, inputs)}
    for n in model.graph.node:
        d = OPS[("", n.op_type)]
        node = {"op_type": n.op_type, "inputs": list(n.input), "outputs": list(n.output),
                "attrs": {a.name: _attr(a) for a in n.attribute}, "opset": opset, "constants": {}}
        for below, up in d.upgraders:
            if opset < below:
                node = up(node) or node
        for k, v in (node.get("new_constants") or {}).items():
            env[k] = ember.from_numpy(np.array(v))
        args = [env[i] if i else None for i in node["inputs"]]
        while args and args[-1] is None:
            args.pop()
        out = d.fn(*args, **node["attrs"])
        for name, o in zip(node["outputs"], out if isinstance(out, tuple) else (out,)):
            env[name] = o
    return [N(env[o.name]) for o in model.graph.output]


def _mismatch(got, exp, rtol, atol):
    got = np.asarray(got)
    if got.shape != exp.shape:
        return f"shape {got.shape} != {exp.shape}"
    if got.dtype != exp.dtype:
        return f"dtype {got.dtype} != {exp.dtype}"
    if exp.dtype.kind == "f" or exp.dtype.name == "bfloat16":
        if not np.allclose(got.astype(np.float64), exp.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True):
            return "values differ"
    elif not np.array_equal(got, exp):
        return "values differ"
    return None


def _arr(x):
    return np.asarray(numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else x)


@pytest.fixture(scope="module")
def suite_cases():
    from onnx.backend.test.loader import load_model_tests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    out = []
    for t in cases:
        types = {n.op_type for n in t.model.graph.node}
        if types and types <= (MINE | {"Constant"}) and types & MINE and "_expanded" not in t.name:
            out.append(t)
    return out


def _run_cases(cases, runner):
    passed, failed = [], {}
    for t in cases:
        err = None
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                for inputs, outputs in t.data_sets:
                    got = runner(t.model, [_arr(x) for x in inputs])
                    for g, e in zip(got, outputs):
                        err = err or _mismatch(g, _arr(e), t.rtol, t.atol)
        except Exception as ex:  # noqa: BLE001 - recorded and classified below
            err = f"{type(ex).__name__}: {ex}"
        (failed.__setitem__(t.name, err) if err else passed.append(t.name))
    return passed, failed


def _unrepresentable(t) -> bool:
    """Whether a case feeds or expects a dtype ember has no counterpart for."""
    names = []
    for inputs, outputs in t.data_sets:
        names += [str(_arr(x).dtype) for x in list(inputs) + list(outputs)]
    names += [t.name.lower()]
    return any(u in n for n in names for u in _UNREPRESENTABLE)


def test_node_suite_cases_of_math_ops(suite_cases):
    """Every node-suite case of these ops passes, except those using dtypes ember lacks, which
    fail with a clear error (OnnxOpError from the op, or ember's TypeError on input conversion)."""
    assert len(suite_cases) > 600
    passed, failed = _run_cases(suite_cases, run_direct)
    unexpected = {n: e for n, e in failed.items()
                  if not _unrepresentable(next(t for t in suite_cases if t.name == n))}
    assert not unexpected, unexpected
    for name, err in failed.items():
        assert "OnnxOpError" in err or "no ember counterpart" in err, (name, err)
    print(f"\nmath ops node suite: {len(passed)} pass, {len(failed)} fail (dtypes ember lacks)")
    assert len(passed) >= 480


def test_node_suite_cases_through_backend(suite_cases):
    """The same cases through the importer (EmberBackend): no more failures than the direct run."""
    backend = pytest.importorskip("ember.onnx.backend")
    sample = [t for t in suite_cases if not _unrepresentable(t)]
    passed, failed = _run_cases(sample, lambda m, x: list(backend.EmberBackend.run_model(m, x)))
    assert not failed, failed
    assert len(passed) == len(sample)


# ---------------------------------------------------------------- semantics vs numpy/torch

def test_integer_div_truncates_and_float_div_divides():
    a, b = np.array([7, -7, 7, -7], np.int32), np.array([2, 2, -2, -2], np.int32)
    r = ops.div(E(a), E(b))
    assert r.dtype is ember.int32
    np.testing.assert_array_equal(N(r), np.trunc(a / b).astype(np.int32))
    f = ops.div(E([1.0, 3.0], np.float32), E([2.0, 4.0], np.float32))
    np.testing.assert_allclose(N(f), [0.5, 0.75])


def test_mod_sign_conventions():
    a, b = np.array([5, -5, 5, -5], np.int64), np.array([3, 3, -3, -3], np.int64)
    np.testing.assert_array_equal(N(ops.mod(E(a), E(b))), np.mod(a, b))
    np.testing.assert_array_equal(N(ops.mod(E(a), E(b), fmod=1)), np.fmod(a, b))
    x, y = np.array([5.5, -5.5], np.float32), np.array([2.0, 2.0], np.float32)
    np.testing.assert_allclose(N(ops.mod(E(x), E(y), fmod=1)), np.fmod(x, y))


def test_pow_keeps_base_type():
    r = ops.pow(E([2, 3], np.int32), E([2.0, 0.5], np.float32))
    assert r.dtype is ember.int32
    np.testing.assert_array_equal(N(r), [4, 1])
    r = ops.pow(E([2.0, 3.0], np.float32), E([3, 2], np.int64))
    assert r.dtype is ember.float32
    np.testing.assert_allclose(N(r), [8.0, 9.0])


def test_bitshift_out_of_range_amounts():
    x = E([1, 200, 3], np.uint8)
    np.testing.assert_array_equal(N(ops.bit_shift(x, E([1, 1, 8], np.uint8), direction="LEFT")), [2, 144, 0])
    s = E([-8, -8, 8, 8], np.int32)
    np.testing.assert_array_equal(N(ops.bit_shift(s, E([1, 40, 40, -1], np.int32), direction="RIGHT")),
                                  [-4, -1, 0, 0])
    with pytest.raises(OnnxOpError, match="BitShift"):
        ops.bit_shift(x, x, direction="UP")
    with pytest.raises(OnnxOpError, match="BitShift.*float64"):
        ops.bit_shift(E([1.0]), E([1.0]), direction="LEFT")


def test_variadic_ops_broadcast_and_propagate_nan():
    a = np.array([[1.0, np.nan, 3.0]], np.float32)
    b = np.array([[2.0], [0.0]], np.float32)
    c = np.float32(1.5)
    np.testing.assert_array_equal(N(ops.max(E(a), E(b), E(c))), np.maximum(np.maximum(a, b), c))
    np.testing.assert_array_equal(N(ops.min(E(a), E(b))), np.minimum(a, b))
    np.testing.assert_allclose(N(ops.sum(E(a), E(b), E(c))), a + b + c)
    np.testing.assert_allclose(N(ops.mean(E(a), E(b))), (a + b) / 2)
    one = ops.max(E(a))
    np.testing.assert_array_equal(N(one), a)


@pytest.mark.parametrize("name,ref", [
    ("reduce_sum", lambda x, ax, k: np.sum(x, ax, keepdims=k)),
    ("reduce_mean", lambda x, ax, k: np.mean(x, ax, keepdims=k)),
    ("reduce_max", lambda x, ax, k: np.max(x, ax, keepdims=k)),
    ("reduce_min", lambda x, ax, k: np.min(x, ax, keepdims=k)),
    ("reduce_prod", lambda x, ax, k: np.prod(x, ax, keepdims=k)),
    ("reduce_l1", lambda x, ax, k: np.sum(np.abs(x), ax, keepdims=k)),
    ("reduce_l2", lambda x, ax, k: np.sqrt(np.sum(x * x, ax, keepdims=k))),
    ("reduce_sum_square", lambda x, ax, k: np.sum(x * x, ax, keepdims=k)),
    ("reduce_log_sum", lambda x, ax, k: np.log(np.sum(x, ax, keepdims=k))),
    ("reduce_log_sum_exp", lambda x, ax, k: np.log(np.sum(np.exp(x), ax, keepdims=k))),
])
def test_reductions_match_numpy(name, ref):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 2.0, (2, 3, 4)).astype(np.float32)
    fn = getattr(ops, name)
    for axes, keep in [((1,), 1), ((0, -1), 0), (None, 1), (None, 0)]:
        ax = None if axes is None else E(list(axes), np.int64)
        got = fn(E(x), ax, keepdims=keep)
        exp = ref(x.astype(np.float64), axes, bool(keep))
        assert got.dtype is ember.float32
        np.testing.assert_allclose(N(got), exp, rtol=1e-5, err_msg=f"{name} {axes} {keep}")
    # noop_with_empty_axes: only the elementwise part
    got = fn(E(x), E([], np.int64), noop_with_empty_axes=1)
    assert tuple(got.shape) == x.shape
    # a 0-d input
    s = fn(E(np.float32(1.5)))
    assert tuple(s.shape) == ()


def test_reductions_of_empty_axes_give_the_identity():
    x = E(np.zeros((2, 0, 3), np.float32))
    ax = E([1], np.int64)
    np.testing.assert_array_equal(N(ops.reduce_sum(x, ax)), np.zeros((2, 1, 3)))
    np.testing.assert_array_equal(N(ops.reduce_prod(x, ax, keepdims=0)), np.ones((2, 3)))
    np.testing.assert_array_equal(N(ops.reduce_max(x, ax, keepdims=0)), np.full((2, 3), -np.inf))
    np.testing.assert_array_equal(N(ops.reduce_min(x, ax, keepdims=0)), np.full((2, 3), np.inf))
    np.testing.assert_array_equal(N(ops.reduce_log_sum_exp(x, ax, keepdims=0)), np.full((2, 3), -np.inf))
    xi = E(np.zeros((0, 2), np.int32))
    r = ops.reduce_max(xi, E([0], np.int64), keepdims=0)
    assert r.dtype is ember.int32 and N(r).tolist() == [np.iinfo(np.int32).min] * 2


def test_integer_and_bool_reductions_keep_their_type():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    r = ops.reduce_sum(E(x), E([1], np.int64), keepdims=0)
    assert r.dtype is ember.int32 and N(r).tolist() == [6, 15]
    r = ops.reduce_mean(E(x), E([1], np.int64), keepdims=0)
    assert r.dtype is ember.int32 and N(r).tolist() == [2, 5]
    b = E([[True, False], [True, True]])
    assert N(ops.reduce_max(b, E([1], np.int64), keepdims=0)).tolist() == [True, True]
    assert N(ops.reduce_min(b, E([1], np.int64), keepdims=0)).tolist() == [False, True]


def test_argmax_argmin_select_last_index():
    x = np.array([[2, 5, 5], [7, 1, 7]], np.float32)
    assert N(ops.argmax(E(x), axis=1, keepdims=0)).tolist() == [1, 0]
    assert N(ops.argmax(E(x), axis=1, keepdims=0, select_last_index=1)).tolist() == [2, 2]
    r = ops.argmin(E(x), axis=0, select_last_index=1)
    assert r.dtype is ember.int64 and N(r).tolist() == [[0, 1, 0]]


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum_cumprod(exclusive, reverse):
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)

    def ref(f, ident):
        y = x[:, ::-1] if reverse else x
        if exclusive:
            y = np.concatenate([np.full((2, 1), ident, y.dtype), y[:, :-1]], 1)
        r = f(y, axis=1).astype(np.int32)
        return r[:, ::-1] if reverse else r
    got = ops.cumsum(E(x), E(1, np.int64), exclusive=exclusive, reverse=reverse)
    assert got.dtype is ember.int32
    np.testing.assert_array_equal(N(got), ref(np.cumsum, 0))
    got = ops.cumprod(E(x), E([-1], np.int64), exclusive=exclusive, reverse=reverse)
    np.testing.assert_array_equal(N(got), ref(np.cumprod, 1))


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def test_softmax_family_and_legacy_coerce_2d():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(N(ops.softmax(E(x), axis=1)), _np_softmax(x, 1), rtol=1e-5)
    np.testing.assert_allclose(N(ops.log_softmax(E(x))), np.log(_np_softmax(x, -1)), rtol=1e-5, atol=1e-6)
    hm = N(ops.hardmax(E(x), axis=1))
    np.testing.assert_array_equal(hm, (np.arange(3)[None, :, None] == x.argmax(1)[:, None, :]).astype(np.float32))
    # opset < 13: the upgrader turns on the coerce-to-2D semantics (normalise over dims [axis:])
    node = {"op_type": "Softmax", "inputs": ["x"], "outputs": ["y"], "attrs": {}, "opset": 11}
    for _below, up in OPS[("", "Softmax")].upgraders:
        node = up(node)
    assert node["attrs"] == {"axis": 1, "_coerce_2d": 1}
    got = N(ops.softmax(E(x), **node["attrs"]))
    np.testing.assert_allclose(got, _np_softmax(x.reshape(2, 12), 1).reshape(x.shape), rtol=1e-5)
    got = N(ops.hardmax(E(x), axis=1, _coerce_2d=1))
    exp = np.zeros((2, 12), np.float32)
    exp[np.arange(2), x.reshape(2, 12).argmax(1)] = 1
    np.testing.assert_array_equal(got, exp.reshape(x.shape))


def test_clip_bounds_and_legacy_attributes():
    x = np.array([-3.0, -1.0, 0.5, 2.0, np.nan], np.float32)
    np.testing.assert_array_equal(N(ops.clip(E(x), E(np.float32(-1)), E(np.float32(1)))), np.clip(x, -1, 1))
    np.testing.assert_array_equal(N(ops.clip(E(x), None, E(np.float32(0)))), np.minimum(x, 0))
    np.testing.assert_array_equal(N(ops.clip(E([1, 5, 9], np.int32), E(np.int32(2)), E(np.int32(6)))), [2, 5, 6])
    node = {"op_type": "Clip", "inputs": ["x"], "outputs": ["y"], "attrs": {"max": 1.0}, "opset": 6}
    (below, up), = OPS[("", "Clip")].upgraders
    node = up(node)
    assert below == 11 and node["inputs"][:2] == ["x", ""] and len(node["inputs"]) == 3
    assert float(node["new_constants"][node["inputs"][2]]) == 1.0 and node["attrs"] == {}


def test_reduce_axes_attribute_upgrader():
    for name, below in (("ReduceSum", 13), ("ReduceMean", 18), ("ReduceMax", 18), ("ReduceLogSumExp", 18)):
        node = {"op_type": name, "inputs": ["x"], "outputs": ["y"], "attrs": {"axes": (0, 2), "keepdims": 0}}
        ups = [u for b, u in OPS[("", name)].upgraders if b == below]
        assert ups, name
        node = ups[0](node)
        assert node["attrs"] == {"keepdims": 0}
        assert node["new_constants"][node["inputs"][1]].tolist() == [0, 2]


def test_legacy_models_through_the_importer_match_onnxruntime():
    """Old opset forms (Clip-6 attributes, ReduceMean-13 axes attribute, Softmax-11 coerce-to-2D,
    Gemm-9) imported end to end and compared with onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    em_onnx = pytest.importorskip("ember.onnx")
    from onnx import TensorProto as TP
    nodes = [helper.make_node("Clip", ["x"], ["c"], min=-0.5, max=0.7),
             helper.make_node("Softmax", ["c"], ["s"], axis=1),
             helper.make_node("ReduceMean", ["s"], ["m"], axes=[2], keepdims=0),
             helper.make_node("Gemm", ["m", "w", "b"], ["y"], transB=1, alpha=0.5)]
    rng = np.random.default_rng(2)
    w = numpy_helper.from_array(rng.normal(size=(5, 4)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.normal(size=(5,)).astype(np.float32), "b")
    g = helper.make_graph(nodes, "legacy", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 4, 3])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, [2, 5])], [w, b])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 10)])
    model.ir_version = 5
    x = rng.normal(size=(2, 4, 3)).astype(np.float32)
    exp = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = N(em_onnx.load(model)(E(x)))
    np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-6)


def test_casts_and_refused_dtypes():
    x = E([1.7, -2.2, 0.0], np.float32)
    r = ops.cast(x, to=6)
    assert r.dtype is ember.int32 and N(r).tolist() == [1, -2, 0]
    assert N(ops.cast(x, to=9)).tolist() == [True, True, False]
    assert ops.cast_like(x, E([1], np.int8)).dtype is ember.int8
    assert ops.cast(x, to=16).dtype is ember.bfloat16
    for code, name in ((17, "FLOAT8E4M3FN"), (22, "INT4"), (8, "STRING"), (12, "UINT32")):
        with pytest.raises(OnnxOpError, match=f"Cast.*{name}"):
            ops.cast(x, to=code)
    # Cast-1 named the type with a string
    node = {"op_type": "Cast", "inputs": ["x"], "outputs": ["y"], "attrs": {"to": "INT64"}, "opset": 1}
    node = OPS[("", "Cast")].upgraders[0][1](node)
    assert node["attrs"]["to"] == 7
    bits = ops.bit_cast(E(np.array([1.0, -2.0], np.float32)), to=6)
    np.testing.assert_array_equal(N(bits), np.array([1.0, -2.0], np.float32).view(np.int32))
    with pytest.raises(OnnxOpError, match="BitCast"):
        ops.bit_cast(E([1.0], np.float32), to=7)


def test_float_only_ops_refuse_integers_with_the_op_name():
    with pytest.raises(OnnxOpError, match="Sqrt.*int32"):
        ops.sqrt(E([4], np.int32))
    with pytest.raises(OnnxOpError, match="Softmax.*int64"):
        ops.softmax(E([1, 2]))
    with pytest.raises(OnnxOpError, match="And.*int64"):
        ops.and_(E([1]), E([1]))
    with pytest.raises(OnnxOpError, match="MatMulInteger.*float32"):
        ops.matmul_integer(E([[1.0]], np.float32), E([[1]], np.uint8))


def test_activations_match_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = np.linspace(-4, 4, 41).astype(np.float64)
    tx = torch.from_numpy(x)
    cases = [
        (ops.relu(E(x)), tf.relu(tx)),
        (ops.leaky_relu(E(x), alpha=0.1), tf.leaky_relu(tx, 0.1)),
        (ops.elu(E(x), alpha=0.7), tf.elu(tx, 0.7)),
        # ONNX's default Selu constants are float32-rounded; torch's are exact
        (ops.selu(E(x), alpha=1.6732632423543772, gamma=1.0507009873554805), tf.selu(tx)),
        (ops.celu(E(x), alpha=2.0), tf.celu(tx, 2.0)),
        (ops.gelu(E(x)), tf.gelu(tx)),
        (ops.gelu(E(x), approximate="tanh"), tf.gelu(tx, approximate="tanh")),
        (ops.hard_sigmoid(E(x), alpha=1 / 6, beta=0.5), tf.hardsigmoid(tx)),
        (ops.hard_swish(E(x)), tf.hardswish(tx)),
        (ops.mish(E(x)), tf.mish(tx)),
        (ops.softplus(E(x)), tf.softplus(tx)),
        (ops.softsign(E(x)), tf.softsign(tx)),
        (ops.swish(E(x), alpha=1.0), tf.silu(tx)),
        (ops.thresholded_relu(E(x), alpha=1.0), torch.where(tx > 1, tx, 0.0)),
        (ops.shrink(E(x), bias=0.5, lambd=1.0), torch.where(tx < -1, tx + 0.5, torch.where(tx > 1, tx - 0.5, 0.0))),
        (ops.prelu(E(x.reshape(41, 1)), E(np.array([0.25]))),
         tf.prelu(tx.reshape(41, 1), torch.tensor([0.25], dtype=tx.dtype))),
        (ops.swiglu(E(x), E(x[::-1].copy()), alpha=1.5), tx * torch.sigmoid(1.5 * tx) * tx.flip(0)),
    ]
    for i, (got, exp) in enumerate(cases):
        np.testing.assert_allclose(N(got), exp.numpy(), rtol=1e-10, atol=1e-12, err_msg=str(i))


def test_matrix_ops():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(5, 4)).astype(np.float32)
    c = rng.normal(size=(1, 5)).astype(np.float32)
    np.testing.assert_allclose(N(ops.gemm(E(a), E(b), E(c), alpha=0.5, beta=2.0, transB=1)),
                               0.5 * a @ b.T + 2.0 * c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(N(ops.gemm(E(a.T.copy()), E(b.T.copy()), transA=1)), a @ b.T, rtol=1e-5, atol=1e-6)
    v = rng.normal(size=(4,)).astype(np.float32)
    np.testing.assert_allclose(N(ops.matmul(E(a), E(v))), a @ v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(N(ops.einsum(E(a), E(b), equation="ij, kj -> ik")), a @ b.T, rtol=1e-5, atol=1e-6)
    m = rng.normal(size=(2, 3, 3))
    np.testing.assert_allclose(N(ops.det(E(m))), np.linalg.det(m), rtol=1e-10)
    A = rng.integers(0, 255, (2, 3)).astype(np.uint8)  # noqa: N806
    B = rng.integers(-128, 127, (3, 4)).astype(np.int8)  # noqa: N806
    azp, bzp = np.array([3, 5], np.uint8), np.array([1, -2, 0, 4], np.int8)
    r = ops.matmul_integer(E(A), E(B), E(azp), E(bzp))
    assert r.dtype is ember.int32
    exp = (A.astype(np.int32) - azp[:, None].astype(np.int32)) @ (B.astype(np.int32) - bzp.astype(np.int32))
    np.testing.assert_array_equal(N(r), exp)


def test_imported_ops_are_differentiable():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 4))
    w = rng.normal(size=(5, 4))
    ex = E(x).requires_grad_()
    ew = E(w).requires_grad_()
    y = ops.reduce_sum_square(ops.softmax(ops.gelu(ops.gemm(ex, ew, transB=1)), axis=1), keepdims=0) \
        + ops.reduce_log_sum_exp(ops.elu(ex), E([1], np.int64)).sum()
    y.backward()
    tx = torch.from_numpy(x).requires_grad_()
    tw = torch.from_numpy(w).requires_grad_()
    ty = (torch.softmax(torch.nn.functional.gelu(tx @ tw.T), 1) ** 2).sum() \
        + torch.logsumexp(torch.nn.functional.elu(tx), 1, keepdim=True).sum()
    ty.backward()
    np.testing.assert_allclose(float(N(y)), ty.item(), rtol=1e-10)
    np.testing.assert_allclose(N(ex.grad), tx.grad.numpy(), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(N(ew.grad), tw.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_where_isinf_isnan_sign_round():
    x = np.array([-np.inf, -1.5, 0.5, 2.5, np.inf, np.nan], np.float32)
    assert N(ops.is_inf(E(x), detect_negative=0)).tolist() == [False, False, False, False, True, False]
    assert N(ops.is_inf(E(x), detect_positive=0)).tolist() == [True, False, False, False, False, False]
    assert N(ops.is_nan(E(x))).tolist() == [False] * 5 + [True]
    np.testing.assert_array_equal(N(ops.round(E(x))), np.round(x))
    np.testing.assert_array_equal(N(ops.sign(E([-3, 0, 4], np.int32))), [-1, 0, 1])
    r = ops.where(E([True, False]), E([1, 2], np.int32), E([[7], [8]], np.int32))
    np.testing.assert_array_equal(N(r), [[1, 7], [1, 8]])


@pytest.mark.parametrize("name,kw", [
    ("elu", {"alpha": 0.5}), ("selu", {}), ("celu", {"alpha": 1.5}), ("gelu", {"approximate": "tanh"}),
    ("mish", {}), ("softplus", {}), ("softsign", {}), ("hard_swish", {}), ("swish", {"alpha": 0.7}),
    ("log_softmax", {"axis": 0}), ("softmax", {"axis": 1, "_coerce_2d": 1}),
])
def test_composite_activations_gradcheck(name, kw):
    rng = np.random.default_rng(5)
    # keep clear of the kinks (0, +-3) where finite differences are meaningless
    x = rng.uniform(0.2, 2.5, (3, 2, 2)) * rng.choice([-1.0, 1.0], (3, 2, 2))
    t = E(x).requires_grad_()
    assert ember.autograd.gradcheck(lambda v: getattr(ops, name)(v, **kw), (t,))


def test_legacy_broadcast_with_axis_is_refused():
    up = [u for b, u in OPS[("", "Add")].upgraders if b == 7][0]
    node = up({"op_type": "Add", "inputs": ["a", "b"], "outputs": ["c"], "attrs": {"broadcast": 1}, "opset": 6})
    assert node["attrs"] == {}
    with pytest.raises(OnnxOpError, match="Add-6.*axis"):
        up({"op_type": "Add", "inputs": ["a", "b"], "outputs": ["c"], "attrs": {"broadcast": 1, "axis": 1},
            "opset": 6})


def test_torch_exported_math_model_matches_onnxruntime_and_torch_gradients():
    """A model of these ops exported by torch.onnx (opset 13: Reduce* axes attributes, upgraded)
    runs like onnxruntime, and its input gradients through ember match PyTorch's."""
    torch = pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    em_onnx = pytest.importorskip("ember.onnx")
    import io
    tf = torch.nn.functional

    class M(torch.nn.Module):
        def forward(self, x, y):
            a = tf.gelu(x) + tf.hardswish(y)
            b = torch.softmax(a, -1) * torch.clamp(x, -0.5, 0.5) + tf.elu(y)
            c = b.mean(dim=1, keepdim=True) + b.amax(dim=-1, keepdim=True) + torch.cumsum(x, 1)
            d = torch.einsum("bij,bkj->bik", c, a) + torch.where(x > 0, x, y).sum(-1, keepdim=True)
            e = tf.softplus(d) / (1 + d.abs()) - torch.log_softmax(d, 1)
            return e.pow(2) + tf.leaky_relu(e, 0.2) + torch.sigmoid(e).sqrt(), torch.argmax(e, -1)

    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(2, 3, 4, generator=gen), torch.randn(2, 3, 4, generator=gen)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(M(), (x, y), f, opset_version=13, dynamo=False, input_names=["x", "y"],
                          dynamic_axes={"x": {0: "b"}, "y": {0: "b"}})
    data = f.getvalue()
    exp = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x.numpy(), "y": y.numpy()})
    mod = em_onnx.load(onnx.load_from_string(data))
    ex, ey = E(x.numpy()).requires_grad_(), E(y.numpy()).requires_grad_()
    out, idx = mod(ex, ey)
    np.testing.assert_allclose(N(out), exp[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(N(idx), exp[1])
    out.sum().backward()
    tx, ty = x.clone().requires_grad_(), y.clone().requires_grad_()
    M()(tx, ty)[0].sum().backward()
    np.testing.assert_allclose(N(ex.grad), tx.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(N(ey.grad), ty.grad.numpy(), rtol=1e-3, atol=1e-4)
