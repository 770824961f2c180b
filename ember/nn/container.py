"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict, and Identity.

They hold their items as registered submodules/parameters (keys ``"0"``, ``"1"``, ... for the
list-like ones), so ``state_dict`` keys read ``layers.0.weight`` as in PyTorch.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain, islice
from typing import Any

from .._tensor import Tensor
from .module import Module, _addindent
from .parameter import Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity"]


def _index(idx, n: int, what: str) -> int:
    """A non-negative index into n items; IndexError when out of range."""
    i = operator.index(idx)
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range for {what} of length {n}")
    return i + n if i < 0 else i


class Identity(Module):
    """Returns its input unchanged; accepts (and ignores) any constructor arguments.

    >>> ember.nn.Identity(54, unused="x")(ember.ones(2))
    tensor([1., 1.])
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input

def _delete_and_renumber(modules: OrderedDict, idx, kind: str) -> None:
    """Delete entries by index or slice, then renumber so keys stay "0".."n-1" (as PyTorch does)."""
    keys = list(modules)
    if isinstance(idx, slice):
        for k in keys[idx]:
            del modules[k]
    else:
        del modules[keys[_index(idx, len(keys), kind)]]
    items = list(modules.values())
    modules.clear()
    for i, m in enumerate(items):
        modules[str(i)] = m



class Sequential(Module):
    """Modules called in order, each on the previous one's output.

    ``Sequential(m0, m1, ...)`` names them "0", "1", ...; ``Sequential(OrderedDict(name=m))``
    keeps the given names.

    >>> seq = ember.nn.Sequential(ember.nn.Identity(), ember.nn.Identity())
    >>> len(seq), seq[1:]
    (2, Sequential(
      (1): Identity()
    ))
    """

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        i = _index(idx, len(self), "Sequential")
        return next(islice(self._modules.values(), i, None))

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        _delete_and_renumber(self._modules, idx, "Sequential")

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        out = Sequential()
        for m in chain(self, other):
            out.append(m)
        return out

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        for m in list(other):
            self.append(m)
        return self

    def __mul__(self, other: int) -> Sequential:
        if not isinstance(other, int) or isinstance(other, bool):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        out = Sequential()
        for _ in range(other):
            for m in self:
                out.append(m)
        return out

    __rmul__ = __mul__

    def __imul__(self, other: int) -> Sequential:
        if not isinstance(other, int) or isinstance(other, bool):
            raise TypeError(f"unsupported operand type(s) for *=: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        items = list(self)
        for _ in range(other - 1):
            for m in items:
                self.append(m)
        return self

    def append(self, module: Module) -> Sequential:
        """Add a module at the end (key ``str(len(self))``); returns self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert before position ``index`` (negative counts from the end); returns self."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        for m in sequential:
            self.append(m)
        return self

    def pop(self, key: int | slice) -> Module:
        v = self[key]
        del self[key]
        return v

    def forward(self, input):
        out = input
        for m in self:
            out = m(out)
        return out


class ModuleList(Module):
    """A list of submodules, registered under keys "0", "1", ....

    >>> layers = ember.nn.ModuleList([ember.nn.Identity() for _ in range(3)])
    >>> len(layers), layers[-1]
    (3, Identity())
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx) -> None:
        _delete_and_renumber(self._modules, idx, "ModuleList")

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        out = ModuleList()
        for m in chain(self, other):
            out.append(m)
        return out

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if isinstance(modules, (Module, Tensor)) or not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def pop(self, key: int | slice) -> Module:
        v = self[key]
        del self[key]
        return v

    def __repr__(self) -> str:
        # consecutive modules with the same repr print once: "(0-2): 3 x Identity()"
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        lines, start = [], 0
        for i in range(1, len(reprs) + 1):
            if i < len(reprs) and reprs[i] == reprs[start]:
                continue
            body = _addindent(reprs[start], 2)
            if i - start == 1:
                lines.append(f"({start}): {body}")
            else:
                lines.append(f"({start}-{i - 1}): {i - start} x {body}")
            start = i
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList is a container and has no forward(); iterate over it instead")


class ModuleDict(Module):
    """An ordered dict of submodules (string keys), in insertion order.

    >>> d = ember.nn.ModuleDict({"a": ember.nn.Identity()})
    >>> list(d.keys()), "a" in d
    (['a'], True)
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        """Add/overwrite from a mapping or an iterable of (key, module) pairs."""
        if isinstance(modules, (Mapping, ModuleDict)):
            for k, m in modules.items():
                self[k] = m
            return
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value pairs, but got "
                            + type(modules).__name__)
        for j, item in enumerate(modules):
            if not isinstance(item, Iterable) or isinstance(item, (str, Module)):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is "
                                + type(item).__name__)
            item = tuple(item)
            if len(item) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {len(item)}; 2 is required")
            self[item[0]] = item[1]

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict is a container and has no forward(); index it instead")


def _as_param(value):
    """Tensors stored in ParameterList/Dict become Parameters (other objects are kept as they are)."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value, value.is_floating_point())
    return value


def _size_str(p: Tensor) -> str:
    return "x".join(str(s) for s in p.shape)


class ParameterList(Module):
    """A list of parameters registered under "0", "1", ...; plain tensors are wrapped as
    Parameters, other objects are stored as they are.

    >>> pl = ember.nn.ParameterList([ember.zeros(2), ember.ones(3)])
    >>> [tuple(p.shape) for p in pl]
    [(2,), (3,)]
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_index(idx, len(self), "ParameterList")))

    def __setitem__(self, idx: int, param) -> None:
        i = _index(idx, len(self), "ParameterList")
        setattr(self, str(i), _as_param(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value) -> ParameterList:
        i = self._size
        self._size += 1
        setattr(self, str(i), _as_param(value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        if isinstance(values, Tensor) or not isinstance(values, Iterable):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        lines = []
        for i, p in enumerate(self):
            if isinstance(p, Tensor):
                lines.append(f"  ({i}): Parameter containing: [{p.dtype} of size {_size_str(p)}]")
            else:
                lines.append(f"  ({i}): Object of type: {type(p).__name__}")
        return "\n".join(lines)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterList is a container and has no forward()")


class ParameterDict(Module):
    """A dict of parameters (string keys); plain tensors become Parameters. A plain ``dict``
    argument is added in sorted key order, an OrderedDict in its own order (as PyTorch does).

    >>> pd = ember.nn.ParameterDict({"w": ember.zeros(2)})
    >>> pd["w"].requires_grad
    True
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def _key(self, key) -> str:
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        return key

    def __getitem__(self, key: str):
        self._key(key)
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self._keys[self._key(key)] = None
        setattr(self, key, _as_param(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key) -> bool:
        return key in self._keys

    def __or__(self, other: ParameterDict) -> ParameterDict:
        out = self.copy()
        out.update(other)
        return out

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters (not copies of them)."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str):
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple[str, Any]:
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        k = list(self._keys)[-1]
        return k, self.pop(k)

    def get(self, key: str, default=None):
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default=None) -> ParameterDict:
        return ParameterDict(OrderedDict((k, default) for k in keys))

    def keys(self):
        return self._keys.keys()

    def items(self):
        return [(k, self[k]) for k in self._keys]

    def values(self):
        return [self[k] for k in self._keys]

    def update(self, parameters) -> None:
        """Add/overwrite from a mapping or an iterable of (key, value) pairs."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        elif isinstance(parameters, Iterable) and not isinstance(parameters, (str, Tensor)):
            pairs = []
            for j, item in enumerate(parameters):
                if not isinstance(item, Iterable) or isinstance(item, (str, Tensor)):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be Iterable; is "
                                    + type(item).__name__)
                item = tuple(item)
                if len(item) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {len(item)}; "
                                     "2 is required")
                pairs.append(item)
        else:
            raise TypeError("ParameterDict.update should be called with an iterable of key/value pairs, but got "
                            + type(parameters).__name__)
        for k, v in pairs:
            self[k] = v

    def extra_repr(self) -> str:
        lines = []
        for k, p in self.items():
            if isinstance(p, Tensor):
                lines.append(f"  ({k}): Parameter containing: [{p.type()} of size {_size_str(p)}]")
            else:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
        return "\n".join(lines)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterDict is a container and has no forward()")
