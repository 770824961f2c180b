"""Registry entries: movement ops (views, reshapes, joins, splits, padding, grids).

Every op runs the same lambda on ember and torch. Samples cover 0-d, empty, size-1 dims,
non-contiguous inputs (transposed / strided / expanded views) and the errors PyTorch raises.
"""

from __future__ import annotations

import numpy as np

from .core import ALL, OpInfo, Sample, T, make

INT_BOOL_F32 = ("bool", "int64", "float32")
FEW = ("bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64")


def S(*args, name: str = "", raises=None, **kwargs) -> Sample:
    return Sample(args, kwargs, name, raises)


def gen(build):
    """Turn ``build(m)`` (m(shape, layout) makes a T of the sample dtype) into a sample generator."""
    def samples(dtype, rng):
        def m(shape, layout="contiguous", low=-3.0, high=3.0, special=False):
            return T(make(shape, dtype, rng, low, high, special), layout)
        for i, s in enumerate(build(m)):
            s.name = s.name or f"#{i}"
            yield s
    return samples


def idx(values) -> T:
    """An int64 tensor argument (indices, repeats)."""
    return T(np.asarray(values, dtype=np.int64))


# ---- view / reshape family -------------------------------------------------------------------
def _view_samples(m):
    return [
        S(m(()), 1), S(m(()), ()), S(m(()), -1), S(m((1,)), ()),
        S(m((0,)), 0, 3), S(m((0, 4)), -1), S(m((0, 4)), 2, 0, 5),
        S(m((3, 4)), 4, 3), S(m((3, 4)), -1), S(m((3, 4)), 2, -1, 2), S(m((3, 4)), (12,)),
        S(m((3, 4)), [2, 6]), S(m((2, 1, 3)), 6), S(m((2, 1, 3)), 1, 6, 1),
        S(m((3, 4), "strided"), 3, 2, 2, name="strided-split"), S(m((3, 4), "strided"), 12, name="strided-merge"),
        S(m((4, 3), "transposed"), 2, 2, 3, name="transposed-split"),
        S(m((4, 3), "transposed"), 4, 3, 1, name="transposed-unsqueeze"),
        S(m((3, 4), "expanded"), 3, 2, 2, name="expanded-split"),
        S(m((3, 4)), 5, raises=RuntimeError, name="bad-numel"),
        S(m((3, 4)), -1, -1, raises=RuntimeError, name="two-infer"),
        S(m((0,)), -1, 0, raises=RuntimeError, name="ambiguous-infer"),
        S(m((3, 4)), 3, -2, raises=RuntimeError, name="negative-size"),
    ]


def _view_errors(m):
    return [
        S(m((4, 3), "transposed"), 12, raises=RuntimeError, name="transposed-merge"),
        S(m((3, 4), "expanded"), 12, raises=RuntimeError, name="expanded-merge"),
    ]


def _reshape_copies(m):
    return [
        S(m((3, 4), "strided"), 12), S(m((4, 3), "transposed"), -1), S(m((3, 4), "expanded"), 6, 2),
        S(m((2, 3, 4), "transposed"), 4, 6),
    ]


def _flatten_samples(m):
    return [
        S(m(())), S(m((0,))), S(m((5,))), S(m((2, 3, 4))), S(m((2, 3, 4)), 1), S(m((2, 3, 4)), 0, 1),
        S(m((2, 3, 4)), -2, -1), S(m((2, 0, 4)), 1), S(m((2, 3, 4)), 1, 1),
        S(m((4, 3), "transposed")), S(m((3, 4), "strided"), 0, 1), S(m(()), 0, -1),
        S(m((2, 3, 4)), 2, 1, raises=RuntimeError, name="start-after-end"),
        S(m((2, 3)), 0, 2, raises=IndexError, name="dim-range"),
    ]


def _unflatten_samples(m):
    return [
        S(m((2, 12)), 1, (3, 4)), S(m((2, 12)), -1, (-1, 2)), S(m((2, 12)), 0, (2, 1)),
        S(m((0,)), 0, (0, 5)), S(m((0,)), 0, (-1, 5)), S(m((6,)), 0, (6,)),
        S(m((4, 3), "transposed"), 0, (2, 2)),
        S(m((2, 12)), 1, (5, 2), raises=RuntimeError, name="bad-sizes"),
        S(m((2, 12)), 2, (1, 1), raises=IndexError, name="dim-range"),
    ]


def _squeeze_samples(m):
    return [
        S(m(())), S(m(()), 0), S(m(()), (0,)), S(m((1,))), S(m((1,)), 0), S(m((2, 1, 3))),
        S(m((2, 1, 3)), 1), S(m((2, 1, 3)), 0), S(m((1, 2, 1)), (0, 2)), S(m((1, 2, 1)), -1),
        S(m((0, 1))), S(m((1, 1))), S(m((1, 4), "expanded")), S(m((3, 1), "transposed")),
        S(m((1, 2, 1)), 3, raises=IndexError, name="dim-range"),
        S(m((1, 2, 1)), (0, 0), raises=RuntimeError, name="dup-dims"),
    ]


def _unsqueeze_samples(m):
    return [
        S(m(()), 0), S(m(()), -1), S(m((0,)), 1), S(m((3,)), 0), S(m((3,)), 1), S(m((2, 3)), -1),
        S(m((2, 3)), 1), S(m((2, 3)), -3), S(m((4, 3), "transposed"), 1), S(m((3, 4), "strided"), 2),
        S(m((2, 3)), 3, raises=IndexError, name="dim-range"),
    ]


def _permute_samples(m):
    return [
        S(m(()), ()), S(m((5,)), (0,)), S(m((3, 4)), (1, 0)), S(m((2, 3, 4)), (2, 0, 1)),
        S(m((2, 3, 4)), (-1, 0, -2)), S(m((2, 0, 4)), (1, 2, 0)), S(m((4, 3), "transposed"), (1, 0)),
        S(m((2, 3, 4)), (0, 1), raises=RuntimeError, name="wrong-len"),
        S(m((2, 3)), (0, 0), raises=RuntimeError, name="dup"),
        S(m((2, 3)), (0, 2), raises=IndexError, name="dim-range"),
    ]


def _transpose_samples(m):
    return [
        S(m(()), 0, -1), S(m((5,)), 0, 0), S(m((3, 4)), 0, 1), S(m((2, 3, 4)), 0, 2),
        S(m((2, 3, 4)), -1, 1), S(m((0, 3)), 0, 1), S(m((4, 3), "transposed"), 0, 1),
        S(m((3, 4), "strided"), 1, 0), S(m((3, 4)), 0, 2, raises=IndexError, name="dim-range"),
    ]


def _t_samples(m):
    return [S(m(())), S(m((5,))), S(m((3, 4))), S(m((0, 2))), S(m((4, 3), "transposed")),
            S(m((2, 3, 4)), raises=RuntimeError, name="3d")]


def _mt_samples(m):
    return [S(m((3, 4))), S(m((2, 3, 4))), S(m((2, 0, 4))), S(m((4, 3), "transposed")),
            S(m((5,)), raises=RuntimeError, name="1d")]


def _expand_samples(m):
    return [
        S(m((3, 1)), 3, 4), S(m((3, 1)), -1, 4), S(m((3, 1)), 2, 3, 4), S(m((3, 1)), (2, 3, 1)),
        S(m((1,)), 0), S(m(()), 2, 3), S(m(()), ()), S(m((2, 3)), 2, 3), S(m((2, 1, 3)), 2, 5, 3),
        S(m((0, 1)), 0, 4), S(m((3, 1), "transposed"), 2, 3, 5), S(m((1, 4), "expanded"), 2, 3, 4),
        S(m((3,)), 4, raises=RuntimeError, name="bad-size"),
        S(m((3, 1)), 3, raises=RuntimeError, name="fewer-dims"),
        S(m((3,)), -1, 3, raises=RuntimeError, name="leading-minus-one"),
    ]


def _expand_as_samples(m):
    return [S(m((3, 1)), m((3, 4))), S(m(()), m((2, 2))), S(m((1, 4)), m((0, 4))),
            S(m((3, 1)), m((2, 3, 5), "transposed")), S(m((3,)), m((4,)), raises=RuntimeError, name="bad")]


def _broadcast_to_samples(m):
    return [S(m((3, 1)), (3, 4)), S(m(()), (2, 2)), S(m((1, 4)), (0, 4)), S(m((3, 1)), (2, -1, 4)),
            S(m((4, 1), "transposed"), (2, -1, 3)), S(m((3,)), (4,), raises=RuntimeError, name="bad")]


# ---- repetition -------------------------------------------------------------------------------
def _repeat_samples(m):
    return [
        S(m((2, 3)), 2, 2), S(m((2, 3)), 1, 1, 2), S(m(()), 3), S(m(()), ()), S(m((2, 3)), 0, 2),
        S(m((0,)), 3), S(m((3,)), (2, 2)), S(m((4, 3), "transposed"), 2, 1), S(m((3, 4), "expanded"), 1, 2),
        S(m((2, 3)), 2, raises=RuntimeError, name="fewer"),
        S(m((2, 3)), -1, 2, raises=RuntimeError, name="negative"),
    ]


def _tile_samples(m):
    return [
        S(m((2, 3)), (2,)), S(m((2, 3)), (2, 2)), S(m((2, 3)), (2, 1, 2)), S(m(()), ()), S(m(()), (3,)),
        S(m((0, 2)), (2, 2)), S(m((3,)), (0,)), S(m((4, 3), "transposed"), (1, 2)),
        S(m((2,)), (-1,), raises=RuntimeError, name="negative"),
    ]


def _repeat_interleave_samples(m):
    return [
        S(m((3,)), 2), S(m((2, 3)), 2), S(m((2, 3)), 2, dim=1), S(m((2, 3)), 0, dim=0),
        S(m(()), 3), S(m((0, 2)), 3, dim=0), S(m((2, 3)), 2, dim=-1, output_size=6),
        S(m((3,)), idx([1, 0, 2])), S(m((2, 3)), idx([2, 1]), dim=0), S(m((2, 3)), idx([0, 3, 1]), dim=1),
        S(m((2, 3)), idx([2]), dim=1), S(m((2, 3)), idx(2), dim=1), S(m((2, 3)), idx([1, 2, 0, 1, 1, 1])),
        S(m((2, 3)), idx([1, 2, 0]), dim=1, output_size=3), S(m((4, 3), "transposed"), idx([1, 2, 0]), dim=1),
        S(m((3, 4), "strided"), 2, dim=0),
        S(m((3,)), -1, raises=RuntimeError, name="negative"),
        S(m((3,)), idx([1, -1, 2]), raises=RuntimeError, name="negative-tensor"),
        S(m((3,)), idx([1, 2]), raises=RuntimeError, name="bad-len"),
        S(m((3,)), idx([[1, 2, 3]]), raises=RuntimeError, name="2d-repeats"),
        S(m((3,)), idx([1, 1, 2]), output_size=5, raises=RuntimeError, name="bad-output-size"),
    ]


def _repeat_interleave_only(dtype, rng):
    for reps in ([1, 0, 2], [], [3], [0, 0]):
        yield S(idx(reps), name=f"{reps}")
    yield S(idx(2), raises=RuntimeError, name="0d")


# ---- reversal, rolling, narrowing --------------------------------------------------------------
def _flip_samples(m):
    return [
        S(m(()), ()), S(m((5,)), (0,)), S(m((3, 4)), (0, 1)), S(m((2, 3, 4)), (-1,)), S(m((2, 3, 4)), [0, 2]),
        S(m((0, 3)), (0,)), S(m((4, 3), "transposed"), (0,)), S(m((3, 4), "expanded"), (0, 1)),
        S(m((3, 4)), (), name="no-dims"),
        S(m((3, 4)), (0, 0), raises=RuntimeError, name="dup"),
        S(m((3, 4)), (2,), raises=IndexError, name="dim-range"),
    ]


def _roll_samples(m):
    return [
        S(m((5,)), 2), S(m((5,)), -7), S(m((3, 4)), 1), S(m((3, 4)), 1, 0), S(m((3, 4)), (1, -2), (0, 1)),
        S(m((3, 4)), (5, 1), (1, 1)), S(m(()), 1), S(m((0, 3)), 1, 0), S(m((0, 3)), 2),
        S(m((4, 3), "transposed"), 1, 1), S(m((3, 4), "expanded"), 1, 1),
        S(m((3,)), (1, 2), raises=RuntimeError, name="multi-shift-no-dims"),
        S(m((3, 4)), (1, 2), (0,), raises=RuntimeError, name="misaligned"),
        S(m((3, 4)), 1, 2, raises=IndexError, name="dim-range"),
        S(m(()), 1, 0, raises=IndexError, name="0d-dim"),
    ]


def _narrow_samples(m):
    return [
        S(m((5,)), 0, 1, 3), S(m((5,)), 0, -2, 2), S(m((5,)), 0, 5, 0), S(m((3, 4)), 1, 0, 2),
        S(m((3, 4)), -1, 2, 2), S(m((3, 4)), 0, idx(1), 2), S(m((4, 3), "transposed"), 0, 1, 2),
        S(m((3, 4), "strided"), 1, 1, 3),
        S(m((5,)), 0, 3, 4, raises=RuntimeError, name="too-long"),
        S(m((5,)), 0, 6, 0, raises=IndexError, name="start-range"),
        S(m((5,)), 0, 1, -1, raises=RuntimeError, name="negative-length"),
        S(m(()), 0, 0, 1, raises=RuntimeError, name="0d"),
        S(m((5,)), 1, 0, 1, raises=IndexError, name="dim-range"),
    ]


# ---- splitting --------------------------------------------------------------------------------
def _chunk_samples(m):
    return [
        S(m((5,)), 2), S(m((5,)), 3), S(m((6,)), 4), S(m((5,)), 9), S(m((0,)), 3), S(m((3, 4)), 2, 1),
        S(m((3, 4)), 2, -1), S(m((4, 3), "transposed"), 3, 0),
        S(m((3,)), 0, raises=RuntimeError, name="zero-chunks"),
        S(m(()), 1, raises=RuntimeError, name="0d"),
    ]


def _split_samples(m):
    return [
        S(m((5,)), 2), S(m((5,)), 5), S(m((5,)), 7), S(m((0,)), 2), S(m((0,)), 0), S(m((3, 4)), 3, 1),
        S(m((5,)), [2, 3]), S(m((5,)), [0, 5, 0]), S(m((3, 4)), [1, 1, 2], -1), S(m((3, 4)), (3,)),
        S(m((4, 3), "transposed"), [1, 3]),
        S(m((3,)), 0, raises=RuntimeError, name="zero-size"),
        S(m((3,)), [1, 1], raises=RuntimeError, name="bad-sum"),
        S(m((3,)), [4, -1], raises=RuntimeError, name="negative-size"),
        S(m(()), 1, raises=RuntimeError, name="0d"),
    ]


def _tensor_split_samples(m):
    return [S(m((7,)), 3), S(m((7,)), [1, 5]), S(m((3, 4)), 3, 1), S(m((7,)), [6, 2]), S(m((7,)), [9]),
            S(m((0,)), 2)]


def _unbind_samples(m):
    return [S(m((3,))), S(m((3, 4))), S(m((3, 4)), 1), S(m((2, 3, 4)), -1), S(m((0, 3))), S(m((3, 0)), 1),
            S(m((4, 3), "transposed"), 0), S(m(()), raises=IndexError, name="0d"),
            S(m((2, 3)), 2, raises=IndexError, name="dim-range")]


# ---- joining ----------------------------------------------------------------------------------
def _cat_samples(m):
    return [
        S([m((2, 3)), m((4, 3))]), S([m((2, 3)), m((2, 1))], 1), S([m((2, 3)), m((2, 3)), m((2, 3))], -1),
        S([m((3,))]), S([m((0,)), m((3,))]), S([m((2, 3)), m((0,))], 1), S([m((0, 3)), m((2, 3))]),
        S([m((0,)), m((0,))]), S([m((3, 4), "transposed"), m((2, 4), "strided")]),
        S([m((3, 1), "expanded"), m((1, 1))]), S((m((1, 2)), m((1, 2))), dim=1),
        S([m((2, 3)), m((2, 4))], raises=RuntimeError, name="shape-mismatch"),
        S([m((2, 3)), m((3,))], raises=RuntimeError, name="ndim-mismatch"),
        S([m(()), m(())], raises=RuntimeError, name="0d"),
        S([m((2, 3)), m((2, 3))], 2, raises=IndexError, name="dim-range"),
        S(m((2, 3)), raises=TypeError, name="tensor-not-list"),
        S([], raises=ValueError, name="empty-list"),
    ]


def _cat_promote(dtype, rng):
    others = ("bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64")
    for o in others:
        yield S([T(make((2, 3), dtype, rng)), T(make((1, 3), o, rng))], name=o)
    yield S([T(make((0,), dtype, rng)), T(make((0,), "float64", rng))], name="empties")


def _stack_samples(m):
    return [
        S([m((2, 3)), m((2, 3))]), S([m((2, 3)), m((2, 3))], 1), S([m((2, 3)), m((2, 3))], -1),
        S([m(()), m(()), m(())]), S([m((0, 2))]), S([m((4, 3), "transposed"), m((4, 3), "strided")], 2),
        S((m((3,)), m((3,))), dim=0),
        S([m((2,)), m((3,))], raises=RuntimeError, name="shape-mismatch"),
        S([], raises=RuntimeError, name="empty"),
        S([m((2,)), m((2,))], 3, raises=IndexError, name="dim-range"),
    ]


def _hvd_samples(m):
    return [
        S([m(()), m(())]), S([m((3,)), m((2,))]), S([m((2, 3)), m((2, 1))]), S([m((2, 3, 4)), m((2, 1, 4))]),
        S([m((4, 3), "transposed"), m((4, 3))]),
    ]


def _vstack_samples(m):
    return [S([m(()), m(())]), S([m((3,)), m((3,))]), S([m((2, 3)), m((1, 3))]), S([m((2, 3, 4)), m((1, 3, 4))]),
            S([m((3,)), m((2,))], raises=RuntimeError, name="mismatch")]


def _dstack_samples(m):
    return [S([m(()), m(())]), S([m((3,)), m((3,))]), S([m((2, 3)), m((2, 3))]), S([m((2, 3, 1)), m((2, 3, 2))])]


def _column_stack_samples(m):
    return [S([m(()), m((1,))]), S([m((3,)), m((3,))]), S([m((3,)), m((3, 2))]), S([m((2, 3)), m((2, 1))])]


def _atleast_samples(m):
    return [S(m(())), S(m((3,))), S(m((2, 3))), S(m((2, 3, 4))), S(m((0,))), S(m((4, 3), "transposed")),
            S(m(()), m((2,)), name="two-args"), S([m(()), m((2, 3))], name="list")]


def _movedim_samples(m):
    return [
        S(m((2, 3, 4)), 0, 2), S(m((2, 3, 4)), -1, 0), S(m((2, 3, 4)), (0, 1), (2, 0)), S(m((2, 3, 4)), [2], [1]),
        S(m(()), 0, 0), S(m((2, 3, 4)), (), ()), S(m((4, 3), "transposed"), 0, 1),
        S(m((2, 3)), (0, 0), (0, 1), raises=RuntimeError, name="dup"),
        S(m((2, 3)), (0, 1), (0,), raises=RuntimeError, name="len"),
        S(m((2, 3)), 2, 0, raises=IndexError, name="dim-range"),
    ]


# ---- diagonals and triangles -------------------------------------------------------------------
def _diagonal_samples(m):
    return [
        S(m((3, 4))), S(m((3, 4)), 1), S(m((3, 4)), -2), S(m((3, 4)), 5), S(m((3, 4)), -4),
        S(m((2, 3, 4)), 0, 0, 2), S(m((2, 3, 4)), 1, -1, -2), S(m((0, 3))), S(m((4, 3), "transposed"), 1),
        S(m((3, 4), "strided")), S(m((3, 4), "expanded"), -1), S(m((3, 4)), offset=1, dim1=1, dim2=0),
        S(m((3, 4)), 0, 0, 0, raises=RuntimeError, name="same-dims"),
        S(m((3,)), raises=IndexError, name="1d"),
    ]


def _diag_samples(m):
    return [
        S(m((3,))), S(m((3,)), 1), S(m((3,)), -2), S(m((0,))), S(m((3, 4))), S(m((3, 4)), 2), S(m((3, 4)), -1),
        S(m((3, 4)), 7), S(m((4, 3), "transposed"), 1), S(m((3, 4), "strided")),
        S(m(()), raises=RuntimeError, name="0d"), S(m((2, 2, 2)), raises=RuntimeError, name="3d"),
    ]


def _diag_embed_samples(m):
    return [S(m((3,))), S(m((2, 3))), S(m((2, 3)), 1), S(m((2, 3)), -1, 0, 2), S(m((0,)))]


def _tri_samples(m):
    return [
        S(m((3, 4))), S(m((3, 4)), 1), S(m((3, 4)), -1), S(m((3, 4)), 10), S(m((3, 4)), -10),
        S(m((2, 3, 4))), S(m((2, 3, 4)), -2), S(m((0, 3))), S(m((4, 3), "transposed"), 1),
        S(m((3, 4), "strided")), S(m((3, 4), "expanded")), S(m((4, 4), special=True)),
        S(m((3,)), raises=RuntimeError, name="1d"),
    ]


def _contiguous_samples(m):
    return [S(m(())), S(m((0, 3))), S(m((3, 4))), S(m((4, 3), "transposed")), S(m((3, 4), "strided")),
            S(m((3, 4), "expanded")), S(m((2, 3, 4), "transposed"))]


def _contiguous_fn(lib, x):
    y = x.contiguous()
    return y, y.is_contiguous(), x.is_contiguous(), y.stride()


# ---- padding ----------------------------------------------------------------------------------
def _pad_constant(m):
    return [
        S(m((3,)), (1, 1)), S(m((3,)), (2, 0)), S(m((2, 3)), (1, 2, 1, 0)), S(m((1, 2, 3)), (1, 1, 1, 1, 1, 1)),
        S(m((2, 3)), (1, 1), value=2.0), S(m((2, 3)), [0, 0]), S(m(()), ()), S(m((0, 3)), (1, 1, 1, 1)),
        S(m((2, 4)), (-1, 1, 0, -1), name="negative"), S(m((3,)), (-2, -1), name="crop-to-empty"),
        S(m((2, 4)), (-1, -1, 1, 1), value=1.0), S(m((4, 3), "transposed"), (1, 0, 0, 2)),
        S(m((3, 4), "expanded"), (1, 1)),
        S(m((3,)), (-2, -2), raises=RuntimeError, name="crop-too-far"),
        S(m((2, 3)), (1,), raises=RuntimeError, name="odd-length"),
        S(m((2, 3)), (1, 1, 1, 1, 1, 1), raises=RuntimeError, name="too-long"),
        S(m(()), (1, 1), raises=RuntimeError, name="0d"),
        S(m((3,)), (1.0, 1), raises=TypeError, name="float-pads"),
    ]


def _pad_reflect(m):
    return [
        S(m((2, 4)), (1, 1)), S(m((2, 4)), (3, 0)), S(m((1, 2, 4)), (1, 2, 1, 0)), S(m((1, 1, 3, 4)), (1, 2, 1, 0)),
        S(m((1, 2, 2, 3, 4)), (1, 1, 1, 1, 1, 1)), S(m((1, 2, 4)), (-1, 1)), S(m((1, 2, 4)), (-1, -1)),
        S(m((1, 2, 4)), (2, -3)), S(m((1, 2, 4)), (0, 0, -1, 1)), S(m((0, 2, 3)), (1, 0)),
        S(m((3, 4), "transposed"), (1, 2)), S(m((3, 4), "strided"), (2, 1)),
        S(m((1, 2, 4)), (4, 0), raises=RuntimeError, name="too-wide"),
        S(m((1, 2, 4)), (0, 0, 2, 0), raises=RuntimeError, name="too-wide-dim1"),
        S(m((1, 2, 4)), (-4, 0), raises=RuntimeError, name="crop-all"),
        S(m((1, 2, 0)), (1, 0), raises=RuntimeError, name="empty-dim"),
    ]


def _pad_replicate(m):
    return [
        S(m((2, 4)), (1, 1)), S(m((2, 4)), (5, 0)), S(m((1, 2, 4)), (1, 2, 3, 0)),
        S(m((1, 1, 2, 3)), (1, 1, 1, 1, 1, 1)),
        S(m((1, 2, 4)), (-1, 1)), S(m((1, 2, 4)), (2, -3)), S(m((1, 2, 4)), (0, 0, -1, 1)), S(m((0, 2, 3)), (1, 0)),
        S(m((3, 4), "transposed"), (1, 2)),
        S(m((1, 2, 4)), (-4, 0), raises=RuntimeError, name="crop-all"),
        S(m((1, 0)), (1, 0), raises=RuntimeError, name="empty-dim"),
    ]


def _pad_circular(m):
    return [
        S(m((2, 4)), (1, 1)), S(m((2, 4)), (4, 0)), S(m((1, 2, 4)), (1, 2, 1, 0)),
        S(m((1, 1, 2, 3)), (1, 1, 1, 1, 1, 1)),
        S(m((1, 2, 4)), (-1, 1)), S(m((1, 2, 4)), (-1, -1)), S(m((1, 2, 4)), (0, 0, 2, 0)), S(m((1, 2, 4)), (-4, 0)),
        S(m((0, 2, 3)), (1, 0)), S(m((3, 4), "transposed"), (1, 2)),
        S(m((1, 2, 4)), (0, 5), raises=RuntimeError, name="wraps-twice"),
    ]


def _pad_fn(mode):
    def fn(lib, x, pad, **kw):
        return lib.nn.functional.pad(x, pad, mode=mode, **kw)
    return fn


def _pad_value_dtypes(dtype, rng):
    x = T(make((2, 3), dtype, rng))
    for v in (1, -2.7, 0.5, True):
        if dtype == "uint8" and v == -2.7:
            continue
        yield S(x, (1, 1), value=v, name=f"value={v!r}")
    if dtype not in ("bool",) and not dtype.startswith("float") and dtype != "bfloat16":
        yield S(x, (1, 1), value=float("inf"), raises=RuntimeError, name="inf-into-int")
    if dtype == "uint8":
        yield S(x, (1, 1), value=-1, raises=RuntimeError, name="negative-into-uint8")


# ---- grids ------------------------------------------------------------------------------------
def _meshgrid_samples(m):
    return [
        S(m((2,)), m((3,)), indexing="ij"), S(m((2,)), m((3,)), indexing="xy"),
        S(m((2,)), m((3,)), m((4,)), indexing="ij"), S(m((2,)), m((3,)), m((4,)), indexing="xy"),
        S(m((2,)), indexing="xy"), S(m(()), m((3,)), indexing="ij"), S(m((0,)), m((3,)), indexing="xy"),
        S([m((2,)), m((3,))], indexing="xy", name="list"), S(m((4,)), m((1,)), indexing="ij"),
        S(m((2, 2)), m((3,)), indexing="ij", raises=RuntimeError, name="2d"),
        S(m((2,)), m((3,)), indexing="yx", raises=RuntimeError, name="bad-indexing"),
    ]


def _meshgrid_mixed(dtype, rng):
    yield S(T(make((2,), dtype, rng)), T(make((3,), "float64" if dtype != "float64" else "int64", rng)),
            indexing="ij", raises=RuntimeError, name="mixed-dtypes")


def _cartesian_samples(m):
    return [S(m((3,))), S(m((2,)), m((3,))), S(m((2,)), m((3,)), m((2,))), S(m((0,)), m((3,))),
            S(m(()), m((3,)), raises=RuntimeError, name="0d"), S(m((2, 2)), m((3,)), raises=RuntimeError, name="2d")]


def _rot90_samples(m):
    return [S(m((3, 4))), S(m((3, 4)), 2), S(m((3, 4)), 3), S(m((3, 4)), -1), S(m((3, 4)), 4),
            S(m((2, 3, 4)), 1, (1, 2)), S(m((4, 3), "transposed"), 1, [1, 0])]


def _select_samples(m):
    return [S(m((3, 4)), 0, 1), S(m((3, 4)), 1, -1), S(m((2, 3, 4)), 2, 0), S(m((4, 3), "transposed"), 1, 2),
            S(m((3, 4)), 0, 3, raises=IndexError, name="index-range"),
            S(m((3, 4)), 2, 0, raises=IndexError, name="dim-range")]


def _swap_samples(m):
    return [S(m((2, 3, 4)), 0, 2), S(m((3, 4)), -1, 0)]


def _broadcast_tensors_samples(m):
    return [S(m((3, 1)), m((1, 4))), S(m(()), m((2, 3))), S(m((0, 1)), m((3,))),
            S(m((3,)), m((4,)), raises=RuntimeError, name="bad")]


def _as_strided_samples(m):
    return [S(m((3, 4)), (2, 2), (1, 2)), S(m((3, 4)), (3, 3), (4, 1), 1), S(m((12,)), (4, 3), (1, 4)),
            S(m((3, 4)), (2, 2), (0, 1))]


def _fn(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _meth(name):
    return lambda lib, x, *a, **k: getattr(x, name)(*a, **k)


OPS = [
    OpInfo("view", lambda lib, x, *s: x.view(*s), gen(_view_samples), ALL),
    OpInfo("view_incompatible", lambda lib, x, *s: x.view(*s), gen(_view_errors), INT_BOOL_F32),
    OpInfo("view_dtype", lambda lib, x: x.view(lib.int32 if x.dtype == lib.float32 else lib.float32),
           gen(lambda m: [S(m((3, 4))), S(m(())), S(m((0, 2))), S(m((4, 3), "transposed"))]),
           ("float32", "int32")),
    OpInfo("reshape", lambda lib, x, *s: x.reshape(*s), gen(lambda m: _view_samples(m) + _reshape_copies(m)), ALL),
    OpInfo("reshape_fn", lambda lib, x, s: lib.reshape(x, s),
           gen(lambda m: [S(m((3, 4)), (2, 6)), S(m((4, 3), "transposed"), (-1,)), S(m(()), (1, 1))]), FEW),
    OpInfo("view_as", lambda lib, x, y: x.view_as(y), gen(lambda m: [S(m((3, 4)), m((2, 6))), S(m(()), m((1,)))]),
           INT_BOOL_F32),
    OpInfo("reshape_as", lambda lib, x, y: x.reshape_as(y),
           gen(lambda m: [S(m((4, 3), "transposed"), m((2, 6))), S(m(()), m((1,)))]), INT_BOOL_F32),
    OpInfo("flatten", _fn("flatten"), gen(_flatten_samples), ALL),
    OpInfo("unflatten", _fn("unflatten"), gen(_unflatten_samples), FEW),
    OpInfo("squeeze", _fn("squeeze"), gen(_squeeze_samples), ALL),
    OpInfo("unsqueeze", _fn("unsqueeze"), gen(_unsqueeze_samples), ALL),
    OpInfo("permute", _fn("permute"), gen(_permute_samples), ALL),
    OpInfo("permute_method", lambda lib, x, *d: x.permute(*d),
           gen(lambda m: [S(m((2, 3, 4)), 2, 0, 1), S(m((3, 4)), (1, 0)), S(m(()), ()),
                          S(m((4, 3), "transposed"), 1, 0)]),
           INT_BOOL_F32),
    OpInfo("transpose", _fn("transpose"), gen(_transpose_samples), ALL),
    OpInfo("swapaxes", _fn("swapaxes"), gen(_swap_samples), INT_BOOL_F32),
    OpInfo("swapdims", _fn("swapdims"), gen(_swap_samples), INT_BOOL_F32),
    OpInfo("t", _fn("t"), gen(_t_samples), ALL),
    OpInfo("T", lambda lib, x: x.T, gen(lambda m: [S(m((3, 4))), S(m((5,))), S(m((0, 2))), S(m((4, 3), "transposed"))]),
           ALL),
    OpInfo("mT", lambda lib, x: x.mT, gen(_mt_samples), ALL),
    OpInfo("expand", _meth("expand"), gen(_expand_samples), ALL),
    OpInfo("expand_as", _meth("expand_as"), gen(_expand_as_samples), FEW),
    OpInfo("broadcast_to", _fn("broadcast_to"), gen(_broadcast_to_samples), FEW),
    OpInfo("broadcast_tensors", _fn("broadcast_tensors"), gen(_broadcast_tensors_samples), INT_BOOL_F32),
    OpInfo("repeat", _meth("repeat"), gen(_repeat_samples), ALL),
    OpInfo("tile", _fn("tile"), gen(_tile_samples), ALL),
    OpInfo("repeat_interleave", _fn("repeat_interleave"), gen(_repeat_interleave_samples), ALL),
    OpInfo("repeat_interleave_method", lambda lib, x, r, **k: x.repeat_interleave(r, **k),
           gen(lambda m: [S(m((2, 3)), 2, dim=0), S(m((3,)), idx([1, 2, 0]))]), INT_BOOL_F32),
    OpInfo("repeat_interleave_counts", lambda lib, r: lib.repeat_interleave(r), _repeat_interleave_only, ("int64",)),
    OpInfo("flip", _fn("flip"), gen(_flip_samples), ALL),
    OpInfo("flip_method", lambda lib, x, *d: x.flip(*d),
           gen(lambda m: [S(m((3, 4)), 0), S(m((3, 4)), 0, 1), S(m((3, 4)), (1,))]), INT_BOOL_F32),
    OpInfo("fliplr", _fn("fliplr"), gen(lambda m: [S(m((3, 4))), S(m((2, 3, 4))), S(m((3,)), raises=RuntimeError)]),
           INT_BOOL_F32),
    OpInfo("flipud", _fn("flipud"), gen(lambda m: [S(m((3, 4))), S(m((3,))), S(m(()), raises=RuntimeError)]),
           INT_BOOL_F32),
    OpInfo("rot90", _fn("rot90"), gen(_rot90_samples), INT_BOOL_F32),
    OpInfo("roll", _fn("roll"), gen(_roll_samples), ALL),
    OpInfo("narrow", _fn("narrow"), gen(_narrow_samples), ALL),
    OpInfo("select", _fn("select"), gen(_select_samples), INT_BOOL_F32),
    OpInfo("chunk", _fn("chunk"), gen(_chunk_samples), ALL),
    OpInfo("split", _fn("split"), gen(_split_samples), ALL),
    OpInfo("split_method", lambda lib, x, s, *a: x.split(s, *a),
           gen(lambda m: [S(m((5,)), 2), S(m((3, 4)), [1, 3], 1)]), INT_BOOL_F32),
    OpInfo("tensor_split", _fn("tensor_split"), gen(_tensor_split_samples), INT_BOOL_F32),
    OpInfo("unbind", _fn("unbind"), gen(_unbind_samples), ALL),
    OpInfo("cat", _fn("cat"), gen(_cat_samples), ALL),
    OpInfo("cat_promotion", lambda lib, ts: lib.cat(ts), _cat_promote, ALL),
    OpInfo("concat", _fn("concat"), gen(lambda m: [S([m((2, 3)), m((1, 3))]), S([m((2, 1)), m((2, 2))], dim=1)]),
           INT_BOOL_F32),
    OpInfo("concatenate", _fn("concatenate"), gen(lambda m: [S([m((2, 3)), m((1, 3))])]), INT_BOOL_F32),
    OpInfo("stack", _fn("stack"), gen(_stack_samples), ALL),
    OpInfo("hstack", _fn("hstack"), gen(_hvd_samples), FEW),
    OpInfo("vstack", _fn("vstack"), gen(_vstack_samples), FEW),
    OpInfo("row_stack", _fn("row_stack"), gen(lambda m: [S([m((3,)), m((3,))])]), INT_BOOL_F32),
    OpInfo("dstack", _fn("dstack"), gen(_dstack_samples), INT_BOOL_F32),
    OpInfo("column_stack", _fn("column_stack"), gen(_column_stack_samples), INT_BOOL_F32),
    OpInfo("atleast_1d", _fn("atleast_1d"), gen(_atleast_samples), FEW),
    OpInfo("atleast_2d", _fn("atleast_2d"), gen(_atleast_samples), FEW),
    OpInfo("atleast_3d", _fn("atleast_3d"), gen(_atleast_samples), FEW),
    OpInfo("movedim", _fn("movedim"), gen(_movedim_samples), ALL),
    OpInfo("moveaxis", _fn("moveaxis"), gen(lambda m: [S(m((2, 3, 4)), 0, -1)]), INT_BOOL_F32),
    OpInfo("diagonal", _fn("diagonal"), gen(_diagonal_samples), ALL),
    OpInfo("diag", _fn("diag"), gen(_diag_samples), ALL),
    OpInfo("diag_embed", _fn("diag_embed"), gen(_diag_embed_samples), INT_BOOL_F32),
    OpInfo("tril", _fn("tril"), gen(_tri_samples), ALL),
    OpInfo("triu", _fn("triu"), gen(_tri_samples), ALL),
    OpInfo("contiguous", _contiguous_fn, gen(_contiguous_samples), ALL),
    OpInfo("pad_constant", _pad_fn("constant"), gen(_pad_constant), ALL),
    OpInfo("pad_constant_value", _pad_fn("constant"), _pad_value_dtypes, ALL),
    OpInfo("pad_reflect", _pad_fn("reflect"), gen(_pad_reflect), FEW[1:]),
    OpInfo("pad_replicate", _pad_fn("replicate"), gen(_pad_replicate), FEW[1:]),
    OpInfo("pad_circular", _pad_fn("circular"), gen(_pad_circular), FEW),
    OpInfo("meshgrid", _fn("meshgrid"), gen(_meshgrid_samples), FEW),
    OpInfo("meshgrid_mixed", _fn("meshgrid"), _meshgrid_mixed, INT_BOOL_F32),
    OpInfo("cartesian_prod", _fn("cartesian_prod"), gen(_cartesian_samples), FEW),
    OpInfo("as_strided", _fn("as_strided"), gen(_as_strided_samples), INT_BOOL_F32),
]

for _op in OPS:  # errors only, or integer outputs
    if _op.name in ("view_incompatible", "meshgrid_mixed", "repeat_interleave_counts", "view_dtype"):
        _op.differentiable = False
