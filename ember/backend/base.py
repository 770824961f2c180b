"""The backend protocol: what every backend and backend decorator implements.

A backend owns its data. The frontend (``ember.Tensor``) holds opaque *handles* and talks to the
backend through five calls:

* ``run(op, inputs, attrs)`` executes a named op. ``inputs`` is a tuple of handles (elementwise
  ops also accept Python scalars, which are *weak*: they take the dtype of the tensor operand);
  ``attrs`` is a dict of plain Python values (ints, floats, bools, strings, tuples, ember dtypes).
  It returns a handle, or a tuple of handles for multi-output ops.
* ``write(array)`` moves a host numpy array into the backend and returns a handle (the numpy
  backend may share the array's memory, as ``torch.from_numpy`` does).
* ``read(handle)`` moves data to the host and returns a numpy array (a sync point).
* ``strides(handle)`` gives the element strides of the handle's layout (for view decisions and
  ``Tensor.stride()``); lazy backends may answer for the layout they will produce.
* ``shape(handle)``, ``dtype(handle)`` answer metadata (decorators such as Autodiff use them);
  ``storage(handle)`` returns a weak-referenceable object identifying the memory a handle views.
* ``supports(op)`` tells whether the backend implements ``op`` itself. Composite ops (softmax,
  layer_norm, ...) are tried on the backend first and otherwise decomposed by the frontend into
  primitives, so a new backend only needs :data:`PRIMITIVES`.

The frontend validates arguments and computes every result's shape and dtype before calling
``run``, so backends trust their inputs: dims are non-negative and normalised, dtypes already
promoted (binary ops get operands of the computation dtype), index ranges checked where static.
``OPS`` below is the catalogue; each entry gives the inputs and attributes an op takes.
"""

from __future__ import annotations

from typing import Any, Protocol

Handle = Any

# --- the op catalogue -----------------------------------------------------------------------
# Elementwise unary ops: one input, same dtype out unless noted (isnan/isinf/isfinite: bool).
UNARY = (
    "neg", "abs", "sign", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt",
    "rsqrt", "reciprocal", "square", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv", "sigmoid", "floor", "ceil",
    "trunc", "round", "isnan", "isinf", "isfinite", "logical_not", "bitwise_not", "signbit",
    "lgamma", "digamma",
)
# Elementwise binary ops: two inputs of the computation dtype (or a weak Python scalar).
# Comparisons and logical ops return bool.
BINARY = (
    "add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum",
    "fmax", "fmin", "atan2", "hypot", "copysign", "nextafter", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift",
)

OPS: dict[str, str] = {
    # creation
    "full": "() shape, value, dtype -> a new tensor filled with value",
    "empty": "() shape, dtype -> uninitialised memory",
    "arange": "() start, end, step, dtype -> 1-d range (end exclusive)",
    "linspace": "() start, end, steps, dtype",
    "eye": "() n, m, dtype",
    "rand": "() shape, dtype, seed, offset -> uniform [0, 1), counter-based",
    "randn": "() shape, dtype, seed, offset -> standard normal, counter-based",
    "randint": "() shape, low, high, dtype, seed, offset",
    "randperm": "() n, dtype, seed, offset",
    "bernoulli": "(p) seed, offset -> 0/1 of p's dtype",
    "multinomial": "(probs) num_samples, replacement, seed, offset -> int64",
    "poisson": "(rates) seed, offset -> counts in the rates' dtype (a per-op stream)",
    # elementwise
    **{u: "(x) -> elementwise" for u in UNARY},
    **{b: "(x, y) -> elementwise with broadcasting" for b in BINARY},
    "round_decimals": "(x) decimals",
    "polygamma": "(x) n -> the n-th derivative of digamma (n >= 1; the gradient of digamma)",
    "cast": "(x) dtype -> x converted to dtype (C semantics for float -> int: truncation)",
    "where": "(cond, x, y) -> elementwise select with broadcasting",
    "clamp": "(x, lo, hi) -> elementwise; lo/hi handles, scalars or None",
    "nan_to_num": "(x) nan, posinf, neginf",
    # reductions (dim: tuple of normalised dims, empty tuple = all dims)
    "sum": "(x) dim, keepdim, dtype", "prod": "(x) dim, keepdim, dtype",
    "mean": "(x) dim, keepdim, dtype", "amax": "(x) dim, keepdim", "amin": "(x) dim, keepdim",
    "all": "(x) dim, keepdim -> bool", "any": "(x) dim, keepdim -> bool",
    "argmax": "(x) dim (int or None), keepdim -> int64",
    "argmin": "(x) dim (int or None), keepdim -> int64",
    "var": "(x) dim, correction, keepdim", "nansum": "(x) dim, keepdim, dtype",
    "cumsum": "(x) dim, dtype", "cumprod": "(x) dim, dtype",
    "cummax": "(x) dim -> (values, int64 indices)", "cummin": "(x) dim -> (values, indices)",
    "logcumsumexp": "(x) dim",
    "even_select": "(x, v) dim, keepdim -> v, a value that a reduction of x over dim selected (max, min or median "
                   "of all elements, the inf-norm); its gradient is shared evenly by the elements of x equal to v "
                   "(NaN equal to NaN)",
    "max_dim": "(x) dim, keepdim -> (values, indices)",
    "min_dim": "(x) dim, keepdim -> (values, indices)",
    # movement (views share storage with their input)
    "reshape": "(x) shape -> a view when the layout allows, else a copy",
    "permute": "(x) dims -> view", "expand": "(x) shape -> view with 0 strides",
    "slice": "(x) index: tuple of (start, stop, step) per dim -> view",
    "diagonal": "(x) offset, dim1, dim2 -> view",
    "as_strided": "(x) size, stride, storage_offset -> view",
    "contiguous": "(x) -> a C-contiguous copy (or x when already contiguous)",
    "copy": "(x) -> a new C-contiguous tensor",
    "flip": "(x) dims", "roll": "(x) shifts, dims",
    "cat": "(*xs) dim", "stack": "(*xs) dim",
    "pad": "(x) pad: tuple of (before, after) per dim, mode, value",
    "tril": "(x) diagonal", "triu": "(x) diagonal",
    "repeat_interleave": "(x, repeats) dim, output_size", "tile": "(x) reps",
    # indexing (indices are int64 and already range-checked by the frontend)
    "index": "(x, *idx) -> advanced indexing x[idx...] (idx handles broadcast together)",
    "gather": "(x, index) dim", "scatter": "(x, index, src) dim, reduce",
    "scatter_reduce": "(x, index, src) dim, reduce, include_self",
    "index_select": "(x, index) dim",
    "index_add": "(x, index, src) dim, alpha",
    "masked_fill": "(x, mask, value)",
    "take": "(x, index)",
    "assign": "(dst, src) -> writes src into dst's storage (in place); returns dst",
    "index_put_": "(x, value, *idx) dims, accumulate -> writes into x (in place); returns x",
    # functional forms of writes (new tensors): used by gradients and by autodiff's in-place handling
    "index_put": "(x, value, *idx) dims, accumulate -> a copy of x with x[idx] = value (or +=)",
    "slice_scatter": "(x, src) index -> a copy of x with the slice view replaced by src",
    "as_strided_scatter": "(x, src) size, stride, storage_offset -> a contiguous copy of x with that strided "
                          "window (offsets from x's first element) replaced by src",
    "diagonal_scatter": "(x, src) offset, dim1, dim2 -> a copy of x with the diagonal replaced by src",
    # data-dependent output shapes: sync points; these return (handle, ...) and the backend
    # reports shapes through ``shape(handle)``
    "nonzero": "(x) -> int64 (n, ndim)", "masked_select": "(x, mask)",
    "unique": "(x) sorted, return_inverse, return_counts, dim",
    "unique_consecutive": "(x) return_inverse, return_counts, dim",
    # linear algebra
    "matmul": "(a, b) -> batched matmul with broadcast batch dims (inputs >= 1-d)",
    "inv": "(a)", "det": "(a)", "slogdet": "(a) -> (sign, logabsdet)", "solve": "(a, b) left",
    "cholesky": "(a) upper", "qr": "(a) mode -> (q, r)", "svd": "(a) full_matrices -> (u, s, vh)",
    "eigh": "(a) uplo -> (w, v)", "eigvalsh": "(a) uplo", "svdvals": "(a) -> s",
    # sorting and counting
    "sort": "(x) dim, descending, stable -> (values, int64 indices)",
    "argsort": "(x) dim, descending, stable", "topk": "(x) k, dim, largest, sorted -> (values, indices), always sorted",
    "kthvalue": "(x) k, dim, keepdim -> (values, indices)",
    "searchsorted": "(sorted, values) right, out_int32", "bincount": "(x, weights?) minlength, length",
    "histc": "(x) bins, min, max",
}
from .ops_conv import OPS as _CONV_OPS  # noqa: E402 - conv/pool family
from .ops_nn import COMPOSITES as _NN_COMPOSITES  # noqa: E402
from .ops_nn import OPS as _NN_OPS  # noqa: E402 - norms, attention, activations, interpolation

OPS.update(_CONV_OPS)
OPS.update(_NN_OPS)

# Composite ops have frontend decompositions; a backend may implement them for speed.
COMPOSITES = frozenset({
    "softmax", "log_softmax", "logsumexp", "lerp", "logaddexp", "xlogy", "norm_affine", "rms_norm",
    "scaled_dot_product_attention",
})
COMPOSITES = COMPOSITES | _NN_COMPOSITES  # optional nn ops: the frontend decomposes them otherwise
PRIMITIVES = frozenset(OPS) - COMPOSITES  # what a new backend must implement
# Ops whose result shapes depend on the data: the backend tells the shapes after running.
DYNAMIC_SHAPE = frozenset({"nonzero", "masked_select", "unique", "unique_consecutive"})
# Ops that draw from a generator at (seed, offset): always, or when the named attribute is above 0. A recording
# that replays them (Fusion's tape, a CUDA graph) must draw fresh numbers on each replay.
RANDOM = frozenset({"rand", "randn", "randint", "bernoulli", "multinomial", "poisson", "randperm"})
RANDOM_WHEN = {"attention_weights": "dropout_p", "dropout": "p"}


def draws_random(op: str, attrs: dict) -> bool:
    """Whether ``op`` with these attributes draws random numbers.

    >>> draws_random("rand", {}), draws_random("attention_weights", {"dropout_p": 0.0})
    (True, False)
    """
    if op in RANDOM:
        return True
    key = RANDOM_WHEN.get(op)
    return key is not None and attrs.get(key, 0.0) > 0.0


class Backend(Protocol):
    """What a backend or backend decorator provides; see the module docstring."""

    name: str
    device_type: str

    def run(self, op: str, inputs: tuple, attrs: dict) -> Handle: ...
    def write(self, array) -> Handle: ...
    def read(self, handle: Handle): ...
    def strides(self, handle: Handle) -> tuple[int, ...]: ...
    def shape(self, handle: Handle) -> tuple[int, ...]: ...
    def dtype(self, handle: Handle): ...
    def storage(self, handle: Handle): ...
    def storage_offset(self, handle: Handle) -> int: ...
    def supports(self, op: str) -> bool: ...


class UnsupportedOp(NotImplementedError):
    """Raised by a backend for an op it does not implement."""

    def __init__(self, backend: str, op: str):
        super().__init__(f"backend {backend!r} does not implement op {op!r}")
