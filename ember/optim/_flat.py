"""Parameters packed into one flat buffer, so an optimizer updates them all with a few tensor ops.

PyTorch's ``foreach`` optimizers launch multi-tensor kernels; ember gets the same effect by packing:
the first step moves each parameter's values into one contiguous buffer per parameter group
(``p.data`` becomes a view of its slice, as ``p.data = ...`` would do by hand) and keeps state
tensors such as momentum buffers packed the same way. A step then gathers the gradients with one
``cat`` and updates every parameter with as many ops as one parameter needs. On a GPU that turns a
ResNet-50 SGD step's 640 small kernel launches into five; the values are exactly those of the loop
over parameters (the same elementwise formulas run on the same numbers).

Packing needs backends whose handles are plain arrays that views share (the numpy and compiled CPU
backends, CUDA, and Fusion over them), parameters of one device and dtype per group, contiguous, and
a gradient for every parameter this step; otherwise the optimizer runs its loop over parameters. A
parameter whose data is replaced later (``model.to(...)``, ``p.data = ...``, ``load_state_dict`` of the
optimizer) is noticed and the group is packed again.

>>> w = ember.nn.Parameter(ember.ones(3)); b = ember.nn.Parameter(ember.zeros(2))
>>> pack = FlatParams([w, b])
>>> pack.flat.shape, w.data_ptr() == pack.flat.data_ptr()
(ember.Size([5]), True)
"""

from __future__ import annotations

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad

__all__ = ["FlatParams", "packable"]

def _plain(device) -> bool:
    """Whether the device's backend (under autodiff) keeps plain arrays that views share: the numpy,
    compiled CPU and CUDA backends say so, and Fusion over one of them; WebGPU and remote backends don't."""
    be = device.backend
    # the class attribute, not an instance lookup: decorators forward unknown attributes to their inner backend
    be = getattr(be, "inner", be)
    if getattr(type(be), "packs_views", False):  # a lazy layer whose views are its inner backend's (Fusion)
        be = be.inner
    return bool(getattr(type(be), "plain_array_views", False))


def packable(params: list) -> bool:
    """Whether ``params`` can share one flat buffer: same plain-array device and dtype, contiguous
    leaves that are not views of something else, more than one of them."""
    if len(params) < 2:
        return False
    p0 = params[0]
    dev, dtype = p0._device, p0._dtype
    if not _plain(dev) or not dtype.is_floating_point:
        return False
    for p in params:
        if p._device != dev or p._dtype is not dtype or p._base is not None or not p.is_contiguous():
            return False
    return len({id(p) for p in params}) == len(params)


def _raw(p: Tensor):
    """The backend array behind ``p`` (inside autodiff's wrapper when there is one)."""
    h = p._h
    return h.value if hasattr(h, "value") else h


class FlatParams:
    """One parameter group's parameters as slices of ``flat``, plus state tensors packed alike."""

    def __init__(self, params: list):
        import ember
        self.params = list(params)
        self.shapes = [tuple(p._shape) for p in self.params]
        self.sizes = [p.numel() for p in self.params]
        self.offsets = []
        off = 0
        for n in self.sizes:
            self.offsets.append(off)
            off += n
        with no_grad():
            self.flat = ember.cat([p.detach().reshape(-1) for p in self.params])
            for p, v in zip(self.params, self.views(self.flat)):
                p.data = v
        self._raws = [_raw(p) for p in self.params]
        self.states: dict = {}  # state name -> (flat tensor, per-parameter views handed to state dicts)

    def views(self, flat: Tensor) -> list:
        """Each parameter's slice of a flat tensor, shaped like the parameter."""
        return [flat[o:o + n].view(s) for o, n, s in zip(self.offsets, self.sizes, self.shapes)]

    def valid(self, params: list) -> bool:
        """Whether the group still holds these parameters, each still a view of the buffer."""
        if len(params) != len(self.params):
            return False
        return all(p is q and _raw(p) is r for p, q, r in zip(params, self.params, self._raws))

    def grad(self) -> Tensor | None:
        """All gradients as one flat tensor, or None when a parameter has none this step."""
        import ember
        gs = []
        for p in self.params:
            g = p.grad
            if g is None or g._dtype is not self.flat._dtype or g._device != self.flat._device:
                return None
            gs.append(g if g.ndim == 1 else g.reshape(-1))  # cat copies: 1-d ones need no view op
        return ember.cat(gs)

    def state(self, state: dict, name: str) -> Tensor | None:
        """The flat tensor behind per-parameter state ``name``: the packed one while every parameter's
        entry is still its view; repacked from the entries when they were replaced (e.g. loaded);
        None when some parameter has no entry yet."""
        import ember
        packed = self.states.get(name)
        entries = [state.get(p, {}).get(name) for p in self.params]
        if packed is not None and all(e is v for e, v in zip(entries, packed[1])):
            return packed[0]
        if any(e is None for e in entries):
            return None
        with no_grad():
            flat = ember.cat([e.detach().reshape(-1).to(self.flat._dtype) for e in entries])
        return self.adopt(state, name, flat)

    def adopt(self, state: dict, name: str, flat: Tensor) -> Tensor:
        """Make ``flat`` the packed state ``name``: each parameter's entry becomes its view."""
        views = self.views(flat)
        for p, v in zip(self.params, views):
            state[p][name] = v
        self.states[name] = (flat, views)
        return flat


def flat_for(cache: dict, group: dict) -> FlatParams | None:
    """The group's packed parameters (packing them on first use or after they changed), or None when
    the group can't be packed."""
    params = group["params"]
    key = id(group)
    fp = cache.get(key)
    if fp is not None and fp.valid(params):
        return fp
    if not packable(params):
        cache.pop(key, None)
        return None
    fp = cache[key] = FlatParams(params)
    return fp
