"""``ember.store.load``: any weights file to a flat ``{name: Tensor}`` dict, and the unwrapping it does.

The format is picked from the first bytes, never from the file name:

* ``PK\\x03\\x04`` -> PyTorch zip format (:func:`~ember.store.load_torch`)
* a little-endian u64 header length followed by ``{`` -> safetensors (ember.save files too)
* ``\\x80`` (a pickle) -> the legacy PyTorch format
* a JSON object with a ``weight_map`` -> a Hugging Face shard index (``model.safetensors.index.json``,
  ``pytorch_model.bin.index.json``): the shards beside it are loaded and merged

>>> sd = ember.store.load("pytorch_model.bin")   # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import struct
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from .._tensor import Tensor
from .errors import SerializationError, StoreError, UnknownFormatError
from .pt import MAGIC_NUMBER, load_torch
from .safetensors import MAX_HEADER, load_file, safe_open

__all__ = ["load", "detect_format", "unwrap_state_dict", "flatten_state_dict", "WRAPPER_KEYS", "PREFIXES"]

# keys under which training code commonly nests the weights, tried in this order
WRAPPER_KEYS = ("state_dict", "model_state_dict", "model", "module", "net", "network", "weights", "params")
# prefixes wrappers add to every key: DataParallel/DistributedDataParallel, torch.compile
PREFIXES = ("module.", "_orig_mod.")


def detect_format(path) -> str:
    """``"safetensors"``, ``"zip"``, ``"legacy"`` or ``"index"`` from a file's first bytes."""
    where = os.fspath(path)
    with open(where, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(512)
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if len(head) >= 9:
        n = struct.unpack("<Q", head[:8])[0]
        # a JSON header, or a plausible header length (the reader then says what is wrong)
        if head[8:9] == b"{" or n <= min(size - 8, MAX_HEADER):
            return "safetensors"
    if (head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")) or \
            head.startswith((b"\x8a\x0a", b"L%dL" % MAGIC_NUMBER)):  # protocol 2+, or the magic in protocol 1/0
        return "legacy"
    if head.lstrip()[:1] == b"{":  # JSON: a shard index (checked when it is read)
        return "index"
    if len(head) >= 262 and head[257:262] == b"ustar":
        raise UnknownFormatError("a tar archive: PyTorch's tar format (before version 0.4) is not supported; load it "
                                 "with an old torch and re-save it", path=where)
    raise UnknownFormatError(f"not a safetensors, PyTorch (zip or legacy) or shard-index file (it starts with "
                             f"{head[:12]!r})", path=where)


def unwrap_state_dict(obj: Any, key: str | None = None) -> Any:
    """The state dict inside a checkpoint.

    With ``key``, ``obj[key]`` (dots descend: ``"model.ema"``). Otherwise, while ``obj`` is a dict
    that is not all tensors, descend into the first of :data:`WRAPPER_KEYS` that holds a dict.
    Finally strip a prefix in :data:`PREFIXES` (``"module."``) that every key carries.

    >>> unwrap_state_dict({"epoch": 3, "model": {"module.fc.bias": 1}})
    {'fc.bias': 1}
    """
    if key is not None:
        for part in key.split("."):
            if not isinstance(obj, Mapping) or part not in obj:
                have = list(obj)[:10] if isinstance(obj, Mapping) else type(obj).__name__
                raise StoreError(f"the checkpoint has no entry {key!r} (at {part!r}; it has {have})")
            obj = obj[part]
    else:
        while isinstance(obj, Mapping) and not all(isinstance(v, Tensor) for v in obj.values()):
            inner = next((obj[k] for k in WRAPPER_KEYS if isinstance(obj.get(k), Mapping)), None)
            if inner is None:
                break
            obj = inner
    if isinstance(obj, Mapping):
        stripped = True
        while stripped and obj:
            stripped = False
            for p in PREFIXES:
                if all(isinstance(k, str) and k.startswith(p) for k in obj):
                    obj = type(obj)((k[len(p):], v) for k, v in obj.items()) if isinstance(obj, dict) else \
                        {k[len(p):]: v for k, v in obj.items()}
                    stripped = True
    return obj


def flatten_state_dict(obj: Mapping, prefix: str = "") -> dict[str, Tensor]:
    """Nested dicts of tensors as one flat dict with dotted names; ``nn.Parameter`` becomes a plain tensor.

    Raises StoreError listing the entries that are not tensors (use :func:`load_torch` to see them).
    """
    out: dict[str, Tensor] = {}
    bad: list[str] = []

    def walk(node: Mapping, at: str, depth: int) -> None:
        if depth > 64:
            raise StoreError(f"the checkpoint nests dicts more than 64 deep at {at!r}")
        for k, v in node.items():
            name = f"{at}{k}"
            if isinstance(v, Tensor):
                out[name] = v.detach() if v.requires_grad or type(v) is not Tensor else v
            elif isinstance(v, Mapping):
                walk(v, name + ".", depth + 1)
            else:
                bad.append(f"{name} ({type(v).__name__})")

    if not isinstance(obj, Mapping):
        raise StoreError(f"the checkpoint holds a {type(obj).__name__}, not a dict of tensors; use "
                         "ember.store.load_torch to read it as it is")
    walk(obj, prefix, 0)
    if bad:
        raise StoreError(f"the checkpoint has entries that are not tensors: {', '.join(bad[:8])}"
                         f"{'...' if len(bad) > 8 else ''}; pass key=... to pick the state dict, or use "
                         "ember.store.load_torch to read the whole structure")
    return out


def _load_index(where: str, map_location) -> dict[str, Tensor]:
    try:
        with open(where, encoding="utf-8") as fh:
            index = json.load(fh)
    except (UnicodeDecodeError, ValueError) as e:
        raise SerializationError(f"the shard index is not valid JSON ({e})", path=where) from None
    wm = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(wm, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in wm.items()):
        raise SerializationError("a shard index needs a 'weight_map' of tensor name -> shard file", path=where)
    folder = os.path.dirname(os.path.abspath(where))
    out: dict[str, Tensor] = OrderedDict()
    for shard in dict.fromkeys(wm.values()):
        if os.path.basename(shard) != shard or shard in (".", ".."):
            raise SerializationError(f"shard {shard!r} is not a file name beside the index", path=where)
        part = load(os.path.join(folder, shard), map_location=map_location)
        for name in part:
            if wm.get(name) == shard:
                out[name] = part[name]
    missing = [k for k in wm if k not in out]
    if missing:
        raise SerializationError(f"the index lists tensors its shards lack: {missing[:6]}", path=where)
    return out


def load(path, *, key: str | None = None, map_location="cpu") -> dict[str, Tensor]:
    """Load any weights file as a flat ``{name: Tensor}`` dict, the format picked by its first bytes.

    PyTorch files are read without torch (see :func:`load_torch`), then unwrapped
    (:func:`unwrap_state_dict`, ``key`` picks an entry) and flattened (:func:`flatten_state_dict`).

    >>> import ember, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "w.bin")
    >>> ember.store.save_file({"b": ember.zeros(2)}, p)
    >>> ember.store.load(p)
    {'b': tensor([0., 0.])}
    """
    where = os.fspath(path)
    fmt = detect_format(where)
    if fmt == "safetensors":
        from .._device import device as _device
        dev = "cpu" if map_location is None or isinstance(map_location, dict) else _device(map_location)
        with safe_open(where) as f:
            meta = f.metadata() or {}
        if meta.get("format") == "ember" and "ember.structure" in meta:
            # an ember.save checkpoint: its structure says which tensors are the model's
            from ..serialization import load as ember_load
            sd: Any = ember_load(where, map_location=dev)
        else:
            sd = load_file(where, device=dev)
    elif fmt == "index":
        sd = _load_index(where, map_location)
    else:
        sd = load_torch(where, map_location=map_location)
    return flatten_state_dict(unwrap_state_dict(sd, key))
