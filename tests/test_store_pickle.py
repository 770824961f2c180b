"""The restricted unpickler refuses hostile pickles, names the global, and runs nothing.

Every attack here would create a marker file if any of its code ran; each test checks the marker
is absent after the refusal. The pickles are built by hand (``__reduce__`` and raw opcodes) and
packed into the zip and legacy PyTorch formats."""

from __future__ import annotations

import io
import os
import pickle
import struct
import subprocess
import zipfile

import pytest
import torch

import ember
from ember import store
from ember.store import TorchFileError, UnsafePickleError
from ember.store.torch_pickle import ALLOWED_GLOBALS


class _Reduce:
    """An object whose unpickling calls ``func(*args)``."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _zip_pt(pickled: bytes, storages: dict[str, bytes] | None = None) -> bytes:
    """A torch.save-style zip archive around a given data.pkl."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", pickled)
        zf.writestr("archive/byteorder", "little")
        zf.writestr("archive/version", "3\n")
        for k, v in (storages or {}).items():
            zf.writestr(f"archive/data/{k}", v)
    return buf.getvalue()


def _legacy_pt(pickled: bytes) -> bytes:
    head = b"".join(pickle.dumps(x, 2) for x in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}))
    return head + pickled + pickle.dumps([], 2)


def _write(tmp_path, name: str, data: bytes) -> str:
    path = str(tmp_path / name)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def _attacks(marker: str) -> list[tuple[str, bytes, str]]:
    """(name, pickle, the global the error must name)."""
    shell = f"touch {marker}"
    return [
        ("os.system via __reduce__", pickle.dumps({"w": _Reduce(os.system, shell)}, 2),
         f"{os.system.__module__}.system"),
        ("os.system via raw GLOBAL", b"cos\nsystem\n(S'" + shell.encode() + b"'\ntR.", "os.system"),
        ("builtins.eval", pickle.dumps(_Reduce(eval, f"open({marker!r}, 'w')"), 2), "builtins.eval"),
        ("builtins.exec, protocol 4", pickle.dumps(_Reduce(exec, f"open({marker!r}, 'w')"), 4), "builtins.exec"),
        ("subprocess.Popen", pickle.dumps([_Reduce(subprocess.Popen, ["touch", marker])], 2), "subprocess.Popen"),
        ("INST opcode", b"(S'" + shell.encode() + b"'\nios\nsystem\n.", "os.system"),
        ("STACK_GLOBAL getattr", b"\x80\x04\x8c\x08builtins\x8c\x07getattr\x93.", "builtins.getattr"),
        ("python 2 __builtin__.eval", b"c__builtin__\neval\n(S'1'\ntR.", "builtins.eval"),
        ("copyreg._reconstructor", b"ccopy_reg\n_reconstructor\n.", "copyreg._reconstructor"),
        ("a dotted qualname", b"\x80\x04\x8c\x0bcollections\x8c\x14OrderedDict.fromkeys\x93.",
         "collections.OrderedDict.fromkeys"),
    ]


@pytest.mark.parametrize("container", ["zip", "legacy", "bare"])
def test_hostile_globals_are_refused_and_nothing_runs(tmp_path, container):
    marker = str(tmp_path / "PWNED")
    for name, pickled, global_name in _attacks(marker):
        data = {"zip": _zip_pt, "legacy": _legacy_pt, "bare": lambda p: _legacy_pt(p)}[container](pickled)
        if container == "bare":  # the same pickle in the legacy header's slot (the first pickle ember unpickles)
            data = pickled
        path = _write(tmp_path, "evil.pt", data)
        for reader in (store.load_torch, store.load):
            if container == "bare":
                with pytest.raises(store.StoreError):
                    reader(path)
                continue
            with pytest.raises(UnsafePickleError) as info:
                reader(path)
            err = info.value
            assert err.global_name == global_name, name
            assert f"'{global_name}'" in str(err) and path in str(err) and "nothing in this file was run" in str(err)
        assert not os.path.exists(marker), f"{name}: code ran"


def test_unknown_global_in_a_real_torch_file(tmp_path):
    """torch.save of a checkpoint holding an object of a user class: refused, naming the class."""
    path = str(tmp_path / "ckpt.pt")
    torch.save({"model": {"w": torch.ones(2)}, "args": _Reduce(dict, [("lr", 0.1)])}, path)
    with pytest.raises(UnsafePickleError, match="'builtins.dict'") as info:
        store.load(path)
    assert info.value.global_name == "builtins.dict"
    torch.save({"model": {"w": torch.ones(2)}, "cfg": Config()}, path)
    with pytest.raises(UnsafePickleError, match=r"test_store_pickle\.Config'"):
        store.load(path)
    torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(UnsafePickleError, match="torch.nn.modules.linear.Linear.*pickled model object"):
        store.load_torch(path)


class Config:
    lr = 0.1


def test_extra_globals_allow_a_trusted_callable(tmp_path):
    path = str(tmp_path / "ckpt.pt")
    torch.save({"w": torch.ones(2), "cfg": _Reduce(dict, [("lr", 0.1)])}, path)
    out = store.load_torch(path, extra_globals={"builtins.dict": dict})
    assert out["cfg"] == {"lr": 0.1} and out["w"].tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="module.name"):
        store.load_torch(path, extra_globals={"dict": dict})
    import argparse
    torch.save({"w": torch.ones(1), "args": argparse.Namespace(lr=0.1, name="run")}, path)
    with pytest.raises(UnsafePickleError, match="'argparse.Namespace'"):
        store.load_torch(path)
    out = store.load_torch(path, extra_globals={"argparse.Namespace": argparse.Namespace})
    assert out["args"].lr == 0.1 and out["args"].name == "run"


def test_opcodes_cannot_reach_methods_of_allowed_objects(tmp_path):
    """Allowed globals return objects with methods (a tensor has add and __setitem__); the opcodes
    that call methods only act on plain lists, dicts and sets."""
    storage = struct.pack("<2f", 1.0, 2.0)
    rebuild = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\n"
               b"X\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x02tQK\x00K\x02\x85K\x01\x85\x89ccollections\n"
               b"OrderedDict\n)RtR")
    ok = store.load_torch(_write(tmp_path, "ok.pt", _zip_pt(rebuild + b".", {"0": storage})))
    assert ok.tolist() == [1.0, 2.0]
    attacks = {
        "ADDITEMS on a tensor (Tensor.add)": rebuild + b"(K\x01\x90.",
        "SETITEM on a tensor (Tensor.__setitem__)": rebuild + b"K\x00K\x05s.",
        "APPEND on a tensor": rebuild + b"K\x01a.",
        "BUILD on a tensor": rebuild + b"}X\x02\x00\x00\x00_hK\x00sb.",
        "REDUCE on a tensor": rebuild + b")R.",
        "NEWOBJ on a tensor": rebuild + b")\x81.",
        "EXT1": b"\x80\x02\x82\x01.",
        "BUILD shadowing an OrderedDict method": b"\x80\x02ccollections\nOrderedDict\n)R}X\x04\x00\x00\x00keysK\x01sb.",
    }
    for name, pickled in attacks.items():
        with pytest.raises((TorchFileError, UnsafePickleError)) as info:
            store.load_torch(_write(tmp_path, "evil.pt", _zip_pt(pickled, {"0": storage})))
        assert "checkpoint" in str(info.value) or "refusing" in str(info.value) or "allowlisted" in str(info.value), \
            name


def test_stand_ins_check_their_arguments(tmp_path):
    storage = struct.pack("<2f", 1.0, 2.0)
    head = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\n"
            b"X\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x02tQ")
    tail = b"\x89ccollections\nOrderedDict\n)RtR."
    cases = {
        "past the end": (head + b"K\x01K\x02\x85K\x01\x85" + tail, "reaches past the end"),
        "negative stride": (head + b"K\x00K\x02\x85J\xff\xff\xff\xff\x85" + tail, "non-negative"),
        "size/stride length": (head + b"K\x00K\x02\x85)" + tail, "differ in length"),
        "not a storage": (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(K\x01K\x00K\x02\x85K\x01\x85" + tail,
                          "storage must come from a persistent id"),
        "codecs with another codec": (b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00aX\x06\x00\x00\x00rot_13\x86R.",
                                      "text encoding"),
    }
    for pickled, pattern in cases.values():
        with pytest.raises(TorchFileError, match=pattern):
            store.load_torch(_write(tmp_path, "bad.pt", _zip_pt(pickled, {"0": storage})))


def test_allowlist_is_small_and_explicit():
    assert "collections.OrderedDict" in ALLOWED_GLOBALS and "torch._utils._rebuild_tensor_v2" in ALLOWED_GLOBALS
    for name in ALLOWED_GLOBALS:
        assert name.split(".")[0] in ("collections", "builtins", "_codecs", "torch"), name
    assert not any(n.startswith(("os.", "posix.", "subprocess.", "builtins.eval", "builtins.exec",
                                 "builtins.getattr", "builtins.__import__")) for n in ALLOWED_GLOBALS)
    assert {n for n in ALLOWED_GLOBALS if n.startswith("builtins.")} == {"builtins.set", "builtins.frozenset"}


def test_unsafe_pickle_error_is_a_store_error():
    assert issubclass(UnsafePickleError, store.StoreError) and issubclass(UnsafePickleError, RuntimeError)
    assert ember.store.errors.UnsafePickleError is UnsafePickleError
