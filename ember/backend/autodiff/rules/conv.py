"""Gradient rules of the conv and pooling ops, closed under differentiation (double backward works):

* conv: d/dx is conv_transpose of the gradient, d/dw is conv_weight (x correlated with the gradient);
* conv_transpose: d/dx is conv of the gradient, d/dw is conv_weight with the roles of x and the
  gradient swapped;
* conv_weight is bilinear: its gradients are a conv_transpose and a conv with the weight gradient;
* im2col and col2im are each other's adjoints, as are avg_pool and avg_pool_backward;
* max pools scatter the gradient to the saved indices (max_pool_backward), whose own gradient is
  a gather at the same indices.
"""

from __future__ import annotations

import math

from .base import rule

NONDIFF_CONV: set = set()


def _needs(n, i: int) -> bool:
    return i < len(n.edges) and n.edges[i] is not None


def _bias_grad(F, g):
    return F.sum(g, (0,) + tuple(range(2, len(F.shape(g)))))


def _fit_to(F, g, pads, kernel, stride, dilation, size):
    """The gradient of a conv_transpose cropped where its padding was negative (output_padding), with
    the (lo, hi) padding under which a conv/im2col over it has exactly ``size`` output positions."""
    shape = F.shape(g)
    crop, new = [], []
    for n, (lo, _), k, s, d, m in zip(shape[2:], pads, kernel, stride, dilation, size):
        # conv over g with padding (lo, hi') has (n + lo + hi' - d*(k-1) - 1)//s + 1 outputs
        hi2 = (m - 1) * s + d * (k - 1) + 1 - n - lo
        if hi2 < 0:
            crop.append(n + hi2)
            hi2 = 0
        else:
            crop.append(n)
        new.append((lo, hi2))
    if tuple(crop) != tuple(shape[2:]):
        g = F.run("slice", g, index=((0, shape[0], 1), (0, shape[1], 1)) + tuple((0, c, 1) for c in crop))
    return g, tuple(new)


def _input_grad(F, g, w, xs, kernel, a):
    """conv's gradient in its input x (shape ``xs``): conv_transpose of g, whose output
    ((m-1)*s + d*(k-1) + 1 - lo - hi) is made x's size by the choice of hi."""
    tp = tuple((lo, (m - 1) * st + d * (k - 1) + 1 - lo - size)
               for m, (lo, _), st, d, k, size in zip(F.shape(g)[2:], a["padding"], a["stride"], a["dilation"],
                                                      kernel, xs[2:]))
    return F.run("conv_transpose", g, w, stride=a["stride"], padding=tp, dilation=a["dilation"], groups=a["groups"])


@rule("conv", save=(0, 1))
def _conv(F, g, s, n):
    x, w = s
    a = n.attrs
    stride, pads, dil, groups = a["stride"], a["padding"], a["dilation"], a["groups"]
    xs, ws = n.in_meta[0][0], n.in_meta[1][0]
    kernel = ws[2:]
    gx = gw = gb = None
    if _needs(n, 0):
        gx = _input_grad(F, g, w, xs, kernel, a)
    if _needs(n, 1):
        gw = F.run("conv_weight", x, g, kernel_size=kernel, stride=stride, padding=pads, dilation=dil,
                   groups=groups)
    if _needs(n, 2):
        gb = _bias_grad(F, g)
    return (gx, gw, gb)[: len(n.in_meta)]


@rule("conv_transpose", save=(0, 1))
def _conv_transpose(F, g, s, n):
    x, w = s
    a = n.attrs
    stride, pads, dil, groups = a["stride"], a["padding"], a["dilation"], a["groups"]
    xs, ws = n.in_meta[0][0], n.in_meta[1][0]
    kernel = ws[2:]
    gx = gw = gb = None
    if _needs(n, 0) or _needs(n, 1):
        gc, cp = _fit_to(F, g, pads, kernel, stride, dil, xs[2:])
        if _needs(n, 0):
            gx = F.run("conv", gc, w, stride=stride, padding=cp, dilation=dil, groups=groups)
        if _needs(n, 1):
            gw = F.run("conv_weight", gc, x, kernel_size=kernel, stride=stride, padding=cp, dilation=dil,
                       groups=groups)
    if _needs(n, 2):
        gb = _bias_grad(F, g)
    return (gx, gw, gb)[: len(n.in_meta)]


@rule("conv_weight", save=(0, 1))
def _conv_weight(F, gw, s, n):
    # gw_out = sum x (*) g is bilinear: d/dx is conv's input gradient with weight gw, d/dg is conv(x, gw)
    x, g = s
    a = n.attrs
    xs = n.in_meta[0][0]
    gx = _input_grad(F, g, gw, xs, a["kernel_size"], a) if _needs(n, 0) else None
    gg = F.run("conv", x, gw, stride=a["stride"], padding=a["padding"], dilation=a["dilation"],
               groups=a["groups"]) if _needs(n, 1) else None
    return (gx, gg)


@rule("im2col")
def _im2col(F, g, s, n):
    a = n.attrs
    return (F.run("col2im", g, output_size=tuple(n.in_meta[0][0][2:]), kernel_size=a["kernel_size"],
                  dilation=a["dilation"], padding=a["padding"], stride=a["stride"]),)


@rule("col2im")
def _col2im(F, g, s, n):
    a = n.attrs
    return (F.run("im2col", g, kernel_size=a["kernel_size"], dilation=a["dilation"], padding=a["padding"],
                  stride=a["stride"]),)


def _disjoint_windows(attrs: dict) -> bool:
    """Whether no input position lies in two max_pool windows (then the backward needs no sums)."""
    return all(s >= (k - 1) * d + 1 for k, s, d in zip(attrs["kernel_size"], attrs["stride"], attrs["dilation"]))


@rule("max_pool", "adaptive_max_pool", save=("o1",), multi=True, nondiff_outputs=(1,))
def _max_pool(F, gs, s, n):
    if gs[0] is None:
        return (None,)
    return (F.run("max_pool_backward", gs[0], s[0], input_size=tuple(n.in_meta[0][0][2:]),
                  disjoint=n.op == "max_pool" and _disjoint_windows(n.attrs)),)


@rule("max_pool_values", save=(0,))
def _max_pool_values(F, g, s, n):
    # the frontend picks max_pool when gradients are wanted; this recomputes the indices otherwise
    _, idx = F.run("max_pool", s[0], **n.attrs)
    return (F.run("max_pool_backward", g, idx, input_size=tuple(n.in_meta[0][0][2:]),
                  disjoint=_disjoint_windows(n.attrs)),)


@rule("max_pool_backward", save=(1,))
def _max_pool_backward(F, g, s, n):
    idx = s[0]
    ishape = F.shape(idx)
    gshape = F.shape(g)
    flat = F.reshape(g, gshape[:2] + (math.prod(gshape[2:]),))
    index = F.reshape(idx, ishape[:2] + (math.prod(ishape[2:]),))
    return (F.reshape(F.run("gather", flat, index, dim=2), ishape), None)


@rule("avg_pool")
def _avg_pool(F, g, s, n):
    return (F.run("avg_pool_backward", g, input_size=tuple(n.in_meta[0][0][2:]), **n.attrs),)


@rule("avg_pool_backward")
def _avg_pool_backward(F, g, s, n):
    attrs = {k: v for k, v in n.attrs.items() if k != "input_size"}
    return (F.run("avg_pool", g, **attrs),)
