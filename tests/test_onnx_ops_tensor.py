"""ONNX tensor ops (ember/onnx/ops/tensor.py, tensor2.py): the ONNX node-suite cases of these ops,
the old-opset upgraders against onnxruntime, gradients against torch, and numpy edge cases."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import ember
from ember.onnx import ops
from ember.onnx.ops import OPS, OnnxOpError

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

MINE = set("Reshape Flatten Transpose Squeeze Unsqueeze Concat Split Slice Gather GatherElements GatherND "
           "Scatter ScatterElements ScatterND Pad Tile Expand Shape Size Range ConstantOfShape EyeLike "
           "OneHot NonZero Unique TopK Compress DepthToSpace SpaceToDepth Trilu ReverseSequence Resize "
           "Upsample GridSample CenterCropPad Col2Im AffineGrid TensorScatter".split())
# Node-suite cases of these ops that cannot pass, with the reason (they must fail cleanly).
EXPECTED_FAIL = {"test_top_k_uint64": "ember has no uint64"}


def _attr(a):
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, onnx.TensorProto):
        return numpy_helper.to_array(v)
    if isinstance(v, list):
        return tuple(x.decode() if isinstance(x, bytes) else x for x in v)
    return v


def run_node(node, opset: int, inputs: dict[str, np.ndarray]) -> tuple:
    """Run one NodeProto the way generated code does: upgrade it to the newest form (with the
    importer's upgrade pass), then call the registered function with ember tensors."""
    from ember.onnx.graph import Node
    from ember.onnx.upgrade import upgrade_node
    consts = dict(inputs)
    n = Node(node.op_type, list(node.input), list(node.output), {a.name: _attr(a) for a in node.attribute},
             node.name, "", opset)
    upgrade_node(n, consts)
    fn = OPS[("", n.op_type)].fn
    args = [None if not name else ember.from_numpy(np.ascontiguousarray(consts[name])) for name in n.inputs]
    while args and args[-1] is None:
        args.pop()
    kw = {k: ember.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in n.attrs.items()}
    if "n_outputs" in inspect.signature(fn).parameters:
        kw["n_outputs"] = len(n.outputs)
    out = fn(*args, **kw)
    return out if isinstance(out, tuple) else (out,)


def _check(got, exp, rtol=1e-3, atol=1e-5):
    g = got.detach().numpy() if isinstance(got, ember.Tensor) else np.asarray(got)
    assert g.shape == exp.shape, f"shape {g.shape} vs {exp.shape}"
    if exp.dtype.kind in "fc" or str(exp.dtype) == "bfloat16":
        assert str(g.dtype) == str(exp.dtype), f"dtype {g.dtype} vs {exp.dtype}"
        np.testing.assert_allclose(g.astype(np.float64), exp.astype(np.float64), rtol=rtol, atol=atol)
    else:
        assert str(g.dtype) == str(exp.dtype), f"dtype {g.dtype} vs {exp.dtype}"
        np.testing.assert_array_equal(g, exp)


def _suite_cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.loader import load_model_tests
        out = []
        for t in load_model_tests(kind="node"):
            nodes = t.model.graph.node
            if len(nodes) == 1 and nodes[0].op_type in MINE:
                out.append(t)
    return out


CASES = _suite_cases()


def test_suite_has_the_cases():
    assert len(CASES) >= 250
    assert {c.model.graph.node[0].op_type for c in CASES} == MINE


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_suite_case(case):
    m = case.model
    names = [i.name for i in m.graph.input]
    for ins, outs in case.data_sets:
        if case.name in EXPECTED_FAIL:
            with pytest.raises((OnnxOpError, TypeError)):
                run_node(m.graph.node[0], m.opset_import[0].version, dict(zip(names, ins)))
            return
        got = run_node(m.graph.node[0], m.opset_import[0].version, dict(zip(names, ins)))
        assert len(got) >= len(outs)
        for g, e in zip(got, outs):
            _check(g, e)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_suite_case_through_backend(case):
    """The same cases through the whole importer (upgrade, inference, folding, codegen)."""
    backend = pytest.importorskip("ember.onnx.backend")
    ins, outs = case.data_sets[0]
    if case.name in EXPECTED_FAIL:
        with pytest.raises(Exception):  # noqa: B017 -- refused by the importer or by from_numpy
            backend.EmberBackend.run_model(case.model, ins)
        return
    got = backend.EmberBackend.run_model(case.model, ins)
    for g, e in zip(got, outs):
        _check(g, e)


# --------------------------------------------------------------------------- old opsets vs onnxruntime


def _ort(node, opset: int, inputs: dict[str, np.ndarray], out_types) -> list[np.ndarray]:
    ort = pytest.importorskip("onnxruntime")
    g = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, t, None) for o, t in zip(node.output, out_types)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


F = TensorProto.FLOAT
rng = np.random.default_rng(0)
X4 = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
OLD = [
    ("squeeze11", helper.make_node("Squeeze", ["x"], ["y"], axes=[0, -2]), 11,
     {"x": rng.standard_normal((1, 3, 1, 2)).astype(np.float32)}, [F]),
    ("unsqueeze11", helper.make_node("Unsqueeze", ["x"], ["y"], axes=[0, -1]), 11, {"x": X4}, [F]),
    ("split11", helper.make_node("Split", ["x"], ["a", "b"], axis=3, split=[1, 3]), 11, {"x": X4}, [F, F]),
    ("split11_equal", helper.make_node("Split", ["x"], ["a", "b"], axis=3), 11, {"x": X4}, [F, F]),
    ("slice1", helper.make_node("Slice", ["x"], ["y"], starts=[1, -3], ends=[100, -1], axes=[1, 3]), 1, {"x": X4}, [F]),
    ("pad2_reflect", helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 2, 0, 0, 1, 3], mode="reflect"), 2,
     {"x": X4}, [F]),
    ("pad2_value", helper.make_node("Pad", ["x"], ["y"], pads=[0, 1, 0, 1, 0, 0, 2, 0], value=1.5), 2, {"x": X4}, [F]),
    ("reshape13", helper.make_node("Reshape", ["x", "s"], ["y"]), 13,
     {"x": X4, "s": np.array([0, -1, 2], np.int64)}, [F]),
    ("upsample7_nearest", helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0]), 7, {"x": X4}, [F]),
    ("upsample7_linear", helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 2.0], mode="linear"), 7,
     {"x": X4}, [F]),
    ("upsample9", helper.make_node("Upsample", ["x", "s"], ["y"]), 9,
     {"x": X4, "s": np.array([1, 1, 3, 2], np.float32)}, [F]),
    ("resize10_up", helper.make_node("Resize", ["x", "s"], ["y"]), 10,
     {"x": X4, "s": np.array([1, 1, 2.5, 1.5], np.float32)}, [F]),
    ("resize10_down", helper.make_node("Resize", ["x", "s"], ["y"]), 10,
     {"x": X4, "s": np.array([1, 1, 0.6, 0.6], np.float32)}, [F]),
    ("resize10_linear", helper.make_node("Resize", ["x", "s"], ["y"], mode="linear"), 10,
     {"x": X4, "s": np.array([1, 1, 2, 1.5], np.float32)}, [F]),
    ("resize11_sizes", helper.make_node("Resize", ["x", "r", "s", "z"], ["y"], mode="cubic"), 11,
     {"x": X4, "r": np.zeros(0, np.float32), "s": np.zeros(0, np.float32), "z": np.array([1, 2, 5, 7], np.int64)}, [F]),
    ("resize13_nn_half", helper.make_node("Resize", ["x", "r", "s"], ["y"], mode="nearest",
                                          coordinate_transformation_mode="tf_half_pixel_for_nn"), 13,
     {"x": X4, "r": np.zeros(0, np.float32), "s": np.array([1, 1, 1.7, 2.2], np.float32)}, [F]),
    ("gridsample16", helper.make_node("GridSample", ["x", "g"], ["y"], mode="bicubic", padding_mode="border"), 16,
     {"x": X4, "g": rng.uniform(-1.2, 1.2, (1, 5, 3, 2)).astype(np.float32)}, [F]),
    ("topk1", helper.make_node("TopK", ["x"], ["v", "i"], k=2, axis=2), 1, {"x": X4}, [F, TensorProto.INT64]),
    ("gridsample16_default", helper.make_node("GridSample", ["x", "g"], ["y"]), 16,
     {"x": X4, "g": rng.uniform(-1.2, 1.2, (1, 5, 3, 2)).astype(np.float32)}, [F]),
    ("scatter9", helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=1), 9,
     {"x": np.zeros((2, 4), np.float32), "i": np.array([[3, 0], [1, 2]], np.int64),
      "u": np.ones((2, 2), np.float32)}, [F]),
]


@pytest.mark.parametrize("name,node,opset,inputs,types", OLD, ids=[o[0] for o in OLD])
def test_old_opsets_match_onnxruntime(name, node, opset, inputs, types):
    want = _ort(node, opset, inputs, types)
    got = run_node(node, opset, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _check(g, w, rtol=1e-4, atol=1e-5)


def test_concat1_default_axis():
    # onnxruntime has no Concat-1 kernel: its default axis was 1
    got = run_node(helper.make_node("Concat", ["x", "x2"], ["y"]), 1, {"x": X4, "x2": X4[:, :1]})[0]
    _check(got, np.concatenate([X4, X4[:, :1]], axis=1))


# --------------------------------------------------------------------------- gradients vs torch


def _grad_pair(ember_fn, torch_fn, x: np.ndarray):
    xe = ember.tensor(x, requires_grad=True)
    ye = ember_fn(xe)
    w = np.random.default_rng(1).standard_normal(tuple(ye.shape))
    (ye * ember.tensor(w)).sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    yt = torch_fn(xt)
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-8)


X64 = rng.standard_normal((2, 3, 5, 6))


def _t(v, dt=None):
    return ember.tensor(v, dtype=dt)


def test_grad_resize_linear_matches_torch_bilinear():
    _grad_pair(lambda x: ops.resize(x, None, _t([1.0, 1.0, 2.0, 1.5]), mode="linear"),
               lambda x: torch.nn.functional.interpolate(x, size=(10, 9), mode="bilinear", align_corners=False), X64)


def test_grad_resize_cubic_align_corners_matches_torch_bicubic():
    _grad_pair(lambda x: ops.resize(x, None, None, _t([7, 11]), axes=(2, 3), mode="cubic",
                                    coordinate_transformation_mode="align_corners"),
               lambda x: torch.nn.functional.interpolate(x, size=(7, 11), mode="bicubic", align_corners=True), X64)


def test_grad_resize_nearest_matches_torch():
    _grad_pair(lambda x: ops.resize(x, None, _t([1.0, 1.0, 2.0, 3.0]), mode="nearest",
                                    coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
               lambda x: torch.nn.functional.interpolate(x, scale_factor=(2, 3), mode="nearest"), X64)


def test_grad_pad_slice_gather():
    _grad_pair(lambda x: ops.pad(x, _t([0, 0, 2, 3, 0, 0, 1, 2]), mode="reflect"),
               lambda x: torch.nn.functional.pad(x, (3, 2, 2, 1), mode="reflect"), X64)
    _grad_pair(lambda x: ops.pad(x, _t([1, 1, 0, 1]), axes=_t([2, 3]), mode="edge"),
               lambda x: torch.nn.functional.pad(x, (1, 1, 1, 0), mode="replicate"), X64)
    _grad_pair(lambda x: ops.slice_(x, _t([-1, 0]), _t([-100, 6]), _t([3, 2]), _t([-2, 2])),
               lambda x: x.flip(3)[:, :, 0:6:2, 0::2], X64)
    idx = np.array([[0, 4], [4, 2]])
    _grad_pair(lambda x: ops.gather(x, _t(idx), axis=2), lambda x: x[:, :, torch.tensor(idx)], X64)
    ind = np.array([[[0, 1], [1, 2]], [[0, 0], [1, 1]]])
    _grad_pair(lambda x: ops.gather_nd(x, _t(ind), batch_dims=1),
               lambda x: torch.stack([x[b][tuple(torch.tensor(ind[b]).T)] for b in range(2)]), X64)


def test_grad_scatter_nd_and_unique():
    upd = np.ones((2, 5, 6))
    _grad_pair(lambda x: ops.scatter_nd(x, _t([[0, 1], [1, 2]]), _t(upd), reduction="add"),
               lambda x: x.index_put((torch.tensor([0, 1]), torch.tensor([1, 2])), torch.tensor(upd), accumulate=True),
               X64)
    x = np.array([3.0, 1.0, 3.0, 2.0])
    xe = ember.tensor(x, requires_grad=True)
    y, first, inv, counts = ops.unique(xe, sorted=0)
    assert y.tolist() == [3.0, 1.0, 2.0] and first.tolist() == [0, 1, 3]
    assert inv.tolist() == [0, 1, 0, 2] and counts.tolist() == [2, 1, 1]
    y.sum().backward()
    assert xe.grad.tolist() == [1.0, 1.0, 0.0, 1.0]


def test_grad_scatter_family_matches_torch():
    idx = np.array([[1, 0, 4, 2, 3, 5]] * 2)
    upd = np.random.default_rng(2).standard_normal((2, 6))
    x = np.random.default_rng(3).standard_normal((2, 6))
    _grad_pair(lambda x: ops.scatter_elements(x, _t(idx), _t(upd), axis=1),
               lambda x: x.scatter(1, torch.tensor(idx), torch.tensor(upd)), x)
    _grad_pair(lambda x: ops.scatter_elements(x, _t(idx[:, :3]), _t(upd[:, :3]), axis=1, reduction="mul"),
               lambda x: x.scatter_reduce(1, torch.tensor(idx[:, :3]), torch.tensor(upd[:, :3]), "prod"), x)
    _grad_pair(lambda x: ops.scatter_nd(x, _t([[1, 2], [0, 0]]), _t([5.0, 6.0], ember.float64)),
               lambda x: x.index_put((torch.tensor([1, 0]), torch.tensor([2, 0])), torch.tensor([5.0, 6.0]).double()),
               x)
    cache = np.zeros((2, 3, 5, 2))
    upd4 = np.random.default_rng(4).standard_normal((2, 3, 2, 2))
    ye = ops.tensor_scatter(ember.tensor(cache), ember.tensor(upd4, requires_grad=True), _t([1, 4]), mode="circular")
    want = cache.copy()
    want[0, :, 1:3] = upd4[0]
    want[1, :, 4] = upd4[1, :, 0]
    want[1, :, 0] = upd4[1, :, 1]
    np.testing.assert_array_equal(ye.detach().numpy(), want)


def test_grad_resampling_and_misc_match_torch():
    x = np.random.default_rng(0).standard_normal((2, 3 * 2 * 3, 12))
    _grad_pair(lambda x: ops.col2im(x, _t([5, 6]), _t([2, 3]), dilations=(2, 1), strides=(1, 2), pads=(1, 0, 0, 1)),
               lambda x: torch.nn.functional.fold(x, (6, 7), (2, 3), dilation=(2, 1), stride=(1, 2))[:, :, 1:6, 0:6], x)
    idx = np.array([[1, 0, 4], [2, 2, 3]])
    upd = np.random.default_rng(2).standard_normal((2, 3))
    x = np.random.default_rng(3).standard_normal((2, 6))
    for red, tr in [("max", "amax"), ("min", "amin"), ("add", "sum")]:
        _grad_pair(lambda x: ops.scatter_elements(x, _t(idx), _t(upd), axis=1, reduction=red),  # noqa: B023
                   lambda x: x.scatter_reduce(1, torch.tensor(idx), torch.tensor(upd), tr), x)  # noqa: B023
    th = np.random.default_rng(4).standard_normal((2, 2, 3))
    _grad_pair(lambda t: ops.affine_grid(t, _t([2, 3, 4, 5])),
               lambda t: torch.nn.functional.affine_grid(t, [2, 3, 4, 5], align_corners=False), th)
    X = np.random.default_rng(5).standard_normal((1, 2, 4, 5))
    G = np.random.default_rng(6).uniform(-1, 1, (1, 3, 3, 2))
    for m, tm in [("linear", "bilinear"), ("cubic", "bicubic")]:
        _grad_pair(lambda x: ops.grid_sample(x, ember.tensor(G), mode=m, padding_mode="border"),  # noqa: B023
                   lambda x: torch.nn.functional.grid_sample(x, torch.tensor(G), mode=tm,  # noqa: B023
                                                             padding_mode="border", align_corners=False), X)
    _grad_pair(lambda x: ops.depth_to_space(x.reshape(1, 8, 1, 5), blocksize=2, mode="CRD"),
               lambda x: torch.nn.functional.pixel_shuffle(x.reshape(1, 8, 1, 5), 2), X)


def test_imported_graph_is_differentiable():
    """Pad(reflect) -> Resize(linear) -> Slice(negative step) -> Gather as an imported module:
    its input gradient matches the same computation in torch."""
    pytest.importorskip("ember.onnx.backend")
    from ember.onnx import load
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], mode="reflect"),
             helper.make_node("Resize", ["p", "", "scales"], ["r"], mode="linear"),
             helper.make_node("Slice", ["r", "st", "en", "ax", "sp"], ["s"]),
             helper.make_node("Gather", ["s", "gi"], ["y"], axis=2)]
    inits = [numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 2, 2], np.int64), "pads"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
             numpy_helper.from_array(np.array([-1], np.int64), "st"),
             numpy_helper.from_array(np.array([-100], np.int64), "en"),
             numpy_helper.from_array(np.array([3], np.int64), "ax"),
             numpy_helper.from_array(np.array([-3], np.int64), "sp"),
             numpy_helper.from_array(np.array([[0, 3], [5, 5]], np.int64), "gi")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    m = load(model)
    x = np.random.default_rng(5).standard_normal((1, 2, 3, 4)).astype(np.float32)
    w = np.random.default_rng(6).standard_normal((1, 2, 2, 2, 5)).astype(np.float32)
    xe = ember.tensor(x, requires_grad=True)
    ye = m(xe)
    (ye * ember.tensor(w)).sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    p = torch.nn.functional.pad(xt, (1, 2, 1, 2), mode="reflect")
    r = torch.nn.functional.interpolate(p, scale_factor=2, mode="bilinear", align_corners=False)
    yt = r.flip(3)[..., ::3][:, :, torch.tensor([[0, 3], [5, 5]])]
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_resize_half_precision():
    x = np.random.default_rng(7).standard_normal((1, 1, 4, 5)).astype(np.float32)
    for dt in (ember.float16, ember.bfloat16):
        y = ops.resize(ember.from_numpy(x).to(dt), None, _t([1.0, 1.0, 1.5, 0.6]), mode="cubic")
        y32 = ops.resize(ember.from_numpy(x), None, _t([1.0, 1.0, 1.5, 0.6]), mode="cubic")
        assert y.dtype == dt
        np.testing.assert_allclose(y.to(ember.float32).numpy(), y32.numpy(), rtol=2e-2, atol=2e-2)
    u8 = (np.arange(20).reshape(1, 1, 4, 5) * 12).astype(np.uint8)
    y = ops.resize(ember.from_numpy(u8), None, _t([1.0, 1.0, 2.0, 2.0]), mode="linear")
    assert y.dtype == ember.uint8 and y.numpy().max() <= 228


# --------------------------------------------------------------------------- numpy edge cases


@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap", "constant"])
def test_pad_modes_match_numpy(mode):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    pads = [4, 5, 2, 6]  # bigger than the dims: reflect/wrap repeat
    np_mode = {"edge": "edge", "reflect": "reflect", "wrap": "wrap", "constant": "constant"}[mode]
    want = np.pad(x, [(4, 2), (5, 6)], mode=np_mode)
    _check(ops.pad(ember.from_numpy(x), _t(pads), mode=mode), want)
    # negative pads crop
    want = np.pad(x[1:, :2], [(0, 0), (1, 0)], mode=np_mode)
    _check(ops.pad(ember.from_numpy(x), _t([-1, 1, 0, -2]), mode=mode), want)


def test_slice_steps_match_python():
    x = np.arange(10)
    for s, e, k in [(8, 1, -3), (-1, -100, -1), (100, -100, -2), (2, 100, 4), (5, 5, 1), (0, -1, -1)]:
        got = ops.slice_(_t(x), _t([s]), _t([e]), None, _t([k]))
        want = x[slice(s, e if e > -len(x) - 1 else None, k)] if k < 0 else x[s:e:k]
        np.testing.assert_array_equal(got.numpy(), want)


def test_shape_like_ops():
    x = ember.zeros(2, 0, 3)
    assert ops.reshape(x, _t([0, -1, 3])).shape == (2, 0, 3)
    assert ops.reshape(ember.zeros(0, 3), _t([3, 0]), allowzero=1).shape == (3, 0)
    assert ops.shape(x, start=-2).tolist() == [0, 3] and ops.size(x).item() == 0
    assert ops.expand(ember.ones(3, 1), _t([2, 1, 4])).shape == (2, 3, 4)
    assert ops.flatten(ember.zeros(2, 3, 4), axis=0).shape == (1, 24)
    assert ops.squeeze(ember.zeros(1, 3, 1)).shape == (3,)
    assert ops.squeeze(ember.zeros(1, 3, 1), _t(np.zeros(0, np.int64))).shape == (3,)
    assert ops.non_zero(ember.tensor([[0, 1], [2, 0]])).tolist() == [[0, 1], [1, 0]]
    assert ops.compress(ember.arange(6).reshape(2, 3), ember.tensor([False, True]), axis=1).tolist() == [[1], [4]]
    r = ops.range_(_t(1.0, ember.float16), _t(2.0, ember.float16), _t(0.25, ember.float16))
    assert r.dtype == ember.float16 and r.tolist() == [1.0, 1.25, 1.5, 1.75]
    v, i = ops.top_k(ember.tensor([[1, 3, 3, 2, 3]]), _t([2]), largest=1)
    assert v.tolist() == [[3, 3]] and i.tolist() == [[1, 2]]
    v, i = ops.top_k(ember.tensor([2.0, 1.0, 1.0]), _t([2]), largest=0)
    assert i.tolist() == [1, 2]
    v, i = ops.top_k(ember.tensor([-2**63, 5, 2**63 - 1, 0]), _t([2]))
    assert v.tolist() == [2**63 - 1, 5] and i.tolist() == [2, 1]
    v, i = ops.top_k(ember.tensor([0, 255, 3, 3], dtype=ember.uint8), _t([3]))
    assert v.tolist() == [255, 3, 3] and i.tolist() == [1, 2, 3]
    parts = ops.split(ember.arange(7), num_outputs=3)
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4, 5], [6]]
    y = ops.reverse_sequence(ember.arange(8).reshape(2, 4), _t([3, 1]), batch_axis=0, time_axis=1)
    assert y.tolist() == [[2, 1, 0, 3], [4, 5, 6, 7]]
    c = ops.center_crop_pad(ember.ones(3, 5), _t([5, 2]))
    assert c.shape == (5, 2) and c.sum().item() == 6


def test_col2im_matches_torch_fold():
    x = rng.standard_normal((2, 3 * 2 * 3, 12)).astype(np.float32)
    got = ops.col2im(ember.from_numpy(x), _t([5, 6]), _t([2, 3]), dilations=(2, 1), pads=(1, 0, 0, 1),
                     strides=(1, 2))
    # torch's fold pads symmetrically: fold onto the padded image and crop by hand
    full = torch.nn.functional.fold(torch.tensor(x), (6, 7), (2, 3), dilation=(2, 1), stride=(1, 2))
    want = full[:, :, 1:6, 0:6].numpy()
    _check(got, want)


def test_refusals():
    with pytest.raises(OnnxOpError, match="uint16"):
        ops.eye_like(ember.zeros(2, 2), dtype=TensorProto.UINT16)
    with pytest.raises(OnnxOpError, match="float8"):
        ops.eye_like(ember.zeros(2, 2), dtype=TensorProto.FLOAT8E4M3FN)
    with pytest.raises(OnnxOpError, match="string"):
        ops.eye_like(ember.zeros(2, 2), dtype=TensorProto.STRING)
    with pytest.raises(OnnxOpError, match="Reshape"):
        ops.reshape(ember.zeros(2, 3), _t([4, -1]))
    with pytest.raises(OnnxOpError, match="Squeeze"):
        ops.squeeze(ember.zeros(2, 3), _t([0]))
    with pytest.raises(OnnxOpError, match="Resize"):
        ops.resize(ember.zeros(1, 1, 2, 2), None, _t([1.0, 1.0, 2.0, 2.0]), mode="area")
    with pytest.raises(OnnxOpError, match="Pad"):
        ops.pad(ember.zeros(2), _t([1, 1]), mode="symmetric")
    with pytest.raises(OnnxOpError, match="Tile-1"):
        run_node(helper.make_node("Tile", ["x", "t", "a"], ["y"]), 1,
                 {"x": X4, "t": np.array(2, np.int64), "a": np.array(1, np.int64)})
    assert ops.eye_like(ember.zeros(2, 3), dtype=TensorProto.INT32, k=1).tolist() == [[0, 1, 0], [0, 0, 1]]
