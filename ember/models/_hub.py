"""Reading pretrained weights for ``ember.models``: find the weight files of a model directory
(single file or sharded, safetensors or PyTorch), read them with ``ember.store`` (no torch
needed), rename keys and copy them into a module.

>>> from ember.models._hub import weight_files
>>> weight_files("/nonexistent")
Traceback (most recent call last):
    ...
FileNotFoundError: no such model file or directory: '/nonexistent'
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping

from .._tensor import Tensor
from ..nn.module import Module

# in order of preference: safetensors files map lazily and never run a pickle
_SINGLE = ("model.safetensors", "pytorch_model.bin", "model.pt", "model.pth")
_INDEX = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def weight_files(path: str | os.PathLike) -> list[str]:
    """The weight files of a model: ``path`` itself if it is a file, else the directory's
    ``model.safetensors`` / ``pytorch_model.bin``, or the shards its ``*.index.json`` lists."""
    path = os.fspath(path)
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no such model file or directory: {path!r}")
    for name in _SINGLE:
        if os.path.isfile(os.path.join(path, name)):
            return [os.path.join(path, name)]
    for name in _INDEX:
        index = os.path.join(path, name)
        if os.path.isfile(index):
            with open(index, encoding="utf-8") as f:
                shards = sorted(set(json.load(f)["weight_map"].values()))
            return [os.path.join(path, s) for s in shards]
    raise FileNotFoundError(f"no weights in {path!r}: expected one of {', '.join(_SINGLE + _INDEX)}; the directory "
                            f"holds {sorted(os.listdir(path))}")


def load_checkpoint(path: str | os.PathLike) -> dict[str, Tensor]:
    """Every tensor of a model's weight files, by key, as ember tensors (via ``ember.store``)."""
    from .. import store  # imported late: the store is only needed for pretrained weights

    state: dict[str, Tensor] = {}
    for file in weight_files(path):
        loaded = store.load(file)
        for key, value in loaded.items():
            if isinstance(value, Tensor):
                state[key] = value
    return state


def load_weights(module: Module, state: Mapping[str, Tensor], *, rename: Callable[[str], str | None] | None = None,
                 strict: bool = True) -> tuple[list[str], list[str]]:
    """Copy ``state`` into ``module`` after ``rename`` maps each checkpoint key to the module's key
    (None drops the key). Returns ``(missing, unexpected)``; with ``strict`` any of either raises
    a RuntimeError that lists them. Values are cast to each parameter's dtype."""
    renamed: dict[str, Tensor] = {}
    for key, value in state.items():
        new = rename(key) if rename else key
        if new is not None:
            renamed[new] = value
    own = module.state_dict()
    missing = [k for k in own if k not in renamed]
    unexpected = [k for k in renamed if k not in own]
    if strict and (missing or unexpected):
        raise RuntimeError(f"{type(module).__name__}: the checkpoint does not fit the model: missing keys {missing}, "
                           f"unexpected keys {unexpected}")
    module.load_state_dict({k: v for k, v in renamed.items() if k in own}, strict=False)
    return missing, unexpected


def from_file(module: Module, path: str | os.PathLike, *, rename: Callable[[str], str | None] | None = None,
              strict: bool = True) -> Module:
    """Load the weights at ``path`` (a file or a model directory) into ``module``; returns it."""
    load_weights(module, load_checkpoint(path), rename=rename, strict=strict)
    return module
