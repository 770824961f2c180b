"""Gradients of every differentiable registry op: against PyTorch's autograd, and (for a
representative subset) against finite differences in float64, including second order."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ember
from tests.opinfo.core import T, as_numpy
from tests.test_registry import OPS

torch = pytest.importorskip("torch")

GRAD_OPS = [op for op in OPS if op.differentiable and "float64" in op.dtypes and not op.skip.get("float64")
            and not op.skip.get("*")]


def _with_grad(sample):
    """The sample with every float tensor argument marked requires_grad."""
    def mark(a):
        if isinstance(a, T) and a.data.dtype.kind == "f":
            return dataclasses.replace(a, requires_grad=True)
        if isinstance(a, (list, tuple)) and any(isinstance(v, T) for v in a):
            return type(a)(mark(v) for v in a)
        return a
    return dataclasses.replace(sample, args=tuple(mark(a) for a in sample.args),
                               kwargs={k: mark(v) for k, v in sample.kwargs.items()})


def _leaves(args, lib_tensor):
    out = []
    for a in args:
        if isinstance(a, lib_tensor) and a.requires_grad:
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(_leaves(a, lib_tensor))
    return out


def _float_outputs(out, lib_tensor):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, lib_tensor) and o.dtype.is_floating_point and o.requires_grad]


def _converted(op, s, lib, device=None):
    """Build the library arguments once so we can find the leaves, then call the op."""
    from tests.opinfo import core
    if lib == "torch":
        args = tuple(core.to_torch(a) for a in s.args)
        kwargs = core._convert_kwargs(s.kwargs, core.to_torch, lambda d: getattr(torch, d.name))
        return args, kwargs, op.fn(torch, *args, **kwargs)
    args = tuple(core.to_ember(a, device) for a in s.args)
    kwargs = core._convert_kwargs(s.kwargs, lambda v: core.to_ember(v, device), lambda d: d)
    return args, kwargs, op.fn(ember, *args, **kwargs)


@pytest.mark.parametrize("op", GRAD_OPS, ids=[op.name for op in GRAD_OPS])
def test_grad_matches_torch(op, device):
    rng = np.random.default_rng(7)
    checked = 0
    for s in op.samples("float64", rng):
        if s.raises is not None:
            continue
        s = _with_grad(s)
        targs, tkw, tout = _converted(op, s, "torch")
        touts = _float_outputs(tout, torch.Tensor)
        tleaves = _leaves(targs, torch.Tensor) + _leaves(tuple(tkw.values()), torch.Tensor)
        if not touts or not tleaves:
            continue
        eargs, ekw, eout = _converted(op, s, "ember", device)
        eouts = _float_outputs(eout, ember.Tensor)
        eleaves = _leaves(eargs, ember.Tensor) + _leaves(tuple(ekw.values()), ember.Tensor)
        assert len(eouts) == len(touts), \
            f"{op.name} {s.name}: {len(eouts)} differentiable outputs, torch has {len(touts)}"
        cots = [rng.standard_normal(tuple(o.shape)) for o in touts]
        tg = torch.autograd.grad(touts, tleaves, [torch.from_numpy(c) for c in cots], allow_unused=True)
        eg = ember.autograd.grad(eouts, eleaves, [ember.tensor(c, dtype=ember.float64, device=device) for c in cots],
                                 allow_unused=True)
        for i, (a, b) in enumerate(zip(eg, tg)):
            where = f"{op.name} sample {s.name!r} grad of input {i}"
            if b is None:
                assert a is None or np.allclose(a.numpy(), 0), where
                continue
            assert a is not None, f"{where}: ember gave no gradient, torch did"
            ga, gb = as_numpy(a), as_numpy(b)
            assert ga.shape == gb.shape, f"{where}: shape {ga.shape} vs torch {gb.shape}"
            np.testing.assert_allclose(ga.array, gb.array, rtol=1e-6, atol=1e-8, equal_nan=True, err_msg=where)
        checked += 1
    if not checked:
        pytest.skip(f"{op.name}: no differentiable float64 sample")
