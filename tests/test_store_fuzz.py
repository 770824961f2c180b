"""Fuzzing the readers: random and mutated files raise only ember's own errors (StoreError), never
anything else, and never hang. Seeds are small valid files in every format; mutations flip, set,
insert and delete bytes and truncate; pickles are also mutated inside otherwise valid zips (so the
CRC check passes and the restricted unpickler sees the damage)."""

from __future__ import annotations

import io
import os
import signal
import struct
import tempfile
import zipfile

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember import store
from ember.store import StoreError

SETTINGS = settings(max_examples=int(os.environ.get("EMBER_FUZZ_EXAMPLES", 200)), deadline=None,
                    derandomize="EMBER_FUZZ_EXAMPLES" not in os.environ,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Hung(BaseException):  # not an Exception, so no reader's error handling can swallow it
    pass


def _hung(*_):
    raise Hung("a reader hung on fuzzed input")


def _torch_bytes(zip_format: bool) -> bytes:
    base = torch.arange(6, dtype=torch.float32)
    obj = {"w": base.reshape(2, 3).t(), "v": base[1:4], "i": torch.tensor([1, -2], dtype=torch.int16),
           "b": torch.tensor([True, False]), "h": torch.ones(2, dtype=torch.bfloat16),
           "p": torch.nn.Parameter(torch.zeros(2)), "n": {"x": torch.ones(1)}}
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=zip_format)
    return buf.getvalue()


SEEDS = {
    "safetensors": store.save_bytes({"w": ember.arange(6.0).reshape(2, 3), "m": ember.tensor([True, False]),
                                     "h": ember.ones(3, dtype=ember.bfloat16), "e": ember.zeros(0, 2)}, {"k": "v"}),
    "zip": _torch_bytes(True),
    "legacy": _torch_bytes(False),
}
with zipfile.ZipFile(io.BytesIO(SEEDS["zip"])) as _zf:
    ZIP_ENTRIES = {i.filename: _zf.read(i) for i in _zf.infolist()}
PKL = next(n for n in ZIP_ENTRIES if n.endswith("data.pkl"))
TMP = tempfile.mkdtemp(prefix="ember-fuzz-")


@st.composite
def mutated(draw, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "int"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 16))]
        elif kind == "truncate":
            del data[at:]
        elif kind == "int" and len(data) >= at + 8:  # a plausible-looking huge or negative length field
            data[at:at + 8] = struct.pack("<q", draw(st.sampled_from([-1, 2 ** 31, 2 ** 40, 2 ** 62, 7])))
    return bytes(data)


def _read_everything(data: bytes) -> None:
    """Run every reader that could apply; each may succeed or raise a StoreError. A reader that
    takes more than 20 s on these small inputs counts as hung."""
    old = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(20)
    try:
        _readers(data)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _readers(data: bytes) -> None:
    path = f"{TMP}/f.bin"
    with open(path, "wb") as fh:
        fh.write(data)
    for read in (lambda: store.load(path), lambda: store.load_torch(io.BytesIO(data)),
                 lambda: store.load_torch(path), lambda: store.load_bytes(data), lambda: _safe_open_all(path),
                 lambda: ember.load(path)):
        try:
            read()
        except StoreError:
            pass


def _safe_open_all(path: str) -> None:
    with store.safe_open(path) as f:
        for k in f.keys():
            f.get_numpy(k)
            f.get_tensor(k)
            s = f.get_slice(k)
            if s.get_shape():
                s[:1]


@SETTINGS
@given(st.binary(max_size=600))
def test_random_bytes(data):
    _read_everything(data)


@SETTINGS
@given(st.sampled_from([b"PK\x03\x04", b"\x80\x02", b"\x80\x04\x95", struct.pack("<Q", 40) + b"{"]),
       st.binary(max_size=400))
def test_random_bytes_behind_valid_magic(magic, rest):
    _read_everything(magic + rest)


@SETTINGS
@given(st.data())
def test_mutated_safetensors(data):
    _read_everything(data.draw(mutated(SEEDS["safetensors"])))


@SETTINGS
@given(st.data())
def test_mutated_zip_files(data):
    _read_everything(data.draw(mutated(SEEDS["zip"])))


@SETTINGS
@given(st.data())
def test_mutated_legacy_files(data):
    _read_everything(data.draw(mutated(SEEDS["legacy"])))


@SETTINGS
@given(st.data())
def test_mutated_pickles_inside_valid_zips(data):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, content in ZIP_ENTRIES.items():
            zf.writestr(name, data.draw(mutated(content)) if name == PKL else content)
    _read_everything(buf.getvalue())


def test_seeds_are_valid():
    """The fuzz seeds themselves load (so mutations start from real files)."""
    for name, data in SEEDS.items():
        path = f"{TMP}/{name}.bin"
        with open(path, "wb") as fh:
            fh.write(data)
        out = store.load(path)
        assert "w" in out and out["w"].shape == ((2, 3) if name == "safetensors" else (3, 2)), name
