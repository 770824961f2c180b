"""ember.store's safetensors reader and writer, against the safetensors package (the reference)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import safetensors
import safetensors.numpy
import safetensors.torch
import torch

import ember
from ember import store
from ember.store import SafetensorsError, StoreDtypeError, StoreError

DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def _torch_sample(name: str, shape, seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    d = getattr(torch, name)
    if name == "bool":
        return torch.rand(shape, generator=g) > 0.5
    if d.is_floating_point:
        t = (torch.randn(shape, generator=g) * 100).to(d)
        flat = t.view(-1)
        if flat.numel() >= 4:
            flat[:4] = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0]).to(d)
        return t
    info = torch.iinfo(d)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(d)


def _bits_t(t: torch.Tensor) -> bytes:
    return t.reshape(-1).contiguous().view(torch.uint8).numpy().tobytes() if t.numel() else b""


def _bits_e(t: ember.Tensor) -> bytes:
    return np.ascontiguousarray(t.numpy()).tobytes()


@pytest.mark.parametrize("shape", [(3, 4), (), (0, 5), (2, 1, 3)])
def test_reads_every_dtype_written_by_safetensors_bit_exact(tmp_path, shape):
    ref = {name: _torch_sample(name, shape) for name in DTYPES}
    path = tmp_path / "ref.safetensors"
    safetensors.torch.save_file(ref, str(path), metadata={"source": "torch"})
    got = store.load_file(path)
    order = safetensors.safe_open(str(path), "pt").offset_keys()
    assert list(got) == order if 0 not in shape else set(got) == set(order)
    for name, t in ref.items():
        e = got[name]
        assert e.dtype is getattr(ember, name) and tuple(e.shape) == tuple(t.shape)
        assert _bits_e(e) == _bits_t(t), name
    with store.safe_open(path) as f:
        assert f.metadata() == {"source": "torch"} and f.keys() == sorted(ref)


@pytest.mark.parametrize("shape", [(3, 4), (), (0, 5), (5,)])
def test_written_files_read_by_safetensors_torch_bit_exact(tmp_path, shape):
    ours = {name: ember.tensor(_torch_sample(name, shape, seed=1).float().numpy()).to(getattr(ember, name))
            if name != "bool" else ember.tensor(_torch_sample(name, shape).numpy()) for name in DTYPES}
    ours["transposed"] = ember.arange(12.0).reshape(3, 4).T  # a non-contiguous view is written contiguously
    path = tmp_path / "ours.safetensors"
    store.save_file(ours, path, metadata={"k": "v"})
    back = safetensors.torch.load_file(str(path))
    assert set(back) == set(ours)
    for name, e in ours.items():
        assert str(back[name].dtype) == "torch." + e.dtype.name and tuple(back[name].shape) == tuple(e.shape)
        assert _bits_t(back[name]) == _bits_e(e.contiguous()), name
    with safetensors.safe_open(str(path), "pt") as f:
        assert f.metadata() == {"k": "v"}
    # tensors are laid out widest element first, so each starts at a multiple of its size
    n = struct.unpack("<Q", path.read_bytes()[:8])[0]
    header = json.loads(path.read_bytes()[8:8 + n])
    assert n % 8 == 0
    for name, e in header.items():
        if name != "__metadata__":
            assert e["data_offsets"][0] % getattr(ember, {"F64": "float64", "F32": "float32", "F16": "float16",
                                                        "BF16": "bfloat16", "I64": "int64", "I32": "int32",
                                                        "I16": "int16", "I8": "int8", "U8": "uint8",
                                                        "BOOL": "bool"}[e["dtype"]]).itemsize == 0


def test_module_state_dict_exports_to_torch(tmp_path):
    ember.manual_seed(0)
    net = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.BatchNorm2d(4), ember.nn.ReLU(), ember.nn.Flatten(),
                              ember.nn.Linear(4 * 6 * 6, 5))
    net.train()
    net(ember.randn(2, 3, 8, 8))  # moves the BatchNorm running statistics
    net.eval()
    path = tmp_path / "net.safetensors"
    store.save_file(net.state_dict(), path)
    tnet = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 6 * 6, 5)).eval()
    tnet.load_state_dict(safetensors.torch.load_file(str(path)))  # strict: every key, shape and dtype fits
    x = np.random.RandomState(0).randn(2, 3, 8, 8).astype(np.float32)
    with torch.no_grad():
        want = tnet(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(net(ember.tensor(x)).detach().numpy(), want, rtol=1e-5, atol=1e-5)


def test_bytes_round_trip_matches_safetensors_package():
    t = {"a": ember.arange(6, dtype=ember.int32).reshape(2, 3), "b": ember.ones(2, dtype=ember.bfloat16)}
    data = store.save_bytes(t, {"m": "1"})
    ref = safetensors.torch.load(data)
    assert ref["a"].tolist() == [[0, 1, 2], [3, 4, 5]] and ref["b"].dtype == torch.bfloat16
    back = store.load_bytes(safetensors.torch.save({k: v for k, v in ref.items()}))
    assert back["a"].tolist() == [[0, 1, 2], [3, 4, 5]] and back["b"].dtype is ember.bfloat16


SLICES = [np.s_[1:3], np.s_[:, 2], np.s_[..., 1:], np.s_[-1], np.s_[::2, 1::3], np.s_[0, 1, 2], np.s_[...],
          np.s_[2:2], np.s_[:, :, -2:]]


@pytest.mark.parametrize("index", SLICES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int16", "bool"])
def test_get_slice_matches_safetensors(tmp_path, index, dtype):
    ref = _torch_sample(dtype, (4, 5, 6), seed=2)
    path = str(tmp_path / "s.safetensors")
    safetensors.torch.save_file({"x": ref}, path)
    with safetensors.safe_open(path, "pt") as f:
        want = ref[index] if isinstance(index, tuple) and any(isinstance(i, slice) and i.step not in (None, 1)
                                                               for i in index) else f.get_slice("x")[index]
    with store.safe_open(path) as f:
        s = f.get_slice("x")
        assert s.get_shape() == [4, 5, 6] and s.get_dtype() == {"float32": "F32", "bfloat16": "BF16",
                                                                "int16": "I16", "bool": "BOOL"}[dtype]
        got = s[index]
    assert tuple(got.shape) == tuple(want.shape)
    assert _bits_e(got) == _bits_t(want)


def test_get_slice_errors_name_the_tensor(tmp_path):
    path = tmp_path / "s.safetensors"
    store.save_file({"w": ember.zeros(3, 4)}, path)
    with store.safe_open(path) as f:
        s = f.get_slice("w")
        with pytest.raises(IndexError, match="'w'.*out of bounds for dimension 0 with size 3"):
            s[3]
        with pytest.raises(IndexError, match="too many indices"):
            s[0, 0, 0]
        with pytest.raises(ValueError, match="step must be positive"):
            s[::-1]
        with pytest.raises(TypeError, match="ints, slices"):
            s[[0, 1]]
        with pytest.raises(KeyError, match="no tensor named 'v'"):
            f.get_tensor("v")
    with pytest.raises(SafetensorsError, match="closed"):
        f.get_tensor("w")


def test_slice_reads_only_what_it_needs(tmp_path):
    """A 4 GiB tensor in a sparse file: reading two rows must not touch the rest (the process's
    peak memory stays far below the tensor's size)."""
    path = tmp_path / "big.safetensors"
    rows, cols = 1 << 16, 1 << 14  # float32: 4 GiB
    header = json.dumps({"big": {"dtype": "F32", "shape": [rows, cols], "data_offsets": [0, rows * cols * 4]},
                         "__metadata__": {"note": "sparse"}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(header)) + header)
        fh.seek(8 + len(header) + 5 * cols * 4)
        fh.write(np.arange(cols, dtype=np.float32).tobytes())  # row 5
        fh.truncate(8 + len(header) + rows * cols * 4)
    # VmHWM is this process's own peak (getrusage's ru_maxrss would include the parent's peak at fork,
    # which execve carries over: a pytest worker that ran big tests first would fail the check)
    code = f"""
import ember.store as st
f = st.safe_open({str(path)!r})
part = f.get_slice("big")[4:6, :8]
assert part.tolist() == [[0.0] * 8, [float(i) for i in range(8)]], part
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip().splitlines()[-1]) < 1_000_000  # KiB: far below 4 GiB


def test_float8_and_other_dtypes_ember_lacks(tmp_path):
    path = str(tmp_path / "f8.safetensors")
    x = np.array([0.5, -2.0, 448.0], dtype=ml_dtypes.float8_e4m3fn)
    y = np.array([1, 65535], dtype=np.uint16)
    safetensors.numpy.save_file({"f8": x, "u16": y, "ok": np.ones(2, np.float32)}, path)
    with store.safe_open(path) as f:
        assert f.get_slice("f8").get_dtype() == "F8_E4M3"
        np.testing.assert_array_equal(f.get_numpy("f8").astype(np.float32), [0.5, -2.0, 448.0])
        np.testing.assert_array_equal(f.get_numpy("u16"), [1, 65535])
        with pytest.raises(StoreDtypeError, match="'f8'.*F8_E4M3 has no ember counterpart.*get_numpy") as info:
            f.get_tensor("f8")
        assert isinstance(info.value, TypeError) and isinstance(info.value, StoreError)
        with pytest.raises(StoreDtypeError, match="U16"):
            f.get_slice("u16")[:1]
        assert f.get_tensor("ok").tolist() == [1.0, 1.0]
    with pytest.raises(StoreDtypeError, match="F8_E4M3|U16"):
        store.load_file(path)


# ---- damaged files --------------------------------------------------------------------------------
def _good(tmp_path) -> bytes:
    path = tmp_path / "good.safetensors"
    store.save_file({"w": ember.arange(12.0).reshape(3, 4), "b": ember.ones(3)}, path)
    return path.read_bytes()


def _split(data: bytes) -> tuple[dict, bytes]:
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def _join(header: dict, body: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + body


def _expect(tmp_path, data: bytes, pattern: str, key: str | None = None):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(SafetensorsError, match=pattern) as info:
        store.safe_open(path)
    assert str(path) in str(info.value) and info.value.path == str(path)
    if key is not None:
        assert info.value.key == key and repr(key) in str(info.value)
    with pytest.raises(SafetensorsError, match=pattern):
        store.load(path)
    with pytest.raises(SafetensorsError, match=pattern):
        store.load_bytes(data)


@pytest.mark.parametrize("cut", [0, 5, 8, 20, -1, -9])
def test_truncated(tmp_path, cut):
    data = _good(tmp_path)
    path = tmp_path / "cut.safetensors"
    path.write_bytes(data[:cut] if cut else b"")
    with pytest.raises(StoreError, match="truncated|header length|not a safetensors|starts with") as info:
        store.load(path)
    assert str(path) in str(info.value)
    with pytest.raises(SafetensorsError, match="truncated|header length"):
        store.safe_open(path)


def test_header_length_larger_than_the_file(tmp_path):
    data = _good(tmp_path)
    _expect(tmp_path, struct.pack("<Q", len(data)) + data[8:], "bad header length")
    _expect(tmp_path, struct.pack("<Q", 2 ** 63) + data[8:], "bad header length")


def test_bad_json(tmp_path):
    data = _good(tmp_path)
    n = struct.unpack("<Q", data[:8])[0]
    _expect(tmp_path, data[:9] + b"]" + data[10:], "not valid JSON")
    _expect(tmp_path, data[:8] + b"\xff" * n + data[8 + n:], "not valid JSON")
    header, body = _split(data)
    raw = json.dumps(header).encode()
    dup = raw[:-1] + b', "w": ' + json.dumps(header["w"]).encode() + b"}"
    _expect(tmp_path, struct.pack("<Q", len(dup)) + dup + body, "duplicate key 'w'")
    _expect(tmp_path, _join([1], b""), "not a JSON object")


def test_shapes_that_do_not_match_byte_counts(tmp_path):
    header, body = _split(_good(tmp_path))
    header["w"]["shape"] = [3, 5]
    _expect(tmp_path, _join(header, body), r"wrong byte count.*\[3, 5\] of F32 needs 60", key="w")
    header, body = _split(_good(tmp_path))
    header["b"]["dtype"] = "F64"
    _expect(tmp_path, _join(header, body), "wrong byte count", key="b")
    header["b"]["dtype"] = "F4"
    _expect(tmp_path, _join(header, body), "unsupported dtype 'F4'", key="b")
    header, body = _split(_good(tmp_path))
    header["w"]["shape"] = [3, -4]
    _expect(tmp_path, _join(header, body), "shape must be", key="w")
    header["w"]["shape"] = [3.0, 4]
    _expect(tmp_path, _join(header, body), "shape must be", key="w")


def test_offsets_out_of_range_or_overlapping(tmp_path):
    header, body = _split(_good(tmp_path))
    w, b = header["w"]["data_offsets"], header["b"]["data_offsets"]
    header["b"]["data_offsets"] = [b[0] + 4, b[1] + 4]
    _expect(tmp_path, _join(header, body), "gap or overlap|truncated")
    header, body = _split(_good(tmp_path))
    header["w"]["data_offsets"] = [w[0] + 1000, w[1] + 1000]
    _expect(tmp_path, _join(header, body), "gap or overlap")
    header, body = _split(_good(tmp_path))
    header["b"]["data_offsets"] = [header["w"]["data_offsets"][1] - 4, header["w"]["data_offsets"][1] + 8]
    _expect(tmp_path, _join(header, body), "gap or overlap")
    header, body = _split(_good(tmp_path))
    header["w"]["data_offsets"] = [8, 4]
    _expect(tmp_path, _join(header, body), "data_offsets must be", key="w")
    _expect(tmp_path, _join(*_split(_good(tmp_path))) + b"\0" * 8, "unexpected bytes")
    header, body = _split(_good(tmp_path))
    _expect(tmp_path, _join(header, body[:-4]), "truncated: the header describes")


def test_bool_bytes_other_than_zero_and_one(tmp_path):
    data = bytearray(store.save_bytes({"m": ember.tensor([True, False])}))
    data[-1] = 7
    path = tmp_path / "bool.safetensors"
    path.write_bytes(bytes(data))
    for read in (lambda: store.safe_open(path).get_tensor("m"), lambda: store.load(path),
                 lambda: store.load_bytes(bytes(data)), lambda: store.safe_open(path).get_slice("m")[1:]):
        with pytest.raises(SafetensorsError, match="'m'.*BOOL tensor holds bytes other than 0 and 1"):
            read()


def test_wrong_magic_for_load(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"GIF89a" + b"\0" * 64)
    with pytest.raises(store.UnknownFormatError, match=r"x\.bin.*not a safetensors, PyTorch.*GIF89a"):
        store.load(path)


def test_save_file_refuses_bad_input_and_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "w.safetensors"
    with pytest.raises(TypeError, match="not an ember.Tensor"):
        store.save_file({"w": np.zeros(2)}, path)
    with pytest.raises(ValueError, match="reserved"):
        store.save_file({"__metadata__": ember.zeros(1)}, path)
    with pytest.raises(TypeError, match="metadata must be a dict of str -> str"):
        store.save_file({"w": ember.zeros(1)}, path, metadata={"a": 1})
    store.save_file({"w": ember.zeros(2)}, path)
    before = path.read_bytes()

    def fail(*a, **k):
        raise OSError("simulated crash")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="simulated"):
        store.save_file({"w": ember.ones(5)}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["w.safetensors"]


def test_ember_save_files_are_readable_as_plain_safetensors(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    ember.save({"model": {"w": ember.ones(2)}, "epoch": 3}, path)
    with store.safe_open(path) as f:
        assert f.keys() == ["model.w"] and f.metadata()["format"] == "ember"
    # store.load follows ember's structure to the model's weights (the epoch is not a tensor)
    assert list(store.load(path)) == ["w"] and store.load(path, key="model")["w"].tolist() == [1.0, 1.0]
