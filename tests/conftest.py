"""Shared fixtures: the backends every registry test runs on."""

from __future__ import annotations

import os
import tempfile

import pytest

import ember

# Mesa's lavapipe (the WebGPU adapter on CPU-only machines) complains on stderr without it
os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())


def available_devices() -> list[str]:
    """Device strings of every backend usable on this machine (more appear as backends land)."""
    devices = ["cpu"]
    # the default stacks ("cpu", "wgpu", "cuda": fused unless EMBER_DEFAULT_FUSION=0), the plain ones by name,
    # and the devices that record every op ("wgpu" records every op by default: it is "wgpu:fused")
    for spec in ("cpu:numpy", "cpu:compiled", "cpu:fused", "wgpu", "wgpu:unfused", "cuda", "cuda:unfused",
                 "cuda:fused"):
        try:
            ember.device(spec)
        except Exception:
            continue
        devices.append(spec)
    # EMBER_TEST_REMOTE=host:port: also run the registries through a running `ember serve`
    remote = os.environ.get("EMBER_TEST_REMOTE")
    if remote:
        devices.append(f"remote://{remote}")
    return devices


DEVICES = available_devices()

if "cuda" in DEVICES:
    # the registry compares float32 results with float32 tolerances: no TF32 in cuDNN's convolutions
    # (PyTorch's default, and ember's, is to allow it)
    import ember.backends
    ember.backends.cudnn.allow_tf32 = False


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param
