"""ember.backend.meta (result metadata without running ops) against what the numpy backend produces.

The whole op registry, forward and backward, runs on a device whose backend checks every op it is
asked to run: where ``infer`` answers, its shape and dtype must equal the real result's, and for
view ops its strides too (lazy backends such as Fusion and Remote answer ``shape``/``strides`` from
it before anything runs)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import tests.test_registry as forward
import tests.test_registry_grad as grads
from ember.backend.autodiff import Autodiff
from ember.backend.meta import Meta, contiguous_strides, infer, is_view_op
from ember.backend.numpy import Numpy


class MetaCheck(Numpy):
    """The numpy backend, comparing ``infer``'s answer with every real result."""

    unknown: set = set()
    mismatches: list = []

    def _meta(self, x):
        if isinstance(x, (np.ndarray, np.generic)):
            return Meta(x.shape, self.dtype(x), self.strides(x))
        return x

    def run(self, op, inputs, attrs):
        metas = tuple(self._meta(x) for x in inputs)
        want = infer(op, metas, attrs)
        out = super().run(op, inputs, attrs)
        if want is None:
            MetaCheck.unknown.add(op)
            return out
        outs = out if isinstance(out, tuple) else (out,)
        got = [None if o is None else Meta(o.shape, self.dtype(o), self.strides(o)) for o in outs]
        if len(got) != len(want):
            MetaCheck.mismatches.append((op, attrs, "outputs", len(want), len(got)))
            return out
        for w, g in zip(want, got):
            if w is None or g is None:
                if w is not g:
                    MetaCheck.mismatches.append((op, attrs, "optional output", w, g))
                continue
            if tuple(w.shape) != tuple(g.shape) or w.dtype is not g.dtype:
                MetaCheck.mismatches.append((op, attrs, [m.shape for m in metas if isinstance(m, Meta)], w, g))
            elif is_view_op(op, metas, attrs) and g.strides != w.strides and 0 not in g.shape:
                # numpy leaves the strides of size-1 dims free; compare where they matter
                if any(a != b for a, b, n in zip(w.strides, g.strides, g.shape) if n > 1):
                    MetaCheck.mismatches.append((op, attrs, "strides", w, g))
        return out


@pytest.fixture(scope="module", autouse=True)
def _cpu_is_checked():
    """For this module "cpu" (and the default device) is Autodiff(MetaCheck()), so the registry's
    tests, which create tensors on "cpu", run unchanged."""
    from ember import _device
    numpy_stack = _device._FACTORIES["cpu"]
    ember.register_device("cpu", lambda index: Autodiff(MetaCheck()))
    _device._default = None
    yield
    ember.register_device("cpu", numpy_stack)
    _device._default = None


@pytest.fixture(autouse=True)
def _no_mismatch():
    MetaCheck.mismatches.clear()
    yield
    assert not MetaCheck.mismatches, f"meta.infer disagrees with the numpy backend: {MetaCheck.mismatches[:5]}"


@pytest.mark.parametrize("case", forward.CASES, ids=[forward._id(c) for c in forward.CASES])
def test_forward_metadata(case):
    forward.test_op_matches_torch(case, "cpu")


@pytest.mark.parametrize("op", grads.GRAD_OPS, ids=[op.name for op in grads.GRAD_OPS])
def test_backward_metadata(op):
    grads.test_grad_matches_torch(op, "cpu")


def test_contiguous_strides_and_views():
    assert contiguous_strides((2, 3, 4)) == (12, 4, 1)
    x = Meta((4, 6), ember.float32, (6, 1))
    t = infer("permute", (x,), {"dims": (1, 0)})[0]
    assert t == Meta((6, 4), ember.float32, (1, 6))
    # a transposed matrix can't be flattened without a copy; its rows can be split
    assert not is_view_op("reshape", (t,), {"shape": (24,)})
    assert infer("reshape", (t,), {"shape": (24,)})[0].strides == (1,)
    assert infer("reshape", (t,), {"shape": (3, 2, 4)})[0].strides == (2, 1, 6)


def test_unknown_and_data_dependent_ops_return_none():
    x = Meta((3,), ember.float32, (1,))
    assert infer("nonzero", (x,), {}) is None
    assert infer("no_such_op", (x,), {}) is None
    mask = Meta((3,), ember.bool, (1,))
    assert infer("index", (x, mask), {"dims": (0,)}) is None


def test_a_training_step_needs_no_sync_for_metadata():
    """Every op of a CNN training step (forward, backward, Adam) is answered by infer, so a lazy
    backend can record the whole step without running anything to learn shapes."""
    from ember import nn
    MetaCheck.unknown.clear()
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 10), nn.LayerNorm(10), nn.GELU(), nn.Dropout(0.1))
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    x = ember.randn(8, 1, 8, 8)
    y = ember.randint(0, 10, (8,))
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    assert model[0].weight.device.backend.inner.__class__ is MetaCheck  # the check really ran
    assert MetaCheck.unknown <= {"bernoulli_mask"}, sorted(MetaCheck.unknown)


def test_first_order_and_one_pass_ops_have_metadata():
    """Ops the gradient rules and the frontend issue on lazy stacks (no sync to learn their shapes)."""
    x = Meta((4, 6), ember.bfloat16, (6, 1))
    idx = Meta((4, 1), ember.int64, (1, 1))
    assert infer("dropout", (x,), {"p": 0.1, "seed": 0, "offset": 0}) == (Meta((4, 6), ember.bfloat16, (6, 1)),) * 2
    assert infer("gather_backward", (Meta((4, 1), ember.float32, (1, 1)), idx), {"shape": (4, 9), "dim": 1}) == (
        Meta((4, 9), ember.float32, (9, 1)),)
    for op in ("gelu_backward", "log_softmax_backward"):
        assert infer(op, (x, x), {}) == (Meta((4, 6), ember.bfloat16, (6, 1)),)
