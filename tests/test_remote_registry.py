"""The core op registry (tests/opinfo) run through the remote backend against PyTorch.

By default every op runs in one dtype (float32 where it has it) plus the integer and bool dtypes of
a few ops that take them, to keep CI fast; ``EMBER_REMOTE_FULL_REGISTRY=1`` runs every (op, dtype)
pair (about 90 s on 2 cores with ``-n 2``).
"""

from __future__ import annotations

import os

import pytest

import ember
from tests.test_registry import CASES, _id
from tests.test_registry import test_op_matches_torch as _check_case
from tests.test_remote_helpers import server_fixture

pytest.importorskip("torch")

server = server_fixture()


def _subset(cases):
    if os.environ.get("EMBER_REMOTE_FULL_REGISTRY") == "1":
        return cases
    chosen: dict = {}
    for case in cases:
        best = chosen.get(case[0].name)
        if best is None or (case[1] == "float32" and best[1] != "float32"):
            chosen[case[0].name] = case
    picked = {id(c) for c in chosen.values()}
    return [c for c in cases if id(c) in picked or (c[1] in ("int64", "bool") and c[0].name.endswith("forms"))]


SELECTED = _subset(CASES)


@pytest.mark.parametrize("case", SELECTED, ids=[_id(c) for c in SELECTED])
def test_op_matches_torch_remote(case, server):
    # a few samples make tensors with lib.tensor(...) and no device: they go to the remote device too
    ember.set_default_device(server.url)
    try:
        _check_case(case, server.url)
    finally:
        ember.set_default_device("cpu")
