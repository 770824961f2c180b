"""Runs every op in the registry (tests/opinfo/*) on every available backend against PyTorch."""

from __future__ import annotations

import importlib
import pkgutil
import zlib

import numpy as np
import pytest

import ember
from tests.opinfo import core
from tests.opinfo.core import as_numpy, assert_close, run_ember, run_torch

torch = pytest.importorskip("torch")


def _all_ops():
    import tests.opinfo as pkg
    ops = []
    for m in pkgutil.iter_modules(pkg.__path__):
        if m.name == "core":
            continue
        ops.extend(importlib.import_module(f"tests.opinfo.{m.name}").OPS)
    return ops


OPS = _all_ops()
CASES = [(op, d) for op in OPS for d in op.dtypes]


def _id(case):
    op, d = case
    return f"{op.name}-{d}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_op_matches_torch(case, device):
    op, dtype = case
    reason = op.skip.get(dtype) or op.skip.get("*")
    if reason:
        pytest.skip(reason)
    rng = np.random.default_rng(zlib.crc32(f"{op.name}-{dtype}".encode()))
    ran = 0
    for s in op.samples(dtype, rng):
        where = f"{op.name}[{dtype}] sample {s.name!r}"
        if s.name in op.cpu_only_samples and not device.startswith("cpu"):
            continue
        if s.raises is not None:
            with pytest.raises(s.raises):
                run_torch(op, s)
            with pytest.raises(s.raises):
                run_ember(op, s, device)
            ran += 1
            continue
        want = as_numpy(run_torch(op, s))
        got = as_numpy(run_ember(op, s, device))
        assert_close(got, want, dtype, op, where)
        ran += 1
    assert ran > 0, f"{op.name}: no samples"


def test_registry_covers_names():
    """Every registered op name is unique (a duplicate would hide one of them)."""
    names = [op.name for op in OPS]
    dupes = {n for n in names if names.count(n) > 1}
    assert not dupes, dupes


def test_devices_include_cpu():
    assert "cpu" in core.__dict__.get("DEVICES", ["cpu"]) or ember.device("cpu").type == "cpu"
