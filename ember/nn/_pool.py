"""Pooling: max/avg pools (1-3 d, ceil_mode, indices), adaptive pools, power-average pools and
max_unpool, with torch.nn.functional's names, defaults and rules.

max and avg pools are backend ops (``max_pool`` / ``max_pool_values``, ``avg_pool``,
``adaptive_max_pool``); adaptive average pooling is a composite (a mean, an avg_pool when the
windows tile the input, otherwise gathered window sums one dim at a time, as boxes are separable);
lp_pool and max_unpool are composites of other ops.
"""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._tensor import Tensor, run, wrap
from ._conv import _check_tensor, _is_int

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d"]

_WORDS = {1: "one", 2: "two", 3: "three"}


def _pool_ints(value, nd: int, name: str, op: str, omittable: bool = False) -> tuple[int, ...]:
    """kernel_size/stride/padding/dilation: an int or a tuple of 1 or nd ints."""
    if isinstance(value, Tensor):
        value = value.tolist()
    if _is_int(value):
        return (int(value),) * nd
    if isinstance(value, (tuple, list)):
        for v in value:
            if not _is_int(v):
                raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, but found element of type "
                                f"{type(v).__name__}")
        if len(value) == 1 or len(value) == nd:
            return tuple(int(v) for v in value) * (nd if len(value) == 1 else 1)
        if nd == 1:
            raise RuntimeError(f"{op}() argument '{name}' should contain one int (got {len(value)})")
        how = "either be omitted, a single int" if omittable else "either be a single int"
        raise RuntimeError(f"{op}: {name} must {how}, or a tuple of {_WORDS[nd]} ints (got {list(value)})")
    raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(value).__name__}")


def _pool_input(input, nd: int, op: str) -> tuple[Tensor, bool]:
    _check_tensor(input, "input", op)
    if input.ndim not in (nd + 1, nd + 2) or 0 in input._shape[-(nd + 1):]:
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got: {list(input._shape)}")
    if input._dtype is dt.bool:
        raise dt.unsupported(op, input._dtype, "convert with .float()")
    if input.ndim == nd + 1:
        return input.unsqueeze(0), True
    return input, False


def _window_args(op: str, nd: int, kernel_size, stride, padding, dilation):
    k = _pool_ints(kernel_size, nd, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not len(stride)) else \
        _pool_ints(stride, nd, "stride", op, omittable=True)
    p = _pool_ints(padding, nd, "padding", op)
    d = _pool_ints(dilation, nd, "dilation", op)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}: kernel_size must be greater than zero, but got {list(k)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{op}: stride should not be zero (got stride={list(s)})")
    if any(v < 0 for v in p):
        raise RuntimeError(f"{op}: padding must be non-negative, but got {list(p)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{op}: dilation must be greater than zero, but got {list(d)}")
    for kk, pp, dd in zip(k, p, d):
        if pp > (dd * (kk - 1) + 1) // 2:
            raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation={dd}")
    return k, s, p, d


def _pooled(op: str, x: Tensor, k, s, p, d, ceil_mode: bool) -> tuple[int, ...]:
    """Output sizes; with ceil_mode a last partial window counts when it starts inside the input or
    the left padding."""
    osz = []
    for n, kk, ss, pp, dd in zip(x._shape[2:], k, s, p, d):
        span = n + 2 * pp - dd * (kk - 1) - 1
        o = (span + (ss - 1 if ceil_mode else 0)) // ss + 1
        if ceil_mode and (o - 1) * ss >= n + pp:
            o -= 1
        osz.append(o)
    if any(o < 1 for o in osz):
        raise RuntimeError(f"{op}: Given input size: ({'x'.join(str(n) for n in x._shape[1:])}). Calculated output "
                           f"size: ({'x'.join(str(n) for n in (x._shape[1],) + tuple(osz))}). Output size is too small")
    return tuple(osz)


def _grad_wanted(x: Tensor) -> bool:
    from ..autograd.grad_mode import is_grad_enabled
    return is_grad_enabled() and x.requires_grad


# ---- max pooling -----------------------------------------------------------------------------------
def _max_poolnd(nd, op, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unbatched = _pool_input(input, nd, op)
    k, s, p, d = _window_args(op, nd, kernel_size, stride, padding, dilation)
    osz = _pooled(op, x, k, s, p, d, ceil_mode)
    # padding after each dim: as much as the last window needs (ceil_mode may reach past padding)
    pads = tuple((pp, max(0, (o - 1) * ss + dd * (kk - 1) + 1 - n - pp))
                 for n, o, kk, ss, pp, dd in zip(x._shape[2:], osz, k, s, p, d))
    attrs = {"kernel_size": k, "stride": s, "padding": pads, "dilation": d}
    shape = x._shape[:2] + osz
    if not (return_indices or _grad_wanted(x)):
        out = run("max_pool_values", (x,), attrs, shape, x._dtype)
        return out.squeeze(0) if unbatched else out
    vh, ih = x._device.backend.run("max_pool", (x._h,), attrs)
    v, i = wrap(vh, shape, x._dtype, x._device), wrap(ih, shape, dt.int64, x._device)
    if unbatched:
        v, i = v.squeeze(0), i.squeeze(0)
    return (v, i) if return_indices else v


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """Max over sliding windows of (N, C, L) or (C, L); stride defaults to kernel_size.

    With ``return_indices`` also the flat position of each max within its plane (for max_unpool1d).

    >>> F.max_pool1d(ember.tensor([[1., 3., 2., 5., 4.]]), 2).tolist()
    [[3.0, 5.0]]
    """
    return _max_poolnd(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """Max over sliding windows of (N, C, H, W) or (C, H, W).

    >>> F.max_pool2d(ember.arange(16.).reshape(1, 4, 4), 2).tolist()
    [[[5.0, 7.0], [13.0, 15.0]]]
    """
    return _max_poolnd(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """Max over sliding windows of (N, C, D, H, W) or (C, D, H, W).

    >>> F.max_pool3d(ember.arange(8.).reshape(1, 2, 2, 2), 2).tolist()
    [[[[7.0]]]]
    """
    return _max_poolnd(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


# ---- average pooling -------------------------------------------------------------------------------
def _avg_poolnd(nd, op, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, unbatched = _pool_input(input, nd, op)
    k, s, p, d = _window_args(op, nd, kernel_size, stride, padding, 1)
    if divisor_override is not None:
        if not _is_int(divisor_override):
            raise TypeError(f"{op}(): argument 'divisor_override' must be int, not "
                            f"{type(divisor_override).__name__}")
        if divisor_override == 0:
            raise RuntimeError(f"{op}: divisor must be not zero")
        divisor_override = int(divisor_override)
    osz = _pooled(op, x, k, s, p, d, ceil_mode)
    attrs = {"kernel_size": k, "stride": s, "padding": p, "ceil_mode": bool(ceil_mode),
             "count_include_pad": bool(count_include_pad), "divisor_override": divisor_override}
    out = run("avg_pool", (x,), attrs, x._shape[:2] + osz, x._dtype)
    return out.squeeze(0) if unbatched else out


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of (N, C, L) or (C, L); zero padding counts in the mean unless
    ``count_include_pad=False``. Integer inputs divide with truncation, as PyTorch's int64 path.

    >>> F.avg_pool1d(ember.tensor([[1., 3., 2., 6.]]), 2).tolist()
    [[2.0, 4.0]]
    """
    return _avg_poolnd(1, "avg_pool1d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of (N, C, H, W) or (C, H, W); ``divisor_override`` replaces the
    window size as divisor.

    >>> F.avg_pool2d(ember.arange(16.).reshape(1, 4, 4), 2).tolist()
    [[[2.5, 4.5], [10.5, 12.5]]]
    """
    return _avg_poolnd(2, "avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of (N, C, D, H, W) or (C, D, H, W).

    >>> F.avg_pool3d(ember.arange(8.).reshape(1, 2, 2, 2), 2).tolist()
    [[[[3.5]]]]
    """
    return _avg_poolnd(3, "avg_pool3d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override)


# ---- adaptive pooling ------------------------------------------------------------------------------
def _adaptive_input(input, nd: int, op: str) -> tuple[Tensor, bool]:
    _check_tensor(input, "input", op)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1} to {nd + 2} dimensions, but got {input.ndim}-dimensional "
                           f"tensor for argument #1 'self'")
    for i in range(input.ndim - nd - 1, input.ndim):
        if input._shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input._shape)} with dimension {i} being empty")
    if not input._dtype.is_floating_point:
        raise dt.unsupported(op, input._dtype, "adaptive pooling needs a floating-point input")
    if input.ndim == nd + 1:
        return input.unsqueeze(0), True
    return input, False


def _adaptive_size(output_size, isz, nd: int, op: str) -> tuple[int, ...]:
    if isinstance(output_size, Tensor):
        output_size = output_size.tolist()
    if _is_int(output_size):
        out = (int(output_size),) * nd
    elif isinstance(output_size, (tuple, list)):
        if len(output_size) != nd and not (nd > 1 and len(output_size) == 1):
            if nd == 1:
                raise RuntimeError(f"{op}() argument 'output_size' should contain one int (got {len(output_size)})")
            raise RuntimeError(f"{op}: output_size must be {nd} (got {list(output_size)})")
        if len(output_size) == 1:
            output_size = tuple(output_size) * nd
        out = []
        for v, n in zip(output_size, isz):
            if v is None:
                out.append(n)
            elif _is_int(v):
                out.append(int(v))
            else:
                raise TypeError(f"{op}(): argument 'output_size' must be tuple of ints, but found element of type "
                                f"{type(v).__name__}")
        out = tuple(out)
    else:
        raise TypeError(f"{op}(): argument 'output_size' must be tuple of ints, not {type(output_size).__name__}")
    if any(v < 0 for v in out):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           f"{list(out)}")
    return out


def _window_mean(x: Tensor, dim: int, n: int, o: int) -> Tensor:
    """Adaptive averaging along one dim: window i spans [floor(i*n/o), ceil((i+1)*n/o)). Windows
    differ in length, so element k of every window is gathered at once (clamped past a window's
    end and masked out), ``max length`` gathers in all; no products with 0, so inf and NaN stay
    inside their windows."""
    from .._creation import tensor
    starts = [(i * n) // o for i in range(o)]
    lens = [-((-(i + 1) * n) // o) - st for i, st in enumerate(starts)]
    view = [1] * x.ndim
    view[dim] = o
    acc = None
    for k in range(max(lens)):
        pos = tensor([min(st + k, n - 1) for st in starts], dtype=dt.int64, device=x._device)
        v = x.index_select(dim, pos)
        if any(k >= ln for ln in lens):
            past = tensor([k >= ln for ln in lens], device=x._device).reshape(view)
            v = v.masked_fill(past, 0.0)
        acc = v if acc is None else acc + v
    return acc / tensor(lens, dtype=x._dtype, device=x._device).reshape(view)


def _adaptive_avg_poolnd(nd, op, input, output_size):
    x, unbatched = _adaptive_input(input, nd, op)
    isz = x._shape[2:]
    osz = _adaptive_size(output_size, isz, nd, op)
    dims = tuple(range(2, 2 + nd))
    if osz == isz:
        out = x.clone()
    elif all(o == 1 for o in osz):
        out = x.mean(dims, keepdim=True)
    elif all(o and n % o == 0 for n, o in zip(isz, osz)):   # the windows tile the input: a plain avg_pool
        k = tuple(n // o for n, o in zip(isz, osz))
        out = run("avg_pool", (x,), {"kernel_size": k, "stride": k, "padding": (0,) * nd, "ceil_mode": False,
                                     "count_include_pad": True, "divisor_override": None},
                  x._shape[:2] + osz, x._dtype)
    elif 0 in osz:
        out = x.narrow(2 + osz.index(0), 0, 0).reshape(x._shape[:2] + osz)   # empty, still on the graph
    else:  # the mean over a box is the mean over each dim in turn
        out = x
        for i, (n, o) in enumerate(zip(isz, osz)):
            if n != o:
                out = _window_mean(out, 2 + i, n, o)
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a given length: window i spans [floor(i*L/out), ceil((i+1)*L/out)).

    >>> F.adaptive_avg_pool1d(ember.tensor([[1., 2., 3., 4.]]), 2).tolist()
    [[1.5, 3.5]]
    """
    return _adaptive_avg_poolnd(1, "adaptive_avg_pool1d", input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a given (H, W); an int means square, None keeps that dim's size.

    >>> F.adaptive_avg_pool2d(ember.ones(1, 8, 5, 7), 1).shape
    ember.Size([1, 8, 1, 1])
    """
    return _adaptive_avg_poolnd(2, "adaptive_avg_pool2d", input, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a given (D, H, W).

    >>> F.adaptive_avg_pool3d(ember.ones(1, 2, 4, 4, 4), (2, None, 1)).shape
    ember.Size([1, 2, 2, 4, 1])
    """
    return _adaptive_avg_poolnd(3, "adaptive_avg_pool3d", input, output_size)


def _adaptive_max_poolnd(nd, op, input, output_size, return_indices):
    x, unbatched = _adaptive_input(input, nd, op)
    osz = _adaptive_size(output_size, x._shape[2:], nd, op)
    shape = x._shape[:2] + osz
    vh, ih = x._device.backend.run("adaptive_max_pool", (x._h,), {"output_size": osz})
    v, i = wrap(vh, shape, x._dtype, x._device), wrap(ih, shape, dt.int64, x._device)
    if unbatched:
        v, i = v.squeeze(0), i.squeeze(0)
    return (v, i) if return_indices else v


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling to a given length (windows as adaptive_avg_pool1d's).

    >>> F.adaptive_max_pool1d(ember.tensor([[1., 5., 2., 3., 4.]]), 3).tolist()
    [[5.0, 5.0, 4.0]]
    """
    return _adaptive_max_poolnd(1, "adaptive_max_pool1d", input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling to a given (H, W).

    >>> F.adaptive_max_pool2d(ember.arange(16.).reshape(1, 4, 4), 2).tolist()
    [[[5.0, 7.0], [13.0, 15.0]]]
    """
    return _adaptive_max_poolnd(2, "adaptive_max_pool2d", input, output_size, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling to a given (D, H, W).

    >>> F.adaptive_max_pool3d(ember.arange(8.).reshape(1, 2, 2, 2), 1).tolist()
    [[[[7.0]]]]
    """
    return _adaptive_max_poolnd(3, "adaptive_max_pool3d", input, output_size, return_indices)


# ---- power-average pooling -------------------------------------------------------------------------
def _lp_poolnd(nd, op, input, norm_type, kernel_size, stride, ceil_mode):
    maxp = (max_pool1d, max_pool2d, max_pool3d)[nd - 1]
    avgp = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    if norm_type == math.inf:
        return maxp(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -maxp(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    k = _pool_ints(kernel_size, nd, "kernel_size", op)
    out = avgp(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # avg * window size is the sum of x**p (PyTorch's formula, edge windows of ceil_mode included);
    # sign * |.| keeps a zero sum's gradient at zero
    return (out.sign() * out.abs()).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum of x**p over each window) ** (1/p); p=inf is max pooling of |x|.

    >>> F.lp_pool1d(ember.tensor([[3., 4.]]), 2, 2).tolist()
    [[5.0]]
    """
    return _lp_poolnd(1, "lp_pool1d", input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """2-D power-average pooling.

    >>> F.lp_pool2d(ember.ones(1, 2, 2), 1, 2).tolist()
    [[[4.0]]]
    """
    return _lp_poolnd(2, "lp_pool2d", input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """3-D power-average pooling.

    >>> F.lp_pool3d(ember.ones(1, 2, 2, 2), 1, 2).tolist()
    [[[[8.0]]]]
    """
    return _lp_poolnd(3, "lp_pool3d", input, norm_type, kernel_size, stride, ceil_mode)


# ---- max unpooling ---------------------------------------------------------------------------------
def _max_unpoolnd(nd, op, input, indices, kernel_size, stride, padding, output_size):
    _check_tensor(input, "input", op)
    _check_tensor(indices, "indices", op)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor for input, but got: "
                           f"{list(input._shape)}")
    if indices._dtype is not dt.int64:
        raise RuntimeError(f"{op}: elements in indices should be type int64 but got: {indices._dtype.name}")
    if indices._shape != input._shape:
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input tensor "
                           f"({list(input._shape)}) but got indices tensor with shape: {list(indices._shape)}")
    k = _pool_ints(kernel_size, nd, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not len(stride)) else \
        _pool_ints(stride, nd, "stride", op, omittable=True)
    p = _pool_ints(padding, nd, "padding", op)
    isz = input._shape[-nd:]
    default = tuple((n - 1) * ss + kk - 2 * pp for n, ss, kk, pp in zip(isz, s, k, p))
    if output_size is None:
        osz = default
    else:
        osz = list(output_size.tolist() if isinstance(output_size, Tensor) else output_size)
        if len(osz) == nd + 2:
            osz = osz[2:]
        if len(osz) != nd:
            raise ValueError(f"{op}: output_size should be a sequence containing {nd} or {nd + 2} elements, but it "
                             f"has a length of '{len(osz)}'")
        for i, (o, dflt, ss) in enumerate(zip(osz, default, s)):
            if not dflt - ss < o < dflt + ss:
                raise ValueError(f'{op}: invalid output_size "{list(osz)}" (dim {i} must be between {dflt - ss} '
                                 f"and {dflt + ss})")
        osz = tuple(int(o) for o in osz)
    if any(o < 0 for o in osz):
        raise ValueError(f"{op}: output_size must contain non-negative spatial dimensions, but got {list(osz)}")
    lead = input._shape[:-nd]
    L = math.prod(osz)
    flat_idx = indices.reshape(lead + (-1,))
    if indices.numel():
        lo, hi = int(flat_idx.amin().item()), int(flat_idx.amax().item())
        if lo < 0 or hi >= L:
            raise RuntimeError(f"{op}: Found an invalid max index: {lo if lo < 0 else hi} (output volumes are of "
                               f"size {'x'.join(str(o) for o in osz)})")
    from .._creation import zeros
    out = zeros(lead + (L,), dtype=input._dtype, device=input._device)
    out = out.scatter(len(lead), flat_idx, input.reshape(lead + (-1,)))
    return out.reshape(lead + osz)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """Partial inverse of max_pool1d: values placed at their indices, zeros elsewhere.

    >>> v, i = F.max_pool1d(ember.tensor([[1., 3., 2., 5.]]), 2, return_indices=True)
    >>> F.max_unpool1d(v, i, 2).tolist()
    [[0.0, 3.0, 0.0, 5.0]]
    """
    return _max_unpoolnd(1, "max_unpool1d", input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """Partial inverse of max_pool2d.

    >>> v, i = F.max_pool2d(ember.arange(16.).reshape(1, 4, 4), 2, return_indices=True)
    >>> F.max_unpool2d(v, i, 2).shape
    ember.Size([1, 4, 4])
    """
    return _max_unpoolnd(2, "max_unpool2d", input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """Partial inverse of max_pool3d.

    >>> v, i = F.max_pool3d(ember.arange(8.).reshape(1, 2, 2, 2), 2, return_indices=True)
    >>> F.max_unpool3d(v, i, 2).shape
    ember.Size([1, 2, 2, 2])
    """
    return _max_unpoolnd(3, "max_unpool3d", input, indices, kernel_size, stride, padding, output_size)
