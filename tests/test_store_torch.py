"""ember.store reads torch.save files (zip and legacy formats) without torch; torch writes the
files here and is the oracle for the values."""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember import store
from ember.store import StoreDtypeError, StoreError, TorchFileError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORMATS = pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def _save(obj, tmp_path, zip_format: bool, name="ckpt.pt") -> str:
    path = str(tmp_path / name)
    torch.save(obj, path, _use_new_zipfile_serialization=zip_format)
    return path


def _same(e: ember.Tensor, t: torch.Tensor) -> None:
    assert isinstance(e, ember.Tensor), type(e)
    assert e.dtype.name == str(t.dtype).removeprefix("torch.") and tuple(e.shape) == tuple(t.shape)
    if t.numel() > 1:  # (the strides of empty and one-element tensors carry no information)
        assert tuple(e.stride()) == tuple(t.stride()), (e.stride(), t.stride())
    want = t.detach().reshape(-1).contiguous()
    got = np.ascontiguousarray(e.detach().numpy()).reshape(-1)
    if t.dtype == torch.bfloat16:
        want = want.view(torch.int16)
        got = got.view(np.int16)
    assert got.tobytes() == want.numpy().tobytes()


def _sample(name: str, shape=(3, 4)) -> torch.Tensor:
    g = torch.Generator().manual_seed(len(name))
    d = getattr(torch, name)
    if name == "bool":
        return torch.rand(shape, generator=g) > 0.5
    if d.is_floating_point:
        t = (torch.randn(shape, generator=g) * 50).to(d)
        n = min(3, t.numel())
        t.view(-1)[:n] = torch.tensor([float("nan"), float("-inf"), -0.0])[:n].to(d)
        return t
    info = torch.iinfo(d)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(d)


@FORMATS
def test_every_dtype_and_shape(tmp_path, zip_format):
    sd = OrderedDict()
    for name in DTYPES:
        sd[name] = _sample(name)
        sd[name + ".scalar"] = _sample(name, ())
        sd[name + ".empty"] = _sample(name, (0, 3))
    out = store.load_torch(_save(sd, tmp_path, zip_format))
    assert isinstance(out, OrderedDict) and list(out) == list(sd)
    for k, t in sd.items():
        _same(out[k], t)


@FORMATS
def test_views_offsets_and_shared_storages(tmp_path, zip_format):
    base = torch.arange(24, dtype=torch.float32)
    grid = base.reshape(4, 6)
    sd = {"full": grid, "T": grid.t(), "rows": grid[1:3], "cols": grid[:, 2:5], "step": base[3::4],
          "expanded": torch.tensor([1.0, 2.0]).unsqueeze(0).expand(3, 2), "other": torch.ones(2, 2),
          "tied_a": torch.ones(3), "scalar_view": base[5]}
    sd["tied_b"] = sd["tied_a"]
    out = store.load_torch(_save(sd, tmp_path, zip_format))
    for k, t in sd.items():
        _same(out[k], t)
    # one storage in the file is one buffer in ember, as in torch
    out["full"][0, 0] = 100.0
    assert out["T"][0, 0].item() == 100.0 and out["step"].tolist()[0] == 3.0
    out["full"][1, 2] = -5.0
    assert out["rows"][0, 2].item() == -5.0 and out["cols"][1, 0].item() == -5.0
    assert out["tied_a"] is out["tied_b"]  # the pickle memo keeps one object


@FORMATS
def test_parameters_requires_grad_and_containers(tmp_path, zip_format):
    p = torch.nn.Parameter(torch.randn(2, 3))
    frozen = torch.nn.Parameter(torch.randn(2), requires_grad=False)
    leaf = torch.randn(3).requires_grad_()
    obj = {"p": p, "frozen": frozen, "leaf": leaf, "size": torch.Size([2, 3]), "list": [torch.ones(1), 3, "s"],
           "tuple": (1.5, None, True), "nested": {"deep": OrderedDict(a=torch.zeros(2))}, "bytes": b"\x00\xffab",
           "set": {1, 2}, "frozenset": frozenset({"a"}), "dtype": torch.float16, "device": torch.device("cpu"),
           "big": 2 ** 70, "inf": float("inf")}
    out = store.load_torch(_save(obj, tmp_path, zip_format))
    assert isinstance(out["p"], ember.nn.Parameter) and out["p"].requires_grad
    assert isinstance(out["frozen"], ember.nn.Parameter) and not out["frozen"].requires_grad
    assert out["leaf"].requires_grad and out["leaf"].is_leaf
    _same(out["p"], p)
    _same(out["leaf"], leaf)
    assert out["size"] == (2, 3) and isinstance(out["size"], ember.Size)
    assert out["list"][1:] == [3, "s"] and out["list"][0].tolist() == [1.0]
    assert out["tuple"] == (1.5, None, True) and out["bytes"] == b"\x00\xffab"
    assert out["set"] == {1, 2} and out["frozenset"] == frozenset({"a"})
    assert out["dtype"] is ember.float16 and out["device"] == "cpu"
    assert out["big"] == 2 ** 70 and out["inf"] == float("inf")
    assert list(out["nested"]["deep"]) == ["a"]


@FORMATS
def test_module_state_dict_with_metadata_and_buffers(tmp_path, zip_format):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Linear(6, 2))
    sd = net.state_dict()
    out = store.load_torch(_save(sd, tmp_path, zip_format))
    assert list(out) == list(sd)
    assert out._metadata == sd._metadata  # torch's per-module version info comes through as data
    for k, t in sd.items():
        _same(out[k], t)
    assert out["1.num_batches_tracked"].dtype is ember.int64


def test_complex_float8_and_uint16_are_refused_by_name(tmp_path):
    for t, name in [(torch.ones(2, dtype=torch.complex64), "complex64"),
                    (torch.ones(2).to(torch.float8_e4m3fn), "float8_e4m3fn"),
                    (torch.ones(2, dtype=torch.uint16), "uint16")]:
        for zip_format in (True, False):
            if not zip_format and name != "complex64":
                continue  # the legacy writer has no storage class for the newer dtypes
            path = _save({"w": t}, tmp_path, zip_format)
            with pytest.raises(StoreDtypeError, match=f"torch.{name}|{name}") as info:
                store.load_torch(path)
            assert path in str(info.value) and isinstance(info.value, TypeError)


@FORMATS
def test_map_location(tmp_path, zip_format):
    path = _save({"w": torch.ones(2)}, tmp_path, zip_format)
    assert store.load_torch(path, map_location=None)["w"].device == ember.device("cpu")
    assert store.load_torch(path, map_location={"cuda:0": "cpu"})["w"].device == ember.device("cpu")
    with pytest.raises(TypeError, match="map_location"):
        store.load_torch(path, map_location=3)


@FORMATS
def test_file_objects_and_big_tensors(tmp_path, zip_format):
    big = torch.randn(300, 700)
    path = _save({"big": big, "small": torch.arange(3)}, tmp_path, zip_format)
    with open(path, "rb") as fh:
        out = store.load_torch(fh)
    _same(out["big"], big)
    _same(store.load_torch(io.BytesIO(open(path, "rb").read()))["small"], torch.arange(3))


# ---- store.load: unwrapping and format detection --------------------------------------------------
@FORMATS
def test_load_unwraps_nested_checkpoints(tmp_path, zip_format):
    sd = OrderedDict(w=torch.randn(2, 2), b=torch.zeros(2))
    ddp = OrderedDict(("module." + k, v) for k, v in sd.items())
    cases = {"plain": sd, "state_dict": {"state_dict": sd, "epoch": 3}, "model": {"model": ddp, "opt": {"lr": 1.0}},
             "lightning": {"epoch": 1, "state_dict": OrderedDict(("_orig_mod." + k, v) for k, v in sd.items())},
             "nested": {"checkpoint": 1, "model_state_dict": {"module": sd}}}
    for name, obj in cases.items():
        got = store.load(_save(obj, tmp_path, zip_format, name + ".pt"))
        assert list(got) == ["w", "b"], name
        _same(got["w"], sd["w"])
    path = _save({"model": sd, "ema": {"w": torch.ones(2, 2), "b": torch.ones(2)}}, tmp_path, zip_format)
    assert store.load(path, key="ema")["w"].tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with pytest.raises(StoreError, match="no entry 'nope'"):
        store.load(path, key="nope")
    flat = store.load(_save({"enc": {"w": torch.ones(1)}, "dec": {"w": torch.zeros(1)}}, tmp_path, zip_format))
    assert list(flat) == ["enc.w", "dec.w"]
    with pytest.raises(StoreError, match=r"not tensors: epoch \(int\)"):
        store.load(_save({"w": torch.ones(1), "epoch": 3}, tmp_path, zip_format))
    params = store.load(_save({"p": torch.nn.Parameter(torch.ones(2))}, tmp_path, zip_format))
    assert type(params["p"]) is ember.Tensor and not params["p"].requires_grad


def test_unwrap_and_flatten_helpers():
    assert store.unwrap_state_dict({"model": {"module.a": 1, "module.b": 2}, "step": 0}) == {"a": 1, "b": 2}
    assert store.unwrap_state_dict({"module.a": 1, "b": 2}) == {"module.a": 1, "b": 2}  # not every key
    t = ember.ones(1)
    assert store.flatten_state_dict({"a": {"b": {"c": t}}}) == {"a.b.c": t}
    with pytest.raises(StoreError, match="holds a list"):
        store.flatten_state_dict([t])


def test_hugging_face_shard_index(tmp_path):
    a = {"x.weight": torch.randn(2, 3)}
    b = {"y.weight": torch.randn(4), "y.bias": torch.zeros(1)}
    torch.save(a, tmp_path / "pytorch_model-00001-of-00002.bin")
    torch.save(b, tmp_path / "pytorch_model-00002-of-00002.bin")
    index = {"metadata": {"total_size": 0}, "weight_map": {"x.weight": "pytorch_model-00001-of-00002.bin",
                                                           "y.weight": "pytorch_model-00002-of-00002.bin",
                                                           "y.bias": "pytorch_model-00002-of-00002.bin"}}
    (tmp_path / "pytorch_model.bin.index.json").write_text(json.dumps(index))
    out = store.load(tmp_path / "pytorch_model.bin.index.json")
    assert set(out) == {"x.weight", "y.weight", "y.bias"}
    _same(out["y.weight"], b["y.weight"])
    index["weight_map"]["z"] = "../elsewhere.bin"
    (tmp_path / "bad.index.json").write_text(json.dumps(index))
    with pytest.raises(StoreError, match="not a file name beside the index"):
        store.load(tmp_path / "bad.index.json")


# ---- damaged and foreign files ----------------------------------------------------------------------
@FORMATS
def test_truncated_files(tmp_path, zip_format):
    path = _save({"w": torch.randn(50, 50), "b": torch.ones(3)}, tmp_path, zip_format)
    data = open(path, "rb").read()
    for cut in (1, 30, len(data) // 2, len(data) - 100, len(data) - 1):
        bad = tmp_path / f"cut{cut}.pt"
        bad.write_bytes(data[:cut])
        with pytest.raises(StoreError) as info:
            store.load(bad)
        assert str(bad) in str(info.value)


def test_wrong_magic_and_version_in_the_legacy_format(tmp_path):
    import pickle
    for magic, version, pattern in [(12345, 1001, "wrong magic number"), (0x1950A86A20F9469CFC6C, 7, "version 7")]:
        bad = tmp_path / "bad.pt"
        bad.write_bytes(pickle.dumps(magic, 2) + pickle.dumps(version, 2) + pickle.dumps({}, 2))
        with pytest.raises(TorchFileError, match=pattern):
            store.load_torch(bad)


def test_zip_storage_size_mismatch_and_missing_storage(tmp_path):
    path = _save({"w": torch.ones(4)}, tmp_path, True)
    with zipfile.ZipFile(path) as zf:
        entries = {i.filename: zf.read(i) for i in zf.infolist()}
    storage = next(n for n in entries if "/data/" in n)
    for change, pattern in [(lambda e: e.__setitem__(storage, e[storage][:-4]), "holds 12 bytes but the pickle says"),
                            (lambda e: e.pop(storage), "is missing from the archive")]:
        e = dict(entries)
        change(e)
        bad = tmp_path / "bad.pt"
        with zipfile.ZipFile(bad, "w") as zf:
            for n, d in e.items():
                zf.writestr(n, d)
        with pytest.raises(TorchFileError, match=pattern):
            store.load_torch(bad)


def test_big_endian_zip_files(tmp_path):
    """Files from big-endian machines record it in 'byteorder'; the storages are byte-swapped."""
    w = torch.arange(6, dtype=torch.float32).reshape(2, 3) / 3
    path = _save({"w": w, "i": torch.tensor([1, -2], dtype=torch.int16)}, tmp_path, True)
    with zipfile.ZipFile(path) as zf:
        entries = {i.filename: zf.read(i) for i in zf.infolist()}
    pickled = store.load_torch(path)
    sizes = {"w": 4, "i": 2}
    bad = tmp_path / "be.pt"
    with zipfile.ZipFile(bad, "w") as zf:
        for n, d in entries.items():
            if n.endswith("/byteorder"):
                d = b"big"
            elif "/data/" in n:
                item = 4 if len(d) == 24 else 2
                d = np.frombuffer(d, f"<u{item}").astype(f">u{item}").tobytes()
            zf.writestr(n, d)
    out = store.load_torch(bad)
    assert sizes and out["w"].tolist() == pickled["w"].tolist() and out["i"].tolist() == [1, -2]


def test_torchscript_archives_are_refused(tmp_path):
    m = torch.jit.script(torch.nn.Linear(2, 2))
    path = str(tmp_path / "scripted.pt")
    torch.jit.save(m, path)
    with pytest.raises(TorchFileError, match="TorchScript"):
        store.load(path)


def test_tar_format_is_refused(tmp_path):
    import tarfile
    path = tmp_path / "old.tar"
    with tarfile.open(path, "w") as tf:
        info = tarfile.TarInfo("pickle")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(store.UnknownFormatError, match="tar"):
        store.load(path)


# ---- torch is never imported ----------------------------------------------------------------------
def test_loading_needs_no_torch(tmp_path):
    """With torch made unimportable, every reader still works (the library never imports it)."""
    sd = OrderedDict(w=torch.arange(6.0).reshape(2, 3).t(), b=torch.tensor([1, 2], dtype=torch.int16),
                     h=torch.ones(2, dtype=torch.bfloat16))
    zip_path = _save(sd, tmp_path, True, "z.pt")
    legacy_path = _save(sd, tmp_path, False, "l.pt")
    st_path = str(tmp_path / "s.safetensors")
    import safetensors.torch
    safetensors.torch.save_file({k: v.contiguous() for k, v in sd.items()}, st_path)
    code = f"""
import sys
sys.modules["torch"] = None  # any 'import torch' now raises ImportError
import ember, ember.store as st
for p in ({zip_path!r}, {legacy_path!r}, {st_path!r}):
    out = st.load(p)
    print(out["w"].tolist(), out["b"].tolist(), out["h"].float().tolist())
net = ember.nn.Linear(2, 3)
st.load_into(net, {{"weight": out["w"], "bias": ember.zeros(3)}})
st.save_file(net.state_dict(), {str(tmp_path / "o.safetensors")!r})
print(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "safetensors") and sys.modules[m] is not None))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    want = f"{sd['w'].tolist()} [1, 2] [1.0, 1.0]"
    assert lines[:3] == [want] * 3 and lines[3] == "[]"


def test_tensor_with_python_attributes_and_legacy_storage_views(tmp_path):
    """A tensor carrying Python attributes is pickled through _rebuild_from_type_v2 (the attributes
    are dropped); legacy files could hold views into a storage (view_metadata)."""
    t = torch.arange(4.0)
    t.note = "x"
    out = store.load_torch(_save({"t": t}, tmp_path, True))
    _same(out["t"], t)

    import pickle

    class Root:
        pass

    root = Root()

    class ViewPickler(pickle.Pickler):
        def persistent_id(self, obj):
            if obj is root:  # elements 2..5 of a 6-element storage, the pre-1.0 "storage view"
                return ("storage", torch.FloatStorage, "root", "cpu", 6, ("view", 2, 3))
            return None

    class Rebuild:
        def __reduce__(self):
            return torch._utils._rebuild_tensor_v2, (root, 1, (2,), (1,), False, OrderedDict())

    body = io.BytesIO()
    ViewPickler(body, 2).dump({"v": Rebuild()})
    data = b"".join(pickle.dumps(x, 2) for x in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}))
    data += body.getvalue() + pickle.dumps(["root"], 2) + struct.pack("<q", 6)
    data += np.arange(6, dtype=np.float32).tobytes()
    path = tmp_path / "views.pt"
    path.write_bytes(data)
    assert store.load_torch(path)["v"].tolist() == [3.0, 4.0]  # storage offset 2 + tensor offset 1
