"""ember.store: weights in and out of ember, with no PyTorch installed.

Reading
    ``load(path) -> dict[str, Tensor]``
        any weights file, the format picked by its first bytes: safetensors (ember.save files
        included), PyTorch's zip format (``torch.save`` since 1.6: ``.pt``/``.pth``/``.bin``), the
        legacy PyTorch format (``_use_new_zipfile_serialization=False`` and files from before 1.6),
        or a Hugging Face shard index (``*.index.json``). Nested checkpoints are unwrapped
        (``{"state_dict": ...}``, ``{"model": ...}``, a ``"module."`` prefix on every key) and nested
        dicts of tensors flattened to dotted names. ``key="ema"`` picks an entry explicitly.
    ``load_torch(path, *, map_location="cpu") -> object``
        the unpickled structure of a PyTorch file (dicts, lists, tuples, plain values, tensors and
        ``nn.Parameter``), through a restricted unpickler: only the globals a checkpoint needs are
        allowed, anything else raises :class:`UnsafePickleError` naming ``module.name`` and nothing in
        the file runs. Tensors that share a storage in the file share memory.
    ``safe_open(path, framework=None, device="cpu")``
        lazy, memory-mapped safetensors reader: ``keys()``, ``offset_keys()``, ``metadata()``,
        ``get_tensor(name)``, ``get_numpy(name)``, ``get_slice(name)[0:2, ...]`` (reads only the
        pages the slice touches). Usable as a context manager.
    ``load_file(path, device="cpu") -> dict[str, Tensor]``; ``load_bytes(data)`` (safetensors ``load``).
    ``unwrap_state_dict(obj, key=None)``, ``flatten_state_dict(mapping)``: the unwrapping ``load`` does.

Writing
    ``save_file(tensors, path, metadata=None)``: a safetensors file (atomic: temp file + rename),
    readable by ``safetensors.torch.load_file`` and ``torch``; ``save_bytes(tensors, metadata)``.

Into a module
    ``load_into(module, source, *, remap=[(regex, replacement)], adapter=None, strict=True,
    filter=None, dtype_cast=True) -> LoadReport`` copies a checkpoint (a path or a dict) into a
    module's parameters and buffers. ``LoadReport`` has ``applied``, ``missing``, ``unexpected``,
    ``mismatched`` (``(key, (expected shape, dtype), (got shape, dtype))``), ``cast``, ``skipped``
    and ``renamed``; ``strict=True`` raises :class:`LoadIntoError` (nothing is copied) when any list
    but ``applied``/``cast``/``skipped`` is non-empty. Adapters (``ember.store.adapters``): ``hf()``
    (``gamma``/``beta`` -> ``weight``/``bias``, LayerNorm naming), ``transpose(*patterns)`` (e.g.
    GPT-2's Conv1D weights into ``nn.Linear``), ``drop(*patterns)``, ``rename(fn)``,
    ``chain(*adapters)``. ember.nn
    keeps PyTorch's Linear and conv weight layouts, so torch checkpoints need no layout adapter.

Errors (``ember.store.errors``): every one is a :class:`StoreError` (a RuntimeError) that names the file
and, where there is one, the tensor key: :class:`SerializationError` for damaged or unrecognised files
(:class:`SafetensorsError`, :class:`TorchFileError`, :class:`UnknownFormatError`),
:class:`UnsafePickleError`, :class:`StoreDtypeError` (also a TypeError: a dtype ember lacks, such as
float8 or complex) and :class:`LoadIntoError`.

>>> import ember, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
>>> ember.store.save_file({"w": ember.ones(2, 3)}, path)
>>> with ember.store.safe_open(path) as f:
...     f.get_slice("w")[:, :2].shape
ember.Size([2, 2])
"""

from __future__ import annotations

from . import adapters
from .checkpoint import flatten_state_dict, load, unwrap_state_dict
from .errors import (
    LoadIntoError,
    SafetensorsError,
    SerializationError,
    StoreDtypeError,
    StoreError,
    TorchFileError,
    UnknownFormatError,
    UnsafePickleError,
)
from .load_into import LoadReport, load_into
from .pt import load_torch
from .safetensors import load_bytes, load_file, safe_open, save_bytes, save_file

__all__ = [
    "load", "load_torch", "safe_open", "load_file", "load_bytes", "save_file", "save_bytes",
    "unwrap_state_dict", "flatten_state_dict", "load_into", "LoadReport", "adapters",
    "StoreError", "SerializationError", "SafetensorsError", "TorchFileError", "UnknownFormatError",
    "UnsafePickleError", "StoreDtypeError", "LoadIntoError",
]
