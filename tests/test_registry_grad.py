"""Gradients of every differentiable registry op against PyTorch's autograd (float64, every float
tensor argument requiring grad, a random cotangent per differentiable output).

Where PyTorch cannot differentiate a sample (it raises) ember's gradient is checked against finite
differences instead, and so it is for the few samples in ``KNOWN`` where PyTorch's gradient is not
the derivative of its own forward (each entry says why). ``tests/test_gradcheck.py`` holds the
finite-difference and second-order checks of a representative subset.
"""

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

# (op name, sample name) -> (how to check, why). "fd": against finite differences, because PyTorch's
# gradient is wrong there; "nonfinite": the gradient is infinite (both must be non-finite where
# either is); "sym": hermitian=True promises a symmetric input, and the libraries' gradients agree on
# symmetric perturbations (their symmetric parts) but spread the rest differently; "skip": no
# gradient is defined.
KNOWN = {
    **{(name, "empty dim list"): ("fd", "PyTorch's var/std backward takes N = 1 for dim=[] while the forward "
                                        "reduces every element (torch.autograd.gradcheck fails on it)")
       for name in ("var", "std", "var(correction=0)", "std(unbiased=False)", "var(correction=2.5)")},
    ("linalg.det", "#11"): ("fd", "a rank-deficient matrix: PyTorch's first-order formula scales by det = 0 and "
                                  "gives 0; the derivative is the cofactor matrix (PyTorch's own create_graph=True "
                                  "path gives it too)"),
    ("linalg.slogdet", "#10"): ("nonfinite", "singular matrix: log|det| = -inf, its gradient is infinite"),
    ("linalg.slogdet", "#11"): ("nonfinite", "singular matrix: log|det| = -inf, its gradient is infinite"),
    ("linalg.svdvals", "#5"): ("skip", "a rank-1 3x4 matrix: the zero singular value is repeated, so its gradient "
                                       "depends on an arbitrary basis of the null space (not differentiable)"),
    ("linalg.pinv", "#5"): ("sym", "hermitian=True"),
    ("linalg.pinv", "#6"): ("sym", "hermitian=True"),
    ("linalg.pinv", "#7"): ("fd", "rtol drops singular values: PyTorch's pinv_backward assumes the pseudo-inverse "
                                  "of all of A, not the truncated one its forward computes"),
    ("linalg.lstsq", "rcond"): ("fd", "rcond drops singular values: PyTorch's lstsq backward uses pinv(A) with the "
                                      "default cutoff, not the truncated solution its forward computes"),
}


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


def _ember_grads(op, s, device, cots=None, rng=None):
    """(leaves, cotangents, gradients) of ember's op on sample s."""
    eargs, ekw, eout = _converted(op, s, "ember", device)
    eouts = _float_outputs(eout, ember.Tensor)
    eleaves = _leaves(eargs, ember.Tensor) + _leaves(tuple(ekw.values()), ember.Tensor)
    if cots is None:
        cots = [rng.standard_normal(tuple(o.shape)) for o in eouts]
    if not eouts or not eleaves:
        return eleaves, cots, []
    gs = ember.autograd.grad(eouts, eleaves, [ember.tensor(c, dtype=ember.float64, device=device) for c in cots],
                             allow_unused=True)
    return eleaves, cots, gs


def _numeric_vjp(op, s, device, cots, eps=1e-6):
    """Central differences of <cots, op(sample)> with respect to each float tensor argument."""
    leaves = [a for a in _flat(s.args) + _flat(tuple(s.kwargs.values())) if isinstance(a, T) and a.requires_grad]
    out = []
    for leaf in leaves:
        base = leaf.data
        grad = np.zeros(base.shape)
        for i in np.ndindex(*base.shape):
            vals = []
            for sign in (1, -1):
                leaf.data = base.copy()
                leaf.data[i] += sign * eps
                with ember.no_grad():
                    outs = _float_outputs_nograd(_converted(op, s, "ember", device)[2])
                vals.append(sum(float(np.sum(c * o.numpy(force=True))) for c, o in zip(cots, outs)))
            grad[i] = (vals[0] - vals[1]) / (2 * eps)
        leaf.data = base
        out.append(grad)
    return out


def _flat(args):
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.extend(_flat(a))
        else:
            out.append(a)
    return out


def _float_outputs_nograd(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, ember.Tensor) and o.dtype.is_floating_point]


def _check_fd(op, s, device, rng, where):
    """ember's gradient of sample s against finite differences (cotangents on the outputs that
    require grad; the others get zeros, so they drop out of the finite differences too)."""
    eargs, ekw, eout = _converted(op, s, "ember", device)
    all_outs = _float_outputs_nograd(eout)
    tracked = [o.requires_grad for o in all_outs]
    try:
        leaves, cots, gs = _ember_grads(op, s, device, rng=rng)
    except RuntimeError as e:  # ember refuses too (e.g. qr mode='r'): fine when PyTorch refused
        return str(e)
    if not gs:
        return None
    it = iter(cots)
    full_cots = [next(it) if t else np.zeros(tuple(o.shape)) for o, t in zip(all_outs, tracked)]
    num = _numeric_vjp(op, s, device, full_cots)
    for i, (g, n) in enumerate(zip(gs, num)):
        got = np.zeros(n.shape) if g is None else as_numpy(g).array
        np.testing.assert_allclose(got, n, rtol=1e-4, atol=1e-6, err_msg=f"{where}: input {i} vs finite differences")
    return None


def _torch_grad_array(b):
    b = b.detach()
    if b._is_zerotensor():  # sgn and friends return PyTorch's ZeroTensor, which won't convert
        b = torch.zeros(b.shape, dtype=b.dtype)
    return as_numpy(b)


@pytest.mark.parametrize("op", GRAD_OPS, ids=[op.name for op in GRAD_OPS])
def test_grad_matches_torch(op, device):
    rng = np.random.default_rng(7)
    checked = 0
    for s in op.samples("float64", rng):
        if s.raises is not None:
            continue
        s = _with_grad(s)
        where = f"{op.name} sample {s.name!r}"
        how, _why = KNOWN.get((op.name, s.name), (None, None))
        if how == "skip":
            continue
        if how == "fd":
            _check_fd(op, s, device, rng, where)
            checked += 1
            continue
        try:
            targs, tkw, tout = _converted(op, s, "torch")
        except RuntimeError as e:  # e.g. PyTorch refuses a tensor that requires grad as a tolerance
            if "requires_grad" not in str(e) and "differentiable" not in str(e):
                raise
            _check_fd(op, s, device, rng, where)
            checked += 1
            continue
        touts = _float_outputs(tout, torch.Tensor)
        tleaves = _leaves(targs, torch.Tensor) + _leaves(tuple(tkw.values()), torch.Tensor)
        if not touts or not tleaves:
            continue
        cots = [rng.standard_normal(tuple(o.shape)) for o in touts]
        try:
            tg = torch.autograd.grad(touts, tleaves, [torch.from_numpy(c) for c in cots], allow_unused=True)
        except RuntimeError:
            # PyTorch refuses this sample (no derivative, or a bug in its backward for a src larger than
            # index): ember must either refuse too or give the finite-difference gradient
            _check_fd(op, s, device, rng, where)
            checked += 1
            continue
        eleaves, _, eg = _ember_grads(op, s, device, cots=cots)
        eouts = _float_outputs(_converted(op, s, "ember", device)[2], ember.Tensor)
        assert len(eouts) == len(touts), \
            f"{where}: {len(eouts)} differentiable outputs, torch has {len(touts)}"
        for i, (a, b) in enumerate(zip(eg, tg)):
            at = f"{where} grad of input {i}"
            if b is None:
                assert a is None or np.allclose(a.numpy(force=True), 0), at
                continue
            assert a is not None, f"{at}: ember gave no gradient, torch did"
            ga, gb = as_numpy(a), _torch_grad_array(b)
            assert ga.shape == gb.shape, f"{at}: shape {ga.shape} vs torch {gb.shape}"
            x, y = ga.array, gb.array
            if how == "nonfinite":
                assert np.array_equal(np.isfinite(x), np.isfinite(y)) and not np.isfinite(x).all(), \
                    f"{at}: expected an infinite gradient\nember {x}\ntorch {y}"
                continue
            if how == "sym":
                x, y = x + np.swapaxes(x, -1, -2), y + np.swapaxes(y, -1, -2)
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-8, equal_nan=True, err_msg=at)
        checked += 1
    if not checked:
        pytest.skip(f"{op.name}: no differentiable float64 sample")


# second order against PyTorch (the gradient of <gradient, r> for a random r), for the core op
# families; the samples in KNOWN are left out, and these too:
SECOND_ORDER_KNOWN = {
    ("digamma", "nan-inf"): "PyTorch's polygamma(n >= 2) is NaN at +inf and -inf at -inf (the limits are 0, NaN)",
    ("linalg.pinv", "rank1"): "repeated (zero) singular values: the SVD's second derivative is not finite there",
    ("linalg.lstsq", "deficient"): "repeated (zero) singular values, as above",
    ("linalg.lstsq", "deficient-gelsd"): "repeated (zero) singular values, as above",
    ("linalg.pinv", "#9"): "rcond drops singular values (first order already differs, see KNOWN)",
    ("linalg.det", "#10"): "the zero 3x3 matrix: det is cubic, so its Hessian there is exactly 0 (ember's answer; "
                           "tests/test_linalg_extra.py checks it); PyTorch's SVD route gives NaN",
}


def _core_ops():
    from tests.opinfo import elementwise, indexing, linalg, movement, reductions, sorting
    names = {op.name for mod in (elementwise, indexing, linalg, movement, reductions, sorting) for op in mod.OPS}
    return [op for op in GRAD_OPS if op.name in names]


CORE_GRAD_OPS = _core_ops()


@pytest.mark.parametrize("op", CORE_GRAD_OPS, ids=[op.name for op in CORE_GRAD_OPS])
def test_second_order_matches_torch(op, device):
    rng = np.random.default_rng(11)
    checked = 0
    for s in op.samples("float64", rng):
        key = (op.name, s.name)
        if s.raises is not None or key in KNOWN or key in SECOND_ORDER_KNOWN:
            continue
        s = _with_grad(s)
        try:
            targs, tkw, tout = _converted(op, s, "torch")
            touts = _float_outputs(tout, torch.Tensor)
            tleaves = _leaves(targs, torch.Tensor) + _leaves(tuple(tkw.values()), torch.Tensor)
            if not touts or not tleaves:
                continue
            cots = [rng.standard_normal(tuple(o.shape)) for o in touts]
            tg = torch.autograd.grad(touts, tleaves, [torch.from_numpy(c) for c in cots], allow_unused=True,
                                     create_graph=True)
            rs = [rng.standard_normal(tuple(v.shape)) for v in tleaves]
            terms = [(g * torch.from_numpy(r)).sum() for g, r in zip(tg, rs) if g is not None and g.requires_grad]
            if not terms:
                continue
            tgg = torch.autograd.grad(sum(terms), tleaves, allow_unused=True)
        except RuntimeError:  # no second derivative in PyTorch for this sample
            continue
        eargs, ekw, eout = _converted(op, s, "ember", device)
        eouts = _float_outputs(eout, ember.Tensor)
        eleaves = _leaves(eargs, ember.Tensor) + _leaves(tuple(ekw.values()), ember.Tensor)
        eg = ember.autograd.grad(eouts, eleaves, [ember.tensor(c, dtype=ember.float64, device=device) for c in cots],
                                 allow_unused=True, create_graph=True)
        eterms = [(g * ember.tensor(r, device=device)).sum() for g, r in zip(eg, rs)
                  if g is not None and g.requires_grad]
        where = f"{op.name} sample {s.name!r}"
        if not eterms:  # ember's first gradient is constant: PyTorch's second derivative must be zero
            assert all(t is None or not _torch_grad_array(t).array.any() for t in tgg), \
                f"{where}: ember's gradient does not depend on the inputs, PyTorch's does"
            checked += 1
            continue
        total = eterms[0]
        for t in eterms[1:]:
            total = total + t
        egg = ember.autograd.grad(total, eleaves, allow_unused=True)
        for i, (a, b) in enumerate(zip(egg, tgg)):
            x = np.zeros(tuple(eleaves[i].shape)) if a is None else as_numpy(a).array
            y = np.zeros(tuple(eleaves[i].shape)) if b is None else _torch_grad_array(b).array
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7, equal_nan=True,
                                       err_msg=f"{where}: second-order gradient of input {i}")
        checked += 1
    if not checked:
        pytest.skip(f"{op.name}: no twice-differentiable float64 sample")


def test_known_divergences_are_real():
    """Every KNOWN entry names a sample that exists, so the list can't silently go stale."""
    names = {(op.name, s.name) for op in GRAD_OPS for s in op.samples("float64", np.random.default_rng(7))}
    missing = [k for k in (*KNOWN, *SECOND_ORDER_KNOWN) if k not in names]
    assert not missing, f"KNOWN names samples the registry no longer has: {missing}"
