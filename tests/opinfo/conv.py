"""Registry entries: convolutions, transposed convolutions, unfold/fold and pooling.

Samples cover 1x1 kernels, stride larger than the kernel, dilation, groups (depthwise too),
padding='same' with even kernels, ceil_mode edge windows, empty batches, unbatched inputs,
non-contiguous views, NaN/inf and ties in max pooling, and the errors PyTorch raises. dtypes that
PyTorch's CPU kernels refuse (bool everywhere, integers for adaptive pools) hold error samples only.
"""

from __future__ import annotations

import math

import numpy as np

from .core import FLOATS, OpInfo, Sample, T, make

F_INT = FLOATS + ("int64",)
# convolutions sum up to ~100 products: float32 BLAS and PyTorch's kernels differ in the last bits
CONV_TOL = {"float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2), "float32": (2e-5, 2e-5), "float64": (1e-10, 1e-10)}
POOL_TOL = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2), "float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10)}
INF = math.inf


def S(*args, name: str = "", raises=None, **kwargs) -> Sample:
    return Sample(args, kwargs, name, raises)


class Maker:
    """Tensor arguments of the sample dtype, small values so that low-precision sums stay exact-ish."""

    def __init__(self, dtype: str, rng: np.random.Generator):
        self.dtype, self.rng = dtype, rng

    def __call__(self, shape, layout="contiguous", low=-1.0, high=1.0, special=False) -> T:
        lo, hi = (-3, 3) if self.dtype in ("int64", "bool") else (low, high)
        return T(make(shape, self.dtype, self.rng, lo, hi, special), layout)

    def ties(self, shape, layout="contiguous") -> T:
        """Few distinct values: max-pool windows with ties (PyTorch takes the first max)."""
        return T(self.rng.integers(0, 3, shape).astype(make((), self.dtype, self.rng).dtype), layout)

    def other(self, shape) -> T:
        d = "float64" if self.dtype != "float64" else "float32"
        return T(make(shape, d, self.rng))


def gen(build, only_errors=(), errors=None):
    """Samples from ``build(m, dtype)``; for dtypes in ``only_errors`` the samples of ``errors(m)``."""
    def samples(dtype, rng):
        m = Maker(dtype, rng)
        items = errors(m) if dtype in only_errors else build(m, dtype)
        for i, s in enumerate(items):
            s.name = s.name or f"#{i}"
            yield s
    return samples


def fn(name: str):
    def call(lib, *args, **kwargs):
        return getattr(lib.nn.functional, name)(*args, **kwargs)
    call.__name__ = name
    return call


# ---- convolution ---------------------------------------------------------------------------------
def _conv_errors(nd: int):
    def build(m):
        sp = (5,) * nd
        k = (3,) * nd
        return [
            S(m((2, 4) + sp), m((6, 3) + k), raises=RuntimeError, name="wrong-channels"),
            S(m((2, 4) + sp), m((6, 2) + k), groups=3, raises=RuntimeError, name="groups-vs-channels"),
            S(m((2, 4) + sp), m((5, 2) + k), groups=2, raises=RuntimeError, name="groups-vs-out"),
            S(m((2, 4) + sp), m((6, 4) + k), m((5,)), raises=RuntimeError, name="bias-size"),
            S(m((2, 4) + sp), m((6, 4) + (7,) * nd), raises=RuntimeError, name="kernel-too-big"),
            S(m((2, 4) + sp), m((6, 4) + (3,) * nd), dilation=3, raises=RuntimeError, name="dilated-too-big"),
            S(m((4,) + (5,) * (nd - 1)), m((6, 4) + k), raises=RuntimeError, name="input-rank"),
            S(m((2, 4) + sp), m((6, 4) + (3,) * (nd + 1)), raises=RuntimeError, name="weight-rank"),
            S(m((2, 4) + sp), m((6, 4) + k), padding="same", stride=2, raises=RuntimeError, name="same-strided"),
            S(m((2, 4) + sp), m((6, 4) + k), padding="full", raises=RuntimeError, name="bad-padding-string"),
            S(m((2, 4) + sp), m((6, 4) + k), stride=0, raises=RuntimeError, name="stride0"),
            S(m((2, 4) + sp), m((6, 4) + k), padding=-1, raises=RuntimeError, name="negative-padding"),
            S(m((2, 4) + sp), m((6, 4) + k), dilation=0, raises=RuntimeError, name="dilation0"),
            S(m((2, 4) + sp), m((6, 4) + k), groups=0, raises=RuntimeError, name="groups0"),
            S(m((2, 4) + sp), m((6, 4) + k), stride=(1,) * (nd + 1), raises=RuntimeError, name="stride-length"),
            S(m((2, 4) + sp), m((6, 4) + k), stride=1.5, raises=TypeError, name="float-stride"),
            S(m((2, 4) + sp), m((0, 4) + k), raises=RuntimeError, name="no-out-channels"),
            S(m((1, 4) + (0,) + sp[1:]), m((6, 4) + (1,) * nd), raises=RuntimeError, name="empty-spatial"),
            S(m((2, 4) + sp), m.other((6, 4) + k), raises=RuntimeError, name="dtype-mismatch"),
        ]
    return build


def _conv2d(m, dtype):
    x = m((2, 3, 6, 5))
    return [
        S(x, m((4, 3, 3, 3)), m((4,)), name="basic-bias"),
        S(x, m((4, 3, 3, 3)), stride=2, padding=1, name="stride2-pad1"),
        S(x, m((5, 3, 1, 1)), name="1x1"),
        S(x, m((5, 3, 1, 1)), m((5,)), stride=2, name="1x1-stride2"),
        S(x, m((4, 3, 2, 2)), stride=3, name="stride>kernel"),
        S(x, m((4, 3, 3, 2)), stride=(2, 1), padding=(2, 1), dilation=(2, 1), name="dilation"),
        S(m((2, 4, 6, 5)), m((6, 2, 3, 3)), m((6,)), groups=2, padding=1, name="groups2"),
        S(m((2, 4, 6, 5)), m((4, 1, 3, 3)), groups=4, padding=1, name="depthwise"),
        S(m((2, 4, 6, 5)), m((8, 1, 3, 2)), m((8,)), groups=4, stride=2, name="depthwise-x2"),
        S(x, m((4, 3, 2, 4)), padding="same", name="same-even"),
        S(x, m((4, 3, 2, 3)), padding="same", dilation=(2, 1), name="same-dilated"),
        S(x, m((4, 3, 3, 3)), padding="valid", name="valid"),
        S(m((3, 6, 5)), m((4, 3, 3, 3)), m((4,)), padding=1, name="unbatched"),
        S(m((0, 3, 6, 5)), m((4, 3, 3, 3)), name="empty-batch"),
        S(m((2, 3, 6, 5), "transposed"), m((4, 3, 3, 3), "strided"), m((4,)), padding=1, name="non-contiguous"),
        S(m((2, 3, 6, 5), "strided"), m((4, 3, 2, 2), "transposed"), stride=[2, 1], name="strided-list-stride"),
        S(x, m((2, 3, 6, 5)), name="kernel=input"),
    ]


def _conv1d(m, dtype):
    x = m((2, 4, 9))
    return [
        S(x, m((3, 4, 3)), m((3,)), name="basic"),
        S(x, m((3, 4, 2)), stride=3, padding=1, name="stride>kernel"),
        S(x, m((3, 4, 3)), dilation=2, padding=2, name="dilation"),
        S(x, m((6, 2, 3)), groups=2, name="groups"),
        S(x, m((4, 1, 3)), groups=4, padding=(1,), name="depthwise"),
        S(x, m((3, 4, 4)), padding="same", name="same-even"),
        S(x, m((3, 4, 1)), name="1x1"),
        S(m((4, 9)), m((3, 4, 3)), name="unbatched"),
        S(m((0, 4, 9)), m((3, 4, 3)), name="empty-batch"),
        S(m((2, 4, 9), "transposed"), m((3, 4, 3), "transposed"), m((3,)), stride=2, name="non-contiguous"),
    ]


def _conv3d(m, dtype):
    x = m((1, 2, 4, 5, 3))
    return [
        S(x, m((3, 2, 2, 3, 2)), m((3,)), name="basic"),
        S(x, m((3, 2, 3, 3, 3)), stride=2, padding=1, name="stride-pad"),
        S(x, m((2, 2, 1, 1, 1)), name="1x1x1"),
        S(x, m((4, 1, 3, 2, 2)), groups=2, padding=(1, 0, 1), dilation=(1, 2, 1), name="groups-dilation"),
        S(x, m((2, 2, 2, 2, 2)), padding="same", name="same-even"),
        S(m((2, 4, 5, 3)), m((3, 2, 2, 2, 2)), name="unbatched"),
        S(m((1, 2, 4, 5, 3), "transposed"), m((3, 2, 2, 2, 2)), name="non-contiguous"),
    ]


# ---- transposed convolution ----------------------------------------------------------------------
def _convt_errors(nd: int):
    def build(m):
        sp = (3,) * nd
        k = (3,) * nd
        return [
            S(m((2, 4) + sp), m((3, 3) + k), raises=RuntimeError, name="wrong-channels"),
            S(m((2, 4) + sp), m((4, 3) + k), groups=3, raises=RuntimeError, name="groups"),
            S(m((2, 4) + sp), m((4, 3) + k), m((4,)), groups=2, raises=RuntimeError, name="bias-size"),
            S(m((2, 4) + sp), m((4, 3) + k), stride=2, output_padding=2, raises=RuntimeError,
              name="output-padding-too-big"),
            S(m((2, 4) + sp), m((4, 3) + k), output_padding=-1, raises=RuntimeError, name="negative-output-padding"),
            S(m((2, 4) + sp), m((4, 3) + k), padding=3, raises=RuntimeError, name="output-too-small"),
            S(m((2, 4) + sp), m((4, 3) + k), padding="same", raises=TypeError, name="string-padding"),
            S(m((2, 4) + sp), m((4, 3) + k), stride=0, raises=RuntimeError, name="stride0"),
            S(m((4,) + (3,) * (nd - 1)), m((4, 3) + k), raises=RuntimeError, name="input-rank"),
            S(m((2, 4) + sp), m.other((4, 3) + k), raises=RuntimeError, name="dtype-mismatch"),
        ]
    return build


def _convt2d(m, dtype):
    x = m((2, 4, 3, 4))
    return [
        S(x, m((4, 3, 3, 3)), m((3,)), name="basic"),
        S(x, m((4, 3, 3, 3)), stride=2, padding=1, output_padding=1, name="stride-outpad"),
        S(x, m((4, 2, 3, 2)), m((4,)), groups=2, stride=(2, 3), padding=(1, 0), name="groups"),
        S(x, m((4, 3, 3, 3)), dilation=2, output_padding=1, name="dilation-outpad"),
        S(x, m((4, 3, 2, 2)), stride=3, name="stride>kernel"),
        S(x, m((4, 5, 1, 1)), name="1x1"),
        S(x, m((4, 1, 3, 3)), groups=4, stride=2, name="depthwise"),
        S(m((4, 3, 4)), m((4, 3, 3, 3)), m((3,)), stride=2, name="unbatched"),
        S(m((0, 4, 3, 4)), m((4, 3, 3, 3)), name="empty-batch"),
        S(m((2, 4, 3, 4), "transposed"), m((4, 3, 3, 3), "strided"), stride=2, padding=(0, 1), name="non-contiguous"),
    ]


def _convt1d(m, dtype):
    x = m((2, 4, 5))
    return [
        S(x, m((4, 3, 3)), m((3,)), name="basic"),
        S(x, m((4, 3, 3)), stride=3, padding=2, output_padding=2, name="stride-outpad"),
        S(x, m((4, 2, 3)), groups=2, dilation=3, output_padding=2, name="groups-dilation"),
        S(m((4, 5)), m((4, 3, 2)), stride=2, name="unbatched"),
        S(m((2, 4, 5), "strided"), m((4, 3, 3)), stride=2, name="non-contiguous"),
    ]


def _convt3d(m, dtype):
    x = m((1, 2, 2, 3, 2))
    return [
        S(x, m((2, 3, 2, 2, 2)), m((3,)), name="basic"),
        S(x, m((2, 2, 3, 2, 3)), stride=2, padding=1, output_padding=(1, 0, 1), name="stride-outpad"),
        S(x, m((2, 1, 2, 2, 2)), groups=2, dilation=(1, 2, 1), name="groups-dilation"),
        S(m((2, 2, 3, 2)), m((2, 3, 2, 2, 2)), name="unbatched"),
    ]


# ---- unfold / fold -------------------------------------------------------------------------------
def _unfold(m, dtype):
    x = m((2, 3, 5, 6))
    return [
        S(x, 2, name="k2"),
        S(x, (2, 3), dilation=(2, 1), padding=1, stride=(1, 2), name="all-args"),
        S(x, 1, stride=3, name="1x1-stride3"),
        S(m((3, 5, 6)), 3, padding=1, name="unbatched"),
        S(m((0, 3, 5, 6)), 2, name="empty-batch"),
        S(m((2, 3, 5, 6), "transposed"), [2, 2], stride=2, name="non-contiguous"),
        S(x, 7, raises=RuntimeError, name="kernel-too-big"),
        S(m((1, 1, 3, 5, 5)), 2, raises=RuntimeError, name="5d-input"),
        S(x, (2, 2, 2), raises=RuntimeError, name="kernel-length"),
        S(x, 0, raises=RuntimeError, name="kernel0"),
        S(m((1, 0, 3, 3)), 2, raises=RuntimeError, name="zero-channels"),
    ]


def _fold(m, dtype):
    return [
        S(m((2, 12, 16)), (5, 5), 2, name="k2"),
        S(m((2, 12, 9)), (5, 6), (2, 3), dilation=(2, 1), padding=1, stride=(2, 2), name="all-args"),
        S(m((12, 16)), 5, 2, name="unbatched"),
        S(m((0, 12, 16)), (5, 5), 2, name="empty-batch"),
        S(m((2, 12, 8), "transposed"), (5, 5), 2, stride=(1, 2), name="non-contiguous"),
        S(m((2, 12, 15)), (5, 5), 2, raises=RuntimeError, name="wrong-blocks"),
        S(m((2, 11, 16)), (5, 5), 2, raises=RuntimeError, name="channels-not-divisible"),
        S(m((1, 1, 4, 4)), 3, 2, raises=RuntimeError, name="4d-input"),
        S(m((1, 4, 1)), 1, 2, raises=RuntimeError, name="no-blocks"),
    ]


# ---- max / avg pooling ---------------------------------------------------------------------------
def _pool_errors(nd: int, avg: bool = False):
    def build(m):
        x = m((2, 3) + (5,) * nd)
        out = [
            S(x, 2, padding=2, raises=RuntimeError, name="pad>half-kernel"),
            S(x, 6, raises=RuntimeError, name="output-too-small"),
            S(x, 0, raises=RuntimeError, name="kernel0"),
            S(x, 2, stride=0, raises=RuntimeError, name="stride0"),
            S(m((2, 0) + (5,) * nd), 2, raises=RuntimeError, name="empty-channels"),
            S(x, 2.0, raises=TypeError, name="float-kernel"),
        ]
        if nd > 1:
            out.append(S(x, (2,) * (nd + 1), raises=RuntimeError, name="kernel-length"))
        out.append(S(x, 3, padding=-1, raises=RuntimeError, name="negative-padding"))
        if not avg:
            out.append(S(x, 3, dilation=0, raises=RuntimeError, name="dilation0"))
        return out
    return build


def _bool_pool_errors(nd: int):
    def build(m):
        return [S(T(np.ones((1, 2) + (4,) * nd, bool)), 2, raises=NotImplementedError, name="bool")]
    return build


def _max_pool(nd: int):
    def build(m, dtype):
        ri = {"return_indices": True}
        if nd == 1:
            x, x2 = m((2, 3, 11)), m((3, 8))
        elif nd == 2:
            x, x2 = m((2, 3, 7, 6)), m((3, 5, 8))
        else:
            x, x2 = m((1, 2, 5, 4, 6)), m((2, 4, 3, 5))
        out = [
            S(x, 2, **ri, name="k2"),
            S(x, 3, stride=2, padding=1, **ri, name="k3s2p1"),
            S(x, 3, stride=2, padding=1, ceil_mode=True, **ri, name="ceil-pad"),
            S(x, 2, stride=2, ceil_mode=True, **ri, name="ceil-edge"),
            S(x, 2, stride=3, ceil_mode=True, **ri, name="stride>kernel-ceil"),
            S(x, 2, dilation=2, padding=1, **ri, name="dilation"),
            S(x, (3,) + (2,) * (nd - 1), stride=(1,) + (2,) * (nd - 1), **ri, name="tuple-args"),
            S(x, 1, stride=2, **ri, name="1x1"),
            S(m.ties((2, 3) + x.data.shape[2:]), 3, stride=1, padding=1, **ri, name="ties"),
            S(x2, 2, stride=1, **ri, name="unbatched"),
            S(m((0, 3) + x.data.shape[2:]), 2, **ri, name="empty-batch"),
            S(m(x.data.shape, "transposed"), 3, stride=2, **ri, name="non-contiguous"),
            S(m(x.data.shape, "strided"), 2, **ri, name="strided"),
            S(x, 3, stride=[], **ri, name="empty-stride"),
        ]
        if dtype in FLOATS:
            special = make((2, 3) + x.data.shape[2:], dtype, m.rng, special=True)
            special.reshape(-1)[5] = np.nan
            out.append(S(T(special), 3, stride=2, padding=1, ceil_mode=True, **ri, name="nan-inf"))
            neg = np.full((1, 2) + x.data.shape[2:], -np.inf, make((), dtype, m.rng).dtype)
            out.append(S(T(neg), 2, stride=2, padding=1, ceil_mode=True, **ri, name="all-minus-inf"))
            # values only (PyTorch's 1-d values-only kernel takes floats only)
            out.append(S(x, 3, stride=2, padding=1, ceil_mode=True, name="values-only"))
            out.append(S(T(special), 2, name="values-only-nan"))
        return out
    return build


def _avg_pool(nd: int):
    def build(m, dtype):
        if nd == 1:
            x, x2 = m((2, 3, 11)), m((3, 8))
        elif nd == 2:
            x, x2 = m((2, 3, 7, 6)), m((3, 5, 8))
        else:
            x, x2 = m((1, 2, 5, 4, 6)), m((2, 4, 3, 5))
        out = [
            S(x, 2, name="k2"),
            S(x, 3, stride=2, padding=1, name="k3s2p1"),
            S(x, 3, stride=2, padding=1, count_include_pad=False, name="exclude-pad"),
            S(x, 3, stride=2, padding=1, ceil_mode=True, name="ceil-pad"),
            S(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False, name="ceil-exclude-pad"),
            S(x, 2, stride=3, ceil_mode=True, name="stride>kernel-ceil"),
            S(x, (3,) + (2,) * (nd - 1), stride=(1,) + (2,) * (nd - 1), padding=(1,) + (0,) * (nd - 1),
              name="tuple-args"),
            S(x2, 2, stride=1, name="unbatched"),
            S(m((0, 3) + x.data.shape[2:]), 2, name="empty-batch"),
            S(m(x.data.shape, "transposed"), 3, stride=2, name="non-contiguous"),
        ]
        if nd > 1:
            out += [S(x, 2, divisor_override=3, name="divisor"),
                    S(x, 3, stride=2, padding=1, ceil_mode=True, divisor_override=-2, name="divisor-ceil"),
                    S(x, 2, divisor_override=0, raises=RuntimeError, name="divisor0")]
        if dtype in FLOATS:
            out.append(S(T(make((2, 3) + x.data.shape[2:], dtype, m.rng, special=True)), 2, name="nan-inf"))
        return out
    return build


# ---- adaptive pooling ----------------------------------------------------------------------------
def _adaptive(nd: int, is_max: bool):
    def build(m, dtype):
        ri = {"return_indices": True} if is_max else {}
        if nd == 1:
            x, x2 = m((2, 3, 10)), m((3, 7))
            sizes = [3, 1, 10, 5, 13, (4,)]
        elif nd == 2:
            x, x2 = m((2, 3, 7, 6)), m((3, 5, 8))
            sizes = [(3, 4), 1, (7, 6), (2, 3), 5, (None, 4), (9, 10), (0, 2)]
        else:
            x, x2 = m((1, 2, 5, 4, 6)), m((2, 4, 3, 5))
            sizes = [(2, 3, 4), 1, (5, 2, 3), (None, 3, None), (6, 5, 7)]
        out = [S(x, o, **ri, name=f"out{o}") for o in sizes]
        out += [
            S(x2, 3, **ri, name="unbatched"),
            S(m((0, 3) + x.data.shape[2:]), 2, **ri, name="empty-batch"),
            S(m(x.data.shape, "transposed"), 3, **ri, name="non-contiguous"),
            S(m((2, 3) + (0,) + x.data.shape[3:]), 2, raises=RuntimeError, name="empty-spatial"),
            S(x, -1, raises=RuntimeError, name="negative-size"),
            S(x, (2,) * (nd + 1), raises=RuntimeError, name="size-length"),
        ]
        if dtype in FLOATS:
            out.append(S(T(make((2, 3) + x.data.shape[2:], dtype, m.rng, special=True)), 3, **ri, name="nan-inf"))
        if is_max:
            out.append(S(m.ties((2, 3) + x.data.shape[2:]), 3, **ri, name="ties"))
            out.append(S(x, 3, name="values-only"))
        return out
    return build


def _adaptive_errors(nd: int, name: str):
    def build(m):
        return [S(m((1, 2) + (4,) * nd), 2, raises=NotImplementedError, name="non-float")]
    return build


# ---- lp_pool and max_unpool ----------------------------------------------------------------------
def _lp_pool(nd: int):
    def build(m, dtype):
        shape = {1: (2, 3, 9), 2: (2, 3, 7, 6), 3: (1, 2, 5, 4, 6)}[nd]
        x = m(shape, low=0.1, high=2.0)
        return [
            S(x, 2, 2, name="p2"),
            S(x, 1, 3, stride=2, name="p1"),
            S(x, 3, 2, stride=2, ceil_mode=True, name="p3-ceil"),
            S(m(shape), 2, 2 if nd == 1 else (2,) + (1,) * (nd - 1), name="p2-signed"),
            S(x, INF, 2, name="p-inf"),
            S(m(shape, "transposed", low=0.1, high=2.0), 2, 2, name="non-contiguous"),
        ]
    return build


def _unpool_fn(nd: int):
    def call(lib, x, k, output_size=None, **kw):
        F = lib.nn.functional
        v, i = getattr(F, f"max_pool{nd}d")(x, k, return_indices=True, **kw)
        return getattr(F, f"max_unpool{nd}d")(v, i, k, output_size=output_size, **kw)
    return call


def _unpool(nd: int):
    def build(m, dtype):
        shape = {1: (2, 3, 9), 2: (2, 3, 7, 6), 3: (1, 2, 5, 4, 6)}[nd]
        x = m(shape)
        return [
            S(x, 2, name="k2"),
            S(x, 3, stride=2, padding=1, output_size=tuple(shape[2:]), name="k3s2p1"),
            S(x, 2, output_size=tuple(shape[2:]), name="output-size"),
            S(x, 2, output_size=tuple(shape), name="output-size-full"),
            S(m(shape[1:]), 2, name="unbatched"),
            S(x, 2, output_size=tuple(n + 3 for n in shape[2:]), raises=ValueError, name="bad-output-size"),
        ]
    return build


def _conv_op(name, build, nd, transposed=False):
    errs = (_convt_errors if transposed else _conv_errors)(nd)
    return OpInfo(name, fn(name), gen(lambda m, d: build(m, d) + errs(m), only_errors=("bool",),
                                      errors=lambda m: [S(T(np.ones((1, 2) + (4,) * nd, bool)),
                                                          T(np.ones((2, 2) + (2,) * nd, bool)),
                                                          raises=NotImplementedError, name="bool")]),
                  dtypes=("bool",) + F_INT, tol=CONV_TOL)


OPS = [
    _conv_op("conv1d", _conv1d, 1),
    _conv_op("conv2d", _conv2d, 2),
    _conv_op("conv3d", _conv3d, 3),
    _conv_op("conv_transpose1d", _convt1d, 1, transposed=True),
    _conv_op("conv_transpose2d", _convt2d, 2, transposed=True),
    _conv_op("conv_transpose3d", _convt3d, 3, transposed=True),
    # full names: Tensor.unfold (a movement op) is a different op
    OpInfo("nn.functional.unfold", fn("unfold"), gen(lambda m, d: _unfold(m, d)), dtypes=("bool",) + FLOATS),
    OpInfo("nn.functional.fold", fn("fold"), gen(lambda m, d: _fold(m, d)), dtypes=FLOATS, tol=POOL_TOL),
    *[OpInfo(f"max_pool{nd}d", fn(f"max_pool{nd}d"),
             gen(lambda m, d, nd=nd: _max_pool(nd)(m, d) + _pool_errors(nd)(m), only_errors=("bool",),
                 errors=_bool_pool_errors(nd)),
             dtypes=("bool",) + F_INT) for nd in (1, 2, 3)],
    *[OpInfo(f"avg_pool{nd}d", fn(f"avg_pool{nd}d"),
             gen(lambda m, d, nd=nd: _avg_pool(nd)(m, d) + _pool_errors(nd, avg=True)(m), only_errors=("bool",),
                 errors=_bool_pool_errors(nd)),
             # PyTorch's CPU avg_pool3d has no float16/bfloat16 kernel
             dtypes=("bool",) + F_INT if nd < 3 else ("bool", "float32", "float64", "int64"), tol=POOL_TOL)
      for nd in (1, 2, 3)],
    *[OpInfo(f"adaptive_avg_pool{nd}d", fn(f"adaptive_avg_pool{nd}d"),
             gen(_adaptive(nd, False), only_errors=("int64",), errors=_adaptive_errors(nd, "avg")),
             dtypes=("int64",) + FLOATS, tol=POOL_TOL) for nd in (1, 2, 3)],
    *[OpInfo(f"adaptive_max_pool{nd}d", fn(f"adaptive_max_pool{nd}d"),
             gen(_adaptive(nd, True), only_errors=("int64",), errors=_adaptive_errors(nd, "max")),
             dtypes=("int64",) + FLOATS) for nd in (1, 2, 3)],
    *[OpInfo(f"lp_pool{nd}d", fn(f"lp_pool{nd}d"), gen(_lp_pool(nd)), tol=POOL_TOL) for nd in (1, 2, 3)],
    *[OpInfo(f"max_unpool{nd}d", _unpool_fn(nd), gen(_unpool(nd))) for nd in (1, 2, 3)],
]
