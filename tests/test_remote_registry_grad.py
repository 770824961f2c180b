"""The gradient registry (first and second order, tests/test_registry_grad.py) through the remote
backend: Autodiff runs in the client and sends backward ops to the server as plain ops.

About 100 s on 2 cores with ``-n 2``, so it runs only with ``EMBER_REMOTE_FULL_REGISTRY=1`` (training
through remote is covered by tests/test_remote.py and tests/test_remote_mnist.py in every run).
"""

from __future__ import annotations

import os

import pytest

from tests.test_registry_grad import CORE_GRAD_OPS, GRAD_OPS
from tests.test_registry_grad import test_grad_matches_torch as _check_grad
from tests.test_registry_grad import test_second_order_matches_torch as _check_second
from tests.test_remote_helpers import server_fixture

pytest.importorskip("torch")
if os.environ.get("EMBER_REMOTE_FULL_REGISTRY") != "1":
    pytest.skip("the gradient registry through remote runs with EMBER_REMOTE_FULL_REGISTRY=1",
                allow_module_level=True)

server = server_fixture()


@pytest.fixture
def remote_default(server):
    return server.url


@pytest.mark.parametrize("op", GRAD_OPS, ids=[op.name for op in GRAD_OPS])
def test_grad_matches_torch_remote(op, remote_default):
    _check_grad(op, remote_default)


@pytest.mark.parametrize("op", CORE_GRAD_OPS, ids=[op.name for op in CORE_GRAD_OPS])
def test_second_order_matches_torch_remote(op, remote_default):
    _check_second(op, remote_default)
