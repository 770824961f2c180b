"""ember.onnx's importer: load/import_model, the generated code, graph passes, control flow,
upgraders, external data, the CLI and the onnx backend adapter. Hand-built models are checked
against onnx's reference evaluator (onnx.reference) on the same inputs."""

import importlib.util
import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import ember  # noqa: E402
import ember.onnx as eo  # noqa: E402
from ember.onnx import graph as G  # noqa: E402
from ember.onnx.backend import EmberBackend  # noqa: E402
from ember.onnx.ops import OPS, OnnxOpError  # noqa: E402
from ember.onnx.ops._registry import OpDef  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, inits=(), opset=17, functions=()):
    g = helper.make_graph(nodes, "test_graph", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], functions=list(functions))
    m.ir_version = 8
    return m


def _vi(name, dtype=F, shape=None):
    return helper.make_tensor_value_info(name, dtype, shape)


def _run(model, *arrays):
    m = eo.load(model)
    with ember.no_grad():
        out = m(*[ember.from_numpy(a) if isinstance(a, np.ndarray) else a for a in arrays])
    return out if isinstance(out, tuple) else (out,)


def _check_vs_reference(model, *arrays, rtol=1e-5, atol=1e-6):
    ref = ReferenceEvaluator(model).run(None, {i.name: a for i, a in zip(model.graph.input, arrays)})
    out = _run(model, *arrays)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        if isinstance(r, list):
            assert len(o) == len(r)
            for oo, rr in zip(o, r):
                np.testing.assert_allclose(oo.numpy(), rr, rtol=rtol, atol=atol)
        else:
            assert o.numpy().dtype == r.dtype
            np.testing.assert_allclose(o.numpy(), r, rtol=rtol, atol=atol)
    return out


def _mlp():
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "layer1.weight")
    b1 = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "layer1.bias")
    shape = numpy_helper.from_array(np.array([0, 2, 4], np.int64), "shape")
    nodes = [helper.make_node("MatMul", ["x", "layer1.weight"], ["h"], name="/layer1/MatMul"),
             helper.make_node("Add", ["h", "layer1.bias"], ["h2"], name="/layer1/Add"),
             helper.make_node("Relu", ["h2"], ["h3"], name="/act/Relu"),
             helper.make_node("Reshape", ["h3", "shape"], ["y"], name="/Reshape")]
    return _model(nodes, [_vi("x", F, ["batch", 4])], [_vi("y", F, ["batch", 2, 4])], [w1, b1, shape])


def test_load_matches_reference_and_keeps_batch_dynamic():
    m = _mlp()
    for n in (1, 3, 5):
        _check_vs_reference(m, np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32))


def test_initializers_become_parameters_or_buffers():
    model = eo.load(_mlp())
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    assert set(params) == {"layer1_weight", "layer1_bias"}
    assert set(buffers) == {"shape"}
    assert buffers["shape"].dtype == ember.int64
    assert model.onnx_names["layer1_weight"] == "layer1.weight"


def test_generated_source_is_one_line_per_node():
    src = eo.convert(_mlp()).source
    compile(src, "model.py", "exec")
    body = src[src.index("def forward"):src.index("def load")]
    calls = [ln for ln in body.splitlines() if "= ops." in ln]
    assert len(calls) == 4
    assert "class Model(nn.Module)" in src
    assert "nn.Parameter(weights['layer1_weight'])" in src
    assert "# /layer1/MatMul" in body        # original node names where they differ
    assert "import torch" not in src and "onnx" not in src.split("class Model")[0].replace("ember.onnx", "")


def test_import_model_writes_an_importable_package(tmp_path):
    m = _mlp()
    path = eo.import_model(m, tmp_path / "pkg")
    assert os.path.exists(path) and os.path.exists(tmp_path / "pkg" / "weights.safetensors")
    spec = importlib.util.spec_from_file_location("ember_onnx_test_pkg_model", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    try:
        spec.loader.exec_module(mod)
        net = mod.load()
    finally:
        del sys.modules[spec.name]
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    ref = ReferenceEvaluator(m).run(None, {"x": x})[0]
    np.testing.assert_allclose(net(ember.from_numpy(x)).detach().numpy(), ref, rtol=1e-5, atol=1e-6)


def test_external_data_model_loads(tmp_path):
    m = _mlp()
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    ref = ReferenceEvaluator(m).run(None, {"x": x})[0]
    path = str(tmp_path / "ext.onnx")
    onnx.save(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location="ext.bin",
              size_threshold=0)
    assert os.path.getsize(tmp_path / "ext.bin") >= 4 * 8 * 4
    out = eo.load(path)(ember.from_numpy(x))
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-5, atol=1e-6)
    with open(path, "rb") as f:   # bytes alone cannot reach the side file: a clear error
        with pytest.raises(OnnxOpError, match="external file 'ext.bin'"):
            eo.load(f.read())


def test_cli_onnx_import(tmp_path, capsys):
    from ember import cli
    src = str(tmp_path / "m.onnx")
    onnx.save(_mlp(), src)
    assert cli.main(["onnx", "import", src, "-o", str(tmp_path / "out")]) == 0
    assert os.path.exists(tmp_path / "out" / "model.py")
    assert "wrote" in capsys.readouterr().out
    assert cli.main(["onnx", "import", str(tmp_path / "missing.onnx"), "-o", str(tmp_path / "o2")]) == 2


def test_unsupported_operators_are_all_listed():
    nodes = [helper.make_node("FrobnicateA", ["x"], ["a"], name="first_bad"),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("FrobnicateB", ["b"], ["y"], name="second_bad")]
    m = _model(nodes, [_vi("x")], [_vi("y")])
    with pytest.raises(OnnxOpError) as e:
        eo.load(m)
    msg = str(e.value)
    assert "2 ONNX node(s)" in msg
    assert "FrobnicateA (opset 17) node 'first_bad'" in msg and "FrobnicateB (opset 17) node 'second_bad'" in msg


def test_constant_folding_and_dead_nodes():
    c = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array([3, 2], np.int64)))
    nodes = [c,
             helper.make_node("Mul", ["c", "c"], ["c2"]),                   # foldable: [9, 4]
             helper.make_node("ConstantOfShape", ["c"], ["ones"],
                              value=numpy_helper.from_array(np.array([1.0], np.float32))),
             helper.make_node("Reshape", ["x", "c"], ["xr"]),
             helper.make_node("Add", ["xr", "ones"], ["y"]),
             helper.make_node("Neg", ["x"], ["unused"]),                     # dead
             helper.make_node("Cast", ["c2"], ["y2"], to=F)]
    m = _model(nodes, [_vi("x", F, [6])], [_vi("y", F, [3, 2]), _vi("y2", F, [2])])
    conv = eo.convert(m)
    assert conv.stats["folded"] >= 3
    assert conv.stats["nodes_after"] == 2           # Reshape and Add remain
    assert "ops.neg" not in conv.source and "ops.mul" not in conv.source
    _check_vs_reference(m, np.arange(6, dtype=np.float32))


def test_graph_passes_directly():
    g = G.Graph("g", [G.Node("Neg", ["x"], ["a"]), G.Node("Relu", ["x"], ["b"])],
                [G.Value("x")], [G.Value("b")])
    G.remove_dead(g)
    assert [n.op_type for n in g.nodes] == ["Relu"]
    g2 = G.Graph("g", [G.Node("Add", ["k", "k"], ["s"])], [], [G.Value("s")],
                 constants={"k": np.array([1, 2], np.int64)})
    assert G.fold_constants(g2) == 1 and g2.constants["s"].tolist() == [2, 4]


def _if_model():
    then_g = helper.make_graph([helper.make_node("Add", ["x", "x"], ["t"])], "then", [], [_vi("t")])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_vi("e")])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["cond"]),
             helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)]
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    return _model(nodes, [_vi("x", F, [3])], [_vi("y", F, [3])], [zero])


def test_if_with_subgraphs_reading_outer_values():
    m = _if_model()
    _check_vs_reference(m, np.array([1.0, 2.0, 3.0], np.float32))
    _check_vs_reference(m, np.array([-1.0, -2.0, 0.5], np.float32))
    assert "def " in eo.convert(m).source.split("def forward")[1]   # nested subgraph functions


def _loop_model():
    # for i in range(M): acc = acc + x * i; scan output: acc after each step
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["x", "fi"], ["xi"]),
         helper.make_node("Add", ["acc_in", "xi"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan_out"])],
        "body", [_vi("i", I64, []), _vi("cond_in", TensorProto.BOOL, []), _vi("acc_in", F, [2])],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("acc_out", F, [2]), _vi("scan_out", F, [2])])
    nodes = [helper.make_node("Loop", ["M", "", "acc0"], ["acc", "steps"], body=body)]
    return _model(nodes, [_vi("M", I64, []), _vi("acc0", F, [2]), _vi("x", F, [2])],
                  [_vi("acc", F, [2]), _vi("steps", F, [None, 2])])


def test_loop_with_scan_outputs():
    x = np.array([1.0, -2.0], np.float32)
    acc, steps = _run(_loop_model(), np.array(4, np.int64), np.zeros(2, np.float32), x)
    np.testing.assert_allclose(acc.numpy(), 6 * x)
    np.testing.assert_allclose(steps.numpy(), np.stack([0 * x, x, 3 * x, 6 * x]))
    acc0, steps0 = _run(_loop_model(), np.array(0, np.int64), np.ones(2, np.float32), x)
    np.testing.assert_allclose(acc0.numpy(), [1.0, 1.0])
    assert steps0.shape[0] == 0


def test_scan_cumulative_sum():
    body = helper.make_graph([helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
                              helper.make_node("Identity", ["s_out"], ["y_t"])],
                             "body", [_vi("s_in", F, [2]), _vi("x_t", F, [2])],
                             [_vi("s_out", F, [2]), _vi("y_t", F, [2])])
    nodes = [helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1,
                              scan_input_directions=[1])]
    m = _model(nodes, [_vi("s0", F, [2]), _vi("xs", F, [3, 2])], [_vi("s", F, [2]), _vi("ys", F, [3, 2])])
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    s, ys = _run(m, np.zeros(2, np.float32), xs)   # reversed scan: onnx.reference lacks it
    np.testing.assert_allclose(ys.numpy(), np.cumsum(xs[::-1], 0))
    np.testing.assert_allclose(s.numpy(), xs.sum(0))


def test_sequence_and_optional_ops():
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["seq"]),
             helper.make_node("SequenceInsert", ["seq", "a"], ["seq2"]),
             helper.make_node("SequenceLength", ["seq2"], ["n"]),
             helper.make_node("ConcatFromSequence", ["seq2"], ["cat"], axis=0),
             helper.make_node("SequenceAt", ["seq2", "one"], ["second"]),
             helper.make_node("Optional", ["a"], ["opt"]),
             helper.make_node("OptionalHasElement", ["opt"], ["has"])]
    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    m = _model(nodes, [_vi("a", F, [2]), _vi("b", F, [2])],
               [_vi("n", I64, []), _vi("cat", F, [6]), _vi("second", F, [2]),
                _vi("has", TensorProto.BOOL, [])], [one], opset=18)
    _check_vs_reference(m, np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32))


def test_model_local_functions_are_inlined():
    fn = helper.make_function("local", "AddTwice", ["p", "q"], ["r"],
                              [helper.make_node("Add", ["p", "q"], ["t"]), helper.make_node("Add", ["t", "q"], ["r"])],
                              [helper.make_opsetid("", 17)])
    nodes = [helper.make_node("AddTwice", ["x", "x"], ["y"], domain="local")]
    m = _model(nodes, [_vi("x", F, [3])], [_vi("y", F, [3])], functions=[fn])
    m.opset_import.append(helper.make_opsetid("local", 1))
    out = _run(m, np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_allclose(out[0].numpy(), [3.0, 6.0, 9.0])


def test_upgraders_rewrite_old_nodes():
    from ember.onnx.graph import Node
    from ember.onnx.upgrade import upgrade_node

    def to_input(node):   # "Thing-2" moved the ``k`` attribute to an input
        node["new_constants"] = {node["outputs"][0] + "_k": np.array(node["attrs"].pop("k"), np.int64)}
        node["inputs"] = node["inputs"] + [node["outputs"][0] + "_k"]
        return node

    key = ("test.ember", "Thing")
    OPS[key] = OpDef("Thing", lambda x, k: x, "test.ember", 1, [(2, to_input)])
    try:
        consts = {}
        n = Node("Thing", ["x"], ["y"], {"k": 3}, domain="test.ember", opset=1)
        assert upgrade_node(n, consts)
        assert n.inputs == ["x", "y_k"] and n.attrs == {} and n.opset == 2 and consts["y_k"] == 3
        n2 = Node("Thing", ["x", "kk"], ["y"], {}, domain="test.ember", opset=2)
        assert not upgrade_node(n2, {})
    finally:
        del OPS[key]


def test_old_opset_model_through_registered_upgraders():
    # Squeeze-11 takes ``axes`` as an attribute; Squeeze-13 as an input
    nodes = [helper.make_node("Squeeze", ["x"], ["y"], axes=[1])]
    m = _model(nodes, [_vi("x", F, [2, 1, 3])], [_vi("y", F, [2, 3])], opset=11)
    _check_vs_reference(m, np.arange(6, dtype=np.float32).reshape(2, 1, 3))


def test_backend_adapter():
    assert EmberBackend.supports_device("CPU") and not EmberBackend.supports_device("CUDA")
    node = helper.make_node("Relu", ["x"], ["y"])
    x = np.array([-1.0, 2.0], np.float32)
    (y,) = EmberBackend.run_node(node, [x])
    np.testing.assert_array_equal(y, [0.0, 2.0])
    rep = EmberBackend.prepare(_mlp(), "CPU")
    xb = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(rep.run({"x": xb})[0], rep.run([xb])[0])


def test_gradients_flow_through_imported_control_flow():
    model = eo.load(_if_model())
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    model(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_awkward_names_become_safe_identifiers():
    w = numpy_helper.from_array(np.ones((2, 2), np.float32), "forward")
    t = numpy_helper.from_array(np.full((2, 2), 2.0, np.float32), "training")
    nodes = [helper.make_node("Add", ["float", "forward"], ["class"]),
             helper.make_node("Add", ["class", "training"], ["self"], name="lambda: x")]
    m = _model(nodes, [_vi("float", F, [2, 2])], [_vi("self", F, [2, 2])], [w, t])
    net = eo.load(m)
    assert net.training is True and callable(net.forward)
    assert sorted(n for n, _ in net.named_parameters()) == ["forward_2", "training_2"]
    _check_vs_reference(m, np.zeros((2, 2), np.float32))


def test_extra_ops_are_differentiable():
    from ember.onnx import ops
    g = np.random.default_rng(5)

    def t(*shape):
        return ember.tensor(g.standard_normal(shape), dtype=ember.float64, requires_grad=True)

    x, w, b = t(2, 3, 5), t(3, 1, 3), t(3)
    assert ember.autograd.gradcheck(lambda x, w, b: ops.causal_conv_with_state(x, w, b, activation="silu")[0],
                                    (x, w, b))
    q, k, v, decay, beta = t(1, 3, 4), t(1, 3, 4), t(1, 3, 4), t(1, 3, 2), t(1, 3, 2)

    def la(q, k, v, decay, beta):
        out, _ = ops.linear_attention(q, k, v, None, decay, beta, q_num_heads=2, kv_num_heads=2)
        return out

    assert ember.autograd.gradcheck(la, (q, k, v, decay, beta))


def test_nodes_out_of_order_are_sorted():
    nodes = [helper.make_node("Relu", ["a"], ["y"]), helper.make_node("Neg", ["x"], ["a"])]
    g = helper.make_graph(nodes, "unsorted", [_vi("x", F, [3])], [_vi("y", F, [3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    out = _run(m, np.array([-1.0, 2.0, -3.0], np.float32))
    np.testing.assert_allclose(out[0].numpy(), [1.0, 0.0, 3.0])


@pytest.mark.parametrize("op,attrs,opset", [("Gelu", {"approximate": "tanh"}, 20),
                                            ("LayerNormalization", {"axis": -1, "epsilon": 1e-5}, 17),
                                            ("HardSwish", {}, 14)])
def test_ops_without_an_ember_function_run_through_their_onnx_definition(op, attrs, opset):
    # take the op out of the registry: the importer inlines the function body ONNX defines it by
    n_in = 3 if op == "LayerNormalization" else 1
    names = ["x", "scale", "bias"][:n_in]
    nodes = [helper.make_node(op, names, ["y"], **attrs)]
    inits = [numpy_helper.from_array(np.linspace(0.5, 1.5, 4).astype(np.float32), "scale"),
             numpy_helper.from_array(np.linspace(-1, 1, 4).astype(np.float32), "bias")][:n_in - 1]
    m = _model(nodes, [_vi("x", F, [2, 4])], [_vi("y", F, [2, 4])], inits, opset=opset)
    x = np.random.default_rng(6).standard_normal((2, 4)).astype(np.float32)
    ref = ReferenceEvaluator(m).run(None, {"x": x})[0]
    saved = OPS.pop(("", op))
    try:
        src = eo.convert(m).source
        out = _run(m, x)[0]
    finally:
        OPS[("", op)] = saved
    assert f"ops.{saved.fn.__name__}(" not in src
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-5, atol=1e-5)


def test_initializers_listed_as_graph_inputs_stay_weights():
    # IR < 4 exporters list every initializer among the graph inputs as well
    w = numpy_helper.from_array(np.full((3,), 2.0, np.float32), "w")
    nodes = [helper.make_node("Mul", ["x", "w"], ["y"])]
    m = _model(nodes, [_vi("x", F, [3]), _vi("w", F, [3])], [_vi("y", F, [3])], [w])
    m.ir_version = 3
    net = eo.load(m)
    np.testing.assert_allclose(net(ember.ones(3)).detach().numpy(), [2.0, 2.0, 2.0])
    (y,) = EmberBackend.prepare(m).run([np.ones(3, np.float32)])
    np.testing.assert_allclose(y, [2.0, 2.0, 2.0])
