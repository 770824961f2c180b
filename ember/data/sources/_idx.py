"""The IDX file format of MNIST and Fashion-MNIST: read (gzipped or plain) and write.

An IDX file is a 4-byte magic number -- two zero bytes, a type code, the number of dimensions --
then each dimension as a big-endian uint32, then the values in C order, big-endian.

>>> import numpy as np, tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "x-idx2-ubyte")
>>> write_idx(p, np.arange(6, dtype=np.uint8).reshape(2, 3))
>>> read_idx(p)
array([[0, 1, 2],
       [3, 4, 5]], dtype=uint8)
"""

from __future__ import annotations

import gzip
import os

import numpy as np

__all__ = ["read_idx", "write_idx"]

# type code -> big-endian numpy dtype
_CODES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_DTYPES = {np.dtype(v).newbyteorder("="): k for k, v in _CODES.items()}


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        head = f.read(2)
    # gzip is recognised by its magic bytes, not the file name, so renamed files still work
    opener = gzip.open if head == b"\x1f\x8b" else open
    try:
        with opener(path, "rb") as f:
            return f.read()
    except (OSError, EOFError) as e:  # truncated or corrupt gzip stream
        raise ValueError(f"read_idx: {path} is not a readable gzip file: {e}") from None


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (plain or gzip-compressed) into a native-endian numpy array.

    Raises FileNotFoundError for a missing file and ValueError, naming the file, for a bad magic
    number, an unknown type code, or a size that does not match the dimensions in the header.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"read_idx: no such file: {path}")
    raw = _read_bytes(path)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"read_idx: {path} is not an IDX file (its first bytes are {raw[:4]!r}, "
                         "expected two zero bytes, a type code and a dimension count)")
    code, ndim = raw[2], raw[3]
    if code not in _CODES:
        raise ValueError(f"read_idx: {path} has unknown IDX type code 0x{code:02X} "
                         f"(known: {', '.join(f'0x{c:02X}' for c in _CODES)})")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"read_idx: {path} is truncated: its header declares {ndim} dimensions "
                         f"but the file has only {len(raw)} bytes")
    dims = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, 4))
    dtype = np.dtype(_CODES[code])
    want = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if len(raw) - header != want:
        raise ValueError(f"read_idx: {path} has {len(raw) - header} bytes of data but its header "
                         f"(shape {dims}, {dtype.newbyteorder('=').name}) needs {want}")
    arr = np.frombuffer(raw, dtype, offset=header).reshape(dims)
    return arr.astype(dtype.newbyteorder("="))  # native byte order, and a writable copy


def write_idx(path: str | os.PathLike, array: np.ndarray, compress: bool | None = None) -> None:
    """Write ``array`` as an IDX file; gzip it when ``compress`` (default: when path ends in .gz)."""
    a = np.asarray(array)
    code = _DTYPES.get(a.dtype.newbyteorder("="))
    if code is None:
        raise TypeError(f"write_idx: IDX cannot store dtype {a.dtype} "
                        "(uint8, int8, int16, int32, float32 or float64)")
    if a.ndim > 255:
        raise ValueError(f"write_idx: IDX stores at most 255 dimensions, got {a.ndim}")
    path = os.fspath(path)
    body = (bytes([0, 0, code, a.ndim]) + np.asarray(a.shape, ">u4").tobytes()
            + np.ascontiguousarray(a, a.dtype.newbyteorder(">")).tobytes())
    if compress is None:
        compress = path.endswith(".gz")
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(body)
