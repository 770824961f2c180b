"""nn.Module: the base class of every layer and model, with PyTorch's semantics.

Assigning a :class:`Parameter`, a Module or (into a registered slot) a buffer to an attribute
registers it, so ``parameters()``, ``state_dict()``, ``to()`` and friends find it::

    class MLP(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = ember.nn.Parameter(ember.randn(4, 2))
            self.register_buffer("scale", ember.ones(2))

        def forward(self, x):
            return (x @ self.w) * self.scale

Registered items live in ``_parameters``, ``_buffers`` and ``_modules`` (ordered dicts, which fix
the order of ``state_dict`` keys) and are reached through ``__getattr__``.
"""

from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from .parameter import Parameter

__all__ = ["Module", "RemovableHandle"]

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])
_IncompatibleKeys.__repr__ = lambda self: ("<All keys matched successfully>" if not self.missing_keys
                                           and not self.unexpected_keys else
                                           f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
                                           f"unexpected_keys={self.unexpected_keys})")

_EXTRA_STATE = "_extra_state"


class RemovableHandle:
    """Returned by the ``register_*_hook`` methods: ``handle.remove()`` unregisters the hook.

    Also a context manager that removes the hook on exit.
    """

    _next_id = 0

    def __init__(self, hooks: dict, *extra: dict):
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1
        # weak references: a handle kept by user code must not keep a deleted module's hooks alive
        self._refs = [weakref.ref(d) for d in (hooks, *extra)]

    def remove(self) -> None:
        for r in self._refs:
            d = r()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class _HookDict(OrderedDict):
    """An OrderedDict that can be weakly referenced (plain dicts cannot)."""


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * spaces
    return lines[0] + "\n" + "\n".join(pad + line for line in lines[1:])


def _check_name(kind: str, name, module: Module, store: dict) -> None:
    """Shared validation of register_parameter / register_buffer / add_module names."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
    if hasattr(module, name) and name not in store:
        raise KeyError(f"attribute '{name}' already exists")


class Module:
    """Base class for all neural-network modules; subclasses define ``forward``.

    >>> class Scale(ember.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.s = ember.nn.Parameter(ember.tensor(2.0))
    ...     def forward(self, x):
    ...         return x * self.s
    >>> Scale()(ember.ones(2))
    tensor([2., 2.], grad_fn=<MulBackward0>)
    """

    training: bool
    _version: int = 1
    call_super_init: bool = False

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments: {args} {kwargs}")
        sa = object.__setattr__
        sa(self, "training", True)
        sa(self, "_parameters", OrderedDict())
        sa(self, "_buffers", OrderedDict())
        sa(self, "_non_persistent_buffers_set", set())
        sa(self, "_modules", OrderedDict())
        for name in ("_forward_pre_hooks", "_forward_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            sa(self, name, _HookDict())
        sa(self, "_forward_pre_hooks_with_kwargs", _HookDict())
        sa(self, "_forward_hooks_with_kwargs", _HookDict())
        sa(self, "_forward_hooks_always_called", _HookDict())

    # ---- forward -------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args: tuple, kwargs: dict):
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                res = hook(self, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {res}.")
                    args, kwargs = res
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        try:
            result = self.forward(*args, **kwargs)
        except BaseException:
            # hooks registered with always_call=True still see the call, then the error propagates
            for hid, hook in list(self._forward_hooks.items()):
                if hid in self._forward_hooks_always_called:
                    try:
                        if hid in self._forward_hooks_with_kwargs:
                            hook(self, args, kwargs, None)
                        else:
                            hook(self, args, None)
                    except Exception:  # noqa: BLE001 - the forward error is the one to report
                        pass
            raise
        for hid, hook in list(self._forward_hooks.items()):
            if hid in self._forward_hooks_with_kwargs:
                res = hook(self, args, kwargs, result)
            else:
                res = hook(self, args, result)
            if res is not None:
                result = res
        return result

    # ---- hooks ---------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args)`` before forward; it may return replacement args (a tuple, or one
        value). With ``with_kwargs=True``: ``hook(module, args, kwargs) -> None | (args, kwargs)``."""
        handle = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after forward; a non-None return replaces the output.
        ``with_kwargs=True``: ``hook(module, args, kwargs, output)``; ``always_call=True`` also runs
        it (with output None) when forward raises."""
        handle = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs,
                                 self._forward_hooks_always_called)
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` runs before this module writes its state_dict entries."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` runs after; it may edit state_dict in place."""
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` runs before this module loads its entries (it may rename keys in place)."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` runs after load_state_dict; it may edit the key lists."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ---- registration --------------------------------------------------------------------------
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name, self, self._parameters)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                            "(ember.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             "created explicitly; to express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not a parameter (running statistics, masks). Non-persistent
        buffers (``persistent=False``) are left out of ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name, self, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_type_name(tensor)}' object to buffer '{name}' "
                            "(ember Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module (or None) under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        _check_name("module", name, self, self._modules)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path: ``model.get_submodule("encoder.layers.0")``."""
        mod = self
        for item in target.split(".") if target else ():
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Replace (or with ``strict=False`` also add) the submodule at a dotted path."""
        if not target:
            raise ValueError("Cannot set the submodule without a target name!")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if not isinstance(module, Module):
            raise TypeError(f"`module` is not an nn.Module, found {type(module).__name__}")
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def _get_leaf(self, target: str, store: str, kind: str):
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in getattr(mod, store):
            raise AttributeError(f"`{name}` is not {kind}")
        return getattr(mod, name)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path: ``model.get_parameter("fc.weight")``."""
        return self._get_leaf(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path."""
        return self._get_leaf(target, "_buffers", "a buffer")

    def get_extra_state(self) -> Any:
        """Override (with set_extra_state) to put extra picklable-free state into state_dict."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state: Any) -> None:
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def _has_extra_state(self) -> bool:
        return type(self).get_extra_state is not Module.get_extra_state

    # ---- attribute protocol --------------------------------------------------------------------
    def __getattr__(self, name: str):
        # only called when normal lookup fails: look in the registries
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            reg = d.get(store)
            if reg is not None and name in reg:
                return reg[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                "(ember.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module '{name}' "
                                "(ember.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                "(ember.Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name: str, *stores) -> None:
        for s in stores:
            if name in s:
                if isinstance(s, set):
                    s.discard(name)
                else:
                    del s[name]

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_buffers", "_modules"):
            reg = self.__dict__.get(store)
            if reg is not None and name in reg:
                del reg[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        attrs = list(object.__dir__(self))
        keys = attrs + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    # ---- iteration -----------------------------------------------------------------------------
    def _named_members(self, get_members, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for k, v in get_members(mod):
                if v is None:
                    continue
                if remove_duplicate:
                    if id(v) in seen:
                        continue
                    seen.add(id(v))
                yield (mod_prefix + ("." if mod_prefix else "") + k, v)

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs; a shared parameter appears once unless remove_duplicate=False."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """This module's parameters and (with recurse) its submodules'."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, buffer) pairs, persistent or not."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Direct submodules (each once)."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """Every module of the tree, this one first (name ''), depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from m.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    # ---- modes and gradients -------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and every submodule; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode (``train(False)``): dropout off, batch norm uses running statistics."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Turn gradient tracking of every parameter on or off (freezing); returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None by default, else to zeros)."""
        for p in self.parameters():
            g = p.grad
            if g is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = g.detach().zero_()

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and then on self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- conversion ----------------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Replace every parameter's and buffer's data with ``fn(tensor)``, keeping the Parameter
        objects (so optimizers built before ``.to()`` still hold them), gradients converted too."""
        if recurse:
            for m in self.children():
                m._apply(fn)
        for p in self._parameters.values():
            if p is None:
                continue
            with no_grad():
                new = fn(p)
            if new is p:
                continue
            g = p.grad
            with no_grad():
                new_g = None if g is None else fn(g)
            _rebind(p, new)
            if new_g is not None:
                p.grad = new_g
        for k, b in self._buffers.items():
            if b is not None:
                self._buffers[k] = fn(b)
        return self

    def to(self, *args, **kwargs) -> Module:
        """Move and/or cast parameters and buffers in place: ``to(device)``, ``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)``. Only floating-point tensors change dtype."""
        device, dtype = _parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            return t.to(device=device, dtype=dtype if t.is_floating_point() else None)
        return self._apply(convert)

    def _cast_floats(self, d: dt.dtype) -> Module:
        return self._apply(lambda t: t.to(d) if t.is_floating_point() else t)

    def float(self) -> Module:
        """Cast floating-point parameters and buffers to float32."""
        return self._cast_floats(dt.float32)

    def double(self) -> Module:
        return self._cast_floats(dt.float64)

    def half(self) -> Module:
        return self._cast_floats(dt.float16)

    def bfloat16(self) -> Module:
        return self._cast_floats(dt.bfloat16)

    def type(self, dst_type) -> Module:  # noqa: A003 - torch's name
        """Cast every parameter and buffer (integers too) to ``dst_type``."""
        d = dt.as_dtype(dst_type)
        return self._apply(lambda t: t.to(d))

    def to_empty(self, *, device, recurse: bool = True) -> Module:
        """Move parameters and buffers to ``device`` without copying their values (uninitialised)."""
        from .._creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse)

    def cpu(self) -> Module:
        return self._apply(lambda t: t.to("cpu"))

    def cuda(self, device=None) -> Module:
        dev = "cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device
        return self._apply(lambda t: t.to(dev))

    # ---- state dict ----------------------------------------------------------------------------
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if self._has_extra_state():
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def state_dict(self, *, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """An OrderedDict from dotted names to parameters and persistent buffers (detached, sharing
        memory, unless keep_vars=True), in registration order, each module before its children."""
        if destination is None:
            destination = OrderedDict()
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            res = hook(self, destination, prefix, {})
            if res is not None:
                raise RuntimeError("state_dict post-hooks must edit the state_dict in place and return None")
        return destination

    def _load_from_state_dict(self, state_dict: Mapping, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list,
                              assign: bool = False) -> None:
        for hook in self._load_state_dict_pre_hooks.values():
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        local = {k: v for k, v in itertools.chain(
            self._parameters.items(),
            ((k, b) for k, b in self._buffers.items() if k not in self._non_persistent_buffers_set))
            if v is not None}
        for name, current in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected an ember.Tensor from '
                                  f"the checkpoint but received {type(value).__name__}")
                continue
            if value.shape != current.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                                  f"checkpoint, the shape in current model is {current.shape}.")
                continue
            try:
                if assign:
                    if isinstance(current, Parameter):
                        value = value if isinstance(value, Parameter) else Parameter(value, current.requires_grad)
                    setattr(self, name, value)
                else:
                    with no_grad():
                        current.copy_(value)
            except Exception as e:  # noqa: BLE001 - collected and reported with the other problems
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{current.shape} and whose dimensions in the checkpoint are {value.shape}, "
                                  f"an exception occurred: {e.args}.")
        extra_key = prefix + _EXTRA_STATE
        if self._has_extra_state():
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head, dot, _ = key[len(prefix):].partition(".")
                    if (dot and head not in self._modules) or (not dot and head not in local):
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` into this module (under no_grad).

        Returns ``(missing_keys, unexpected_keys)``. With ``strict=True`` (default) any missing or
        unexpected key raises a RuntimeError listing every problem; shape mismatches always raise.
        ``assign=True`` replaces the tensors instead of copying into them.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        sd = OrderedDict(state_dict)

        def load(module: Module, prefix: str) -> None:
            module._load_from_state_dict(sd, prefix, {}, True, missing, unexpected, errors, assign)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")
            result = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, result) is not None:
                    raise RuntimeError("load_state_dict post-hooks must return None")

        load(self, "")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected)
                              + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # ---- printing ------------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """Override to describe the module's settings inside its repr: ``Linear(in_features=2, ...)``."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({k}): " + _addindent(repr(m), 2) for k, m in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


def _type_name(x) -> str:
    if isinstance(x, Tensor):
        return x.type()
    return type(x).__name__


def _rebind(p: Tensor, new: Tensor) -> None:
    """Make parameter ``p`` hold ``new``'s data (and device) while keeping its identity and flag."""
    if new._device is p._device or new._device == p._device:
        p.data = new
        return
    rg = p.requires_grad
    src = new.detach()
    p._h, p._shape, p._dtype, p._device, p._base = src._h, src._shape, src._dtype, src._device, None
    if rg:
        p.requires_grad_(True)


def _parse_to(args: tuple, kwargs: dict):
    """(device, dtype) from Module.to's flexible signature."""
    from .._device import Device
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, dt.dtype):
            dtype = a
        elif isinstance(a, (Device, str)):
            if isinstance(a, str) and a in dt._NAMES:
                dtype = dt.as_dtype(a)
            else:
                device = a
        elif isinstance(a, bool):  # non_blocking passed positionally
            continue
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
    return device, (None if dtype is None else dt.as_dtype(dtype))
