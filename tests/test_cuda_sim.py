"""The CUDA backend's op code, run without a GPU: ``Cuda._with_array_module(numpy)`` executes the same
op functions on numpy arrays (registered here as the device type "cudasim"), through the whole op
registry and its gradient checks. On a machine with CuPy and a GPU, tests/test_registry.py runs the
registry on the real "cuda" device as well."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.backend.autodiff import Autodiff
from ember.backend.cuda import Cuda
from tests import test_registry, test_registry_grad

ember.register_device("cudasim", lambda index: Autodiff(Cuda._with_array_module(np)))
SIM = "cudasim"
# samples that build some arguments on the CPU whatever the device (a registry matter, not a backend one)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# the dtypes whose code paths differ in this backend (half-precision upcasts, integer checks, bool); the
# other integer and float widths take the same paths, and the CPU registry covers them against PyTorch
_DTYPES = {"float32", "float64", "bfloat16", "float16", "int64", "int32", "bool"}
CASES = [c for c in test_registry.CASES if c[1] in _DTYPES]


@pytest.mark.parametrize("case", CASES, ids=[test_registry._id(c) for c in CASES])
def test_registry_op_on_cuda_code(case):
    test_registry.test_op_matches_torch(case, SIM)


@pytest.mark.parametrize("op", test_registry_grad.GRAD_OPS, ids=[op.name for op in test_registry_grad.GRAD_OPS])
def test_registry_grad_on_cuda_code(op):
    test_registry_grad.test_grad_matches_torch(op, SIM)


def test_host_ops_are_primitives_the_reference_has():
    b = Cuda._with_array_module(np)
    from ember.backend.base import PRIMITIVES
    assert b.host_ops() <= PRIMITIVES
    # every primitive is available, on the GPU or through the host path
    assert PRIMITIVES <= set(b._ops) | b.host_ops()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_random_streams_are_the_reference_streams(dtype):
    """rand/randn/randint/bernoulli of the CUDA code reproduce the CPU streams bit for bit (on the GPU the
    same words come from the Philox kernel, which checks itself against numpy's on first use)."""
    d = getattr(ember, dtype)
    draws = (lambda dev: ember.rand(1001, dtype=d, device=dev), lambda dev: ember.randn(3, 333, dtype=d, device=dev),
             lambda dev: ember.randint(-(2 ** 40), 2 ** 40, (77,), device=dev),
             lambda dev: ember.bernoulli(ember.full((5, 9), 0.3, dtype=d, device=dev)))
    for draw in draws:
        ember.manual_seed(2024)
        a = draw("cpu").float().numpy()
        ember.manual_seed(2024)
        b = draw(SIM).float().cpu().numpy()
        np.testing.assert_array_equal(a, b)
