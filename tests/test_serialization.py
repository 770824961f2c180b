"""ember.save / ember.load: bit-exact round trips, interoperability with the safetensors package,
atomic writes, and clear errors for damaged files."""

from __future__ import annotations

import io
import json
import os
import struct
from collections import OrderedDict

import numpy as np
import pytest
import safetensors
import safetensors.torch
import torch

import ember
from ember import nn
from ember.serialization import SerializationError

DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def _sample(name: str, shape=(3, 4), seed=0) -> ember.Tensor:
    rs = np.random.RandomState(seed)
    d = getattr(ember, name)
    if name == "bool":
        return ember.tensor(rs.rand(*shape) > 0.5)
    if d.is_floating_point:
        a = np.asarray(rs.randn(*shape), dtype=np.float32) * 100
        flat = a.reshape(-1)
        if flat.size >= 4:  # the awkward values must survive too
            flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
        return ember.tensor(a).to(d)
    info = np.iinfo(d.np)
    return ember.tensor(rs.randint(info.min, info.max, size=shape, dtype=np.int64).astype(d.np))


def _bits(t: ember.Tensor) -> bytes:
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "ckpt.safetensors")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 4), (), (0, 5), (2, 1, 3)])
def test_round_trip_every_dtype_bit_exact(path, dtype, shape):
    t = _sample(dtype, shape)
    ember.save({"t": t, "tt": t.T if t.dim() == 2 else t}, path)
    back = ember.load(path)
    for k in ("t", "tt"):
        orig = t.T if (k == "tt" and t.dim() == 2) else t
        assert back[k].dtype is orig.dtype and back[k].shape == orig.shape
        assert _bits(back[k]) == _bits(orig)


def test_safetensors_package_reads_the_file(path):
    tensors = {f"x_{d}": _sample(d, (2, 3), seed=i) for i, d in enumerate(DTYPES)}
    ember.save(tensors, path)
    loaded = safetensors.torch.load_file(path)
    assert list(loaded) == sorted(tensors) or set(loaded) == set(tensors)
    for k, t in tensors.items():
        ref = loaded[k]
        assert str(ref.dtype) == "torch." + t.dtype.name and list(ref.shape) == list(t.shape)
        got = ref.view(torch.int16).numpy().tobytes() if t.dtype is ember.bfloat16 else ref.numpy().tobytes()
        assert got == _bits(t)
    with safetensors.safe_open(path, framework="pt") as f:
        meta = f.metadata()
    assert meta["format"] == "ember" and "ember.structure" in meta and len(meta["ember.sha256"]) == 64


def test_files_written_by_safetensors_load_as_dicts(path):
    src = {"a": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.tensor([True, False]),
           "c": torch.ones(2, dtype=torch.bfloat16)}
    safetensors.torch.save_file(src, path)
    got = ember.load(path)
    assert set(got) == set(src)
    assert got["a"].tolist() == src["a"].tolist() and got["b"].tolist() == [True, False]
    assert got["c"].dtype is ember.bfloat16


def test_nested_structures_and_plain_values(path):
    obj = {
        "int": 3, "big": 2 ** 70, "neg": -7, "float": 0.1, "nan": float("nan"), "inf": float("inf"),
        "ninf": float("-inf"), "str": "héllo", "bool": True, "none": None,
        "tuple": (1, (2.5, "x"), [None]), "list": [ember.ones(2), {"deep": ember.zeros(1)}],
        "od": OrderedDict([("z", 1), ("a", 2)]), 7: "int key", (1, 2): "tuple key", 2.5: "float key",
        None: "none key", "dtype": ember.bfloat16, "device": ember.device("cpu"), "np": np.float32(1.5),
        "empty": {}, "elist": [], "etuple": (),
    }
    ember.save(obj, path)
    back = ember.load(path)
    assert list(back) == list(obj)
    for k in ("int", "big", "neg", "float", "inf", "ninf", "str", "bool", "none", "tuple", 7, (1, 2), 2.5, None,
              "empty", "elist", "etuple"):
        assert back[k] == obj[k] and type(back[k]) is type(obj[k]), k
    assert np.isnan(back["nan"])
    assert type(back["od"]) is OrderedDict and list(back["od"]) == ["z", "a"]
    assert back["list"][0].tolist() == [1.0, 1.0] and back["list"][1]["deep"].tolist() == [0.0]
    assert back["dtype"] is ember.bfloat16 and back["device"] == ember.device("cpu") and back["np"] == 1.5
    with safetensors.safe_open(path, framework="pt") as f:
        assert sorted(f.keys()) == ["list.0", "list.1.deep"]


def test_model_state_dict_round_trip_and_names(path):
    model = nn.Sequential(nn.ParameterList([ember.randn(3, 2), ember.randn(2)]), nn.Identity())
    model.register_buffer("count", ember.tensor([5]))
    ember.save(model.state_dict(), path)
    with safetensors.safe_open(path, framework="pt") as f:
        assert sorted(f.keys()) == sorted(model.state_dict())  # an ordinary safetensors checkpoint
    sd = ember.load(path)
    assert type(sd) is OrderedDict and list(sd) == list(model.state_dict())
    fresh = nn.Sequential(nn.ParameterList([ember.zeros(3, 2), ember.zeros(2)]), nn.Identity())
    fresh.register_buffer("count", ember.tensor([0]))
    fresh.load_state_dict(sd)
    for a, b in zip(fresh.state_dict().values(), model.state_dict().values()):
        assert _bits(a) == _bits(b)


def test_parameters_shared_tensors_and_requires_grad(path):
    w = nn.Parameter(ember.randn(2, 2))
    t = ember.randn(3, requires_grad=True)
    ember.save({"w": w, "same": w, "t": t, "keep": [t]}, path)
    with safetensors.safe_open(path, framework="pt") as f:
        assert sorted(f.keys()) == ["t", "w"]  # each tensor object is stored once
    back = ember.load(path)
    assert isinstance(back["w"], nn.Parameter) and back["w"].requires_grad
    assert back["same"] is back["w"] or ember.equal(back["same"], back["w"])
    assert back["t"].requires_grad and not isinstance(back["t"], nn.Parameter)


def test_optimizer_state_round_trip_resumes_exactly(path):
    rs = np.random.RandomState(0)
    init = [rs.randn(4, 3).astype(np.float32), rs.randn(3).astype(np.float32)]
    x = ember.tensor(rs.randn(5, 4).astype(np.float32))

    def train(params, opt, n):
        for _ in range(n):
            opt.zero_grad()
            ((x @ params[0] + params[1]).tanh() ** 2).mean().backward()
            opt.step()

    a = [nn.Parameter(ember.tensor(v)) for v in init]
    oa = ember.optim.Adam([{"params": a[:1]}, {"params": a[1:], "lr": 0.05, "betas": (0.8, 0.9)}], lr=0.01,
                          amsgrad=True)
    train(a, oa, 3)
    ember.save({"model": {"w": a[0], "b": a[1]}, "optim": oa.state_dict(), "epoch": 3}, path)
    ck = ember.load(path)
    b = [nn.Parameter(ember.zeros(4, 3)), nn.Parameter(ember.zeros(3))]
    with ember.no_grad():
        b[0].copy_(ck["model"]["w"])
        b[1].copy_(ck["model"]["b"])
    ob = ember.optim.Adam([{"params": b[:1]}, {"params": b[1:]}], lr=0.5, amsgrad=True)
    ob.load_state_dict(ck["optim"])
    assert ob.param_groups[1]["betas"] == (0.8, 0.9) and ck["epoch"] == 3
    assert ob.state[b[0]]["step"].dtype is ember.float32 and float(ob.state[b[0]]["step"]) == 3.0
    train(a, oa, 4)
    train(b, ob, 4)
    for p, q in zip(a, b):
        assert _bits(p) == _bits(q)


def test_file_objects_and_map_location():
    buf = io.BytesIO()
    ember.save({"a": ember.ones(2, dtype=ember.float16)}, buf)
    buf.seek(0)
    got = ember.load(buf, map_location="cpu")
    assert got["a"].dtype is ember.float16 and got["a"].device == ember.device("cpu")
    with pytest.raises(TypeError):
        ember.load(io.BytesIO(b"".join(ember.serialization._serialize({"a": 1}))), map_location=3)


def test_unsupported_objects_refused(path):
    for bad in [{"s": {1, 2}}, {"f": lambda: 1}, object(), {"k": b"bytes"}, {ember.ones(1): 1}]:
        with pytest.raises(TypeError, match="ember.save"):
            ember.save(bad, path)
    assert not os.path.exists(path)


# ---- atomic writes ------------------------------------------------------------------------------
def test_atomic_write_keeps_old_file_on_failure(path, monkeypatch):
    ember.save({"v": ember.tensor([1.0])}, path)
    before = open(path, "rb").read()

    def crash(src, dst):
        raise OSError("simulated crash before the rename")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated"):
        ember.save({"v": ember.tensor([2.0])}, path)
    monkeypatch.undo()
    assert open(path, "rb").read() == before
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]  # no temporary file left behind


def test_atomic_write_uses_same_dir_temp_fsync_and_replace(path, monkeypatch):
    calls = []
    real_replace, real_fsync = os.replace, os.fsync
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append(("replace", a, b)), real_replace(a, b))[1])
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(("fsync",)), real_fsync(fd))[1])
    ember.save({"v": ember.ones(3)}, path)
    kinds = [c[0] for c in calls]
    assert kinds.index("fsync") < kinds.index("replace")
    src, dst = next(c for c in calls if c[0] == "replace")[1:]
    assert os.path.dirname(src) == os.path.dirname(os.path.abspath(path)) and dst == path
    assert ember.load(path)["v"].tolist() == [1.0] * 3


# ---- damaged files ------------------------------------------------------------------------------
def _good_bytes() -> bytes:
    buf = io.BytesIO()
    ember.save({"w": ember.arange(12, dtype=ember.float32).reshape(3, 4), "n": 3, "b": ember.ones(2)}, buf)
    return buf.getvalue()


def _load_bytes(data: bytes):
    return ember.load(io.BytesIO(data))


def _header(data: bytes) -> tuple[int, dict]:
    (n,) = struct.unpack("<Q", data[:8])
    return n, json.loads(data[8:8 + n])


def _rebuild(header: dict, body: bytes) -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + body


@pytest.mark.parametrize("cut", [0, 5, 8, 20, -1, -9])
def test_truncated_files(cut):
    data = _good_bytes()
    with pytest.raises(SerializationError, match="truncated|header length"):
        _load_bytes(data[:cut] if cut else b"")


def test_bad_header_length():
    data = _good_bytes()
    with pytest.raises(SerializationError, match="bad header length"):
        _load_bytes(struct.pack("<Q", 2 ** 40) + data[8:])
    with pytest.raises(SerializationError, match="bad header length"):
        _load_bytes(struct.pack("<Q", len(data)) + data[8:])


def test_tampered_json():
    data = bytearray(_good_bytes())
    n, _ = _header(bytes(data))
    data[8 + 1] = ord("}")  # breaks the JSON
    with pytest.raises(SerializationError, match="not valid JSON"):
        _load_bytes(bytes(data))
    data = _good_bytes()
    with pytest.raises(SerializationError, match="not valid JSON"):
        _load_bytes(data[:8] + b"\xff" * n + data[8 + n:])


def test_wrong_byte_counts_and_bad_entries():
    data = _good_bytes()
    n, header = _header(data)
    body = data[8 + n:]
    h = json.loads(json.dumps(header))
    h["w"]["shape"] = [3, 5]
    with pytest.raises(SerializationError, match="wrong byte count"):
        _load_bytes(_rebuild(h, body))
    h = json.loads(json.dumps(header))
    h["w"]["dtype"] = "F64"
    with pytest.raises(SerializationError, match="wrong byte count"):
        _load_bytes(_rebuild(h, body))
    h = json.loads(json.dumps(header))
    h["w"]["dtype"] = "C64"
    with pytest.raises(SerializationError, match="unsupported dtype"):
        _load_bytes(_rebuild(h, body))
    h = json.loads(json.dumps(header))
    h["b"]["data_offsets"] = [h["b"]["data_offsets"][0] + 4, h["b"]["data_offsets"][1] + 4]
    with pytest.raises(SerializationError, match="gap|truncated"):
        _load_bytes(_rebuild(h, body))
    with pytest.raises(SerializationError, match="unexpected bytes"):
        _load_bytes(data + b"\x00" * 8)
    h = json.loads(json.dumps(header))
    h["w"]["shape"] = [3, -4]
    with pytest.raises(SerializationError, match="shape"):
        _load_bytes(_rebuild(h, body))


def test_tampered_data_and_structure_fail_the_checksum():
    data = bytearray(_good_bytes())
    data[-3] ^= 0x01  # one bit of tensor data
    with pytest.raises(SerializationError, match="checksum"):
        _load_bytes(bytes(data))
    data = _good_bytes()
    n, header = _header(data)
    header["__metadata__"]["ember.structure"] = header["__metadata__"]["ember.structure"].replace("3", "4")
    with pytest.raises(SerializationError, match="checksum"):
        _load_bytes(_rebuild(header, data[8 + n:]))
    # with the checksum removed, structure errors are still reported clearly
    del header["__metadata__"]["ember.sha256"]
    header["__metadata__"]["ember.structure"] = '{"T":"missing"}'
    with pytest.raises(SerializationError, match="missing"):
        _load_bytes(_rebuild(header, data[8 + n:]))


def test_serialization_error_is_a_runtime_error():
    assert issubclass(SerializationError, RuntimeError)
    with pytest.raises(RuntimeError):
        _load_bytes(b"\x01\x02")
