"""ember.onnx off the CPU: every op creates the tensors it makes itself (zeros, indices, masks,
iteration counters, host-computed results) on its inputs' device.

The device is "cudasim" (tests/test_cuda_sim.py: the CUDA backend's op code running on numpy arrays,
a device type of its own, so mixing it with CPU tensors raises the usual device-mismatch error):

* every ONNX node-suite case the CPU run passes is run again with the model and its inputs on
  "cudasim" (``EmberBackend.prepare(model, "cudasim")``): no error, every output on "cudasim" (unless
  the case has no tensor input to follow, e.g. OptionalHasElement of an empty optional) and the CPU
  run's dtypes and values (floats within a few ulps: the two backends' convolution, erf and
  normalization kernels round differently);
* op calls reach the creation sites no node-suite case does (empty results, seeded random ops...).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember

pytest.importorskip("onnx")

from ember.onnx import node_suite, ops  # noqa: E402
from ember.onnx.backend import EmberBackend, to_ember, to_numpy  # noqa: E402
from tests import test_cuda_sim  # noqa: E402 - registers "cudasim"

SIM = test_cuda_sim.SIM
# the expanded cases' fully masked attention rows compute inf - inf on purpose
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
RTOL, ATOL = 1e-5, 1e-6
STATUS = os.path.join(os.path.dirname(__file__), "..", "docs", "onnx_node_suite.txt")
# every case the tracked status file lists; the ones the CPU run does not pass are skipped
NAMES = sorted(node_suite.read_status(STATUS))


@pytest.fixture(autouse=True)
def _leave_the_global_rng_alone():
    """Cases with unseeded random ops (Bernoulli, RandomUniform...) draw from the default generators:
    restore their state, so later tests see the random numbers they would see without these."""
    with ember.random.fork_rng():
        yield


def _tensors(x) -> list:
    """The ember tensors in an op/model result (sequences searched, empty optionals skipped)."""
    if isinstance(x, ember.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    return []


def _has_tensor(x) -> bool:
    """Whether data-set inputs hold a tensor (numpy arrays and scalars; not only empty optionals/sequences)."""
    if isinstance(x, (list, tuple)):
        return any(_has_tensor(v) for v in x)
    return x is not None


def _assert_on_sim(outs, where: str) -> None:
    off = [str(t.device) for t in _tensors(outs) if t.device != ember.device(SIM)]
    assert not off, f"{where}: outputs on {off}, expected {SIM}"


def _assert_same(want, got, where: str) -> None:
    assert len(got) == len(want), f"{where}: {len(got)} outputs on {SIM}, {len(want)} on cpu"
    for i, (w, g) in enumerate(zip(want, got)):
        d = node_suite._compare(w, g, f"{where}: output {i}", RTOL, ATOL)
        assert not d, d + f" (on {SIM} vs cpu)"


_BY_NAME: dict = {}


def _case(name: str):
    if not _BY_NAME:
        _BY_NAME.update((c.name, c) for c in node_suite.load_cases())
    return _BY_NAME.get(name)


@pytest.mark.parametrize("name", NAMES)
def test_node_case_on_device(name):
    case = _case(name)
    if case is None:
        pytest.skip("the installed onnx does not generate this case")
    res = node_suite.run_case(case)
    if not res.ok:
        pytest.skip(f"the CPU run does not pass: [{res.reason}] {res.detail}")
    on_cpu = EmberBackend.prepare(case.model, "CPU", check=False)
    on_sim = EmberBackend.prepare(case.model, SIM, check=False)
    for k, (inputs, _) in enumerate(node_suite._data_sets(case, case.model)):
        want = on_cpu.run(inputs)
        args = list(inputs) + [None] * (on_sim.n_inputs - len(inputs))
        with ember.no_grad():
            out = on_sim.module(*[to_ember(a, on_sim.device) for a in args])
        outs = out if isinstance(out, tuple) else (out,)
        if _has_tensor(inputs):    # an op with no tensor input makes its result on the default device
            _assert_on_sim(outs, f"{name} data set {k}")
        _assert_same(want, [to_numpy(o) for o in outs], f"{name} data set {k}")


def test_backend_device_names():
    from ember.onnx.backend import ember_device
    assert ember_device("CPU") is None      # ember's default device, as before
    assert ember_device(SIM) == ember.device(SIM)
    assert EmberBackend.supports_device("CPU") and EmberBackend.supports_device(SIM)
    assert not EmberBackend.supports_device("NO_SUCH_DEVICE")


# -- op calls for creation sites the node suite does not reach ---------------------------------------

_RNG = np.random.default_rng(0)
_X = _RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)


def _on(dev, *arrays):
    return tuple(ember.tensor(a, device=dev) for a in arrays)


def _loop(dev, trips):
    m, c, v = _on(dev, np.array(trips, np.int64), np.array(True), np.ones(3, np.float32))
    return ops.loop(m, c, v, body=lambda i, cond, v: (cond, v + i.to(v.dtype), v * 2), n_outputs=2)


def _scan(dev, length):
    s, xs = _on(dev, np.zeros(2, np.float32), np.ones((length, 2), np.float32))
    return ops.scan(s, xs, body=lambda s, x: (s + x, s * x), num_scan_inputs=1, n_outputs=2)


def _scan8(dev):
    lens, s, xs = _on(dev, np.array([3, 3], np.int64), np.zeros((2, 2), np.float32),
                      np.arange(12, dtype=np.float32).reshape(2, 3, 2))
    return ops.scan8(lens, s, xs, body=lambda s, x: (s + x, s * x), num_scan_inputs=1, n_outputs=2)


def _max_roi_pool(dev, rois):
    x, r = _on(dev, _X, np.array(rois, np.float32).reshape(-1, 5))
    return ops.max_roi_pool(x, r, pooled_shape=(2, 2))


def _nms(dev, limit, score_threshold):
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 10, 1, 11]]], np.float32)
    scores = np.array([[[0.9, 0.75, 0.6]]], np.float32)
    return ops.non_max_suppression(*_on(dev, boxes, scores, np.array([limit], np.int64),
                                        np.array([0.5], np.float32), np.array([score_threshold], np.float32)))


def _roi_align(dev, rois):
    x, r, b = _on(dev, _X, np.array(rois, np.float32).reshape(-1, 4), np.zeros(len(rois), np.int64))
    return ops.roi_align(x, r, b, output_height=2, output_width=2)


def _dropout(dev):
    x, ratio, train = _on(dev, _X, np.array(0.5, np.float32), np.array(True))
    return ops.dropout(x, ratio, train, seed=3, n_outputs=2)


OP_CALLS = {
    "Loop-no-trips": lambda dev: _loop(dev, 0),
    "Loop-3-trips": lambda dev: _loop(dev, 3),
    "Scan-empty": lambda dev: _scan(dev, 0),
    "Scan8-sequence_lens": _scan8,
    "MaxRoiPool": lambda dev: _max_roi_pool(dev, [[0, 0, 0, 3, 3], [0, 10, 10, 12, 12]]),
    "MaxRoiPool-no-rois": lambda dev: _max_roi_pool(dev, []),
    "HannWindow-size-0": lambda dev: ops.hann_window(*_on(dev, np.array(0, np.int64))),
    "NonMaxSuppression-limit-0": lambda dev: _nms(dev, 0, 0.0),
    "NonMaxSuppression-none-kept": lambda dev: _nms(dev, 3, 0.95),
    "RoiAlign-no-rois": lambda dev: _roi_align(dev, []),
    "RoiAlign-empty-roi": lambda dev: _roi_align(dev, [[1, 1, 1, 1]]),
    "IsInf-detect-nothing": lambda dev: ops.is_inf(*_on(dev, _X), detect_negative=0, detect_positive=0),
    "GatherND-empty-tuples": lambda dev: ops.gather_nd(*_on(dev, _X, np.zeros((3, 0), np.int64))),
    "NonZero-0d": lambda dev: ops.non_zero(*_on(dev, np.array(2.0, np.float32))),
    "DynamicQuantizeLinear-empty": lambda dev: ops.dynamic_quantize_linear(*_on(dev, np.zeros(0, np.float32))),
    "RandomNormalLike-seed": lambda dev: ops.random_normal_like(*_on(dev, _X), seed=1.0),
    "RandomUniformLike-seed": lambda dev: ops.random_uniform_like(*_on(dev, _X), seed=2.0, dtype=11),
    "Bernoulli-seed": lambda dev: ops.bernoulli(*_on(dev, np.full((4, 5), 0.5, np.float32)), seed=3.0),
    "Multinomial-seed": lambda dev: ops.multinomial(*_on(dev, _X.reshape(12, 6)), sample_size=4, seed=4.0),
    "Dropout-training-seed": _dropout,
}


@pytest.mark.parametrize("name", sorted(OP_CALLS))
def test_op_on_device(name):
    call = OP_CALLS[name]
    want = call("cpu")
    got = call(SIM)
    want, got = (want if isinstance(want, tuple) else (want,)), (got if isinstance(got, tuple) else (got,))
    _assert_on_sim(got, name)
    _assert_same([to_numpy(w) for w in want], [to_numpy(g) for g in got], name)


def test_ops_without_tensor_inputs_use_the_default_device():
    # nothing to follow: RandomNormal/RandomUniform (and Constant) make their result on ember's default device
    assert ops.random_normal(shape=(2, 3), seed=1.0).device == ember.get_default_device()
    assert ops.random_uniform(shape=(2,)).device == ember.get_default_device()
