"""``ember.compile``: capture a function's work once, then replay it without running its Python.

A training step on a fast backend spends much of its time in Python: the frontend, autograd and
Fusion's recording, for every op of every step. ``ember.compile(fn)`` records the work one call of
``fn`` issues and replays the recording on later calls:

* on ``"cpu:fused"`` (Fusion over the CPU): the Fusion layer's *tape* (ember/backend/fusion/tape.py),
  fused kernel launches with prepacked arguments, BLAS products and the other ops, on the same memory;
* on ``"cuda"``: a CUDA graph (``ember.cuda.CUDAGraph``), the same API;
* anywhere else (the numpy ``"cpu"``, ``"wgpu"``, a function using several devices): ``fn`` runs
  eagerly on every call, with the same results and no speed-up.

Calls with a new *signature* (tensor arguments' shapes, dtypes and devices; the other arguments'
values; grad mode and autocast) capture again, up to ``max_signatures`` of them; the rules are in docs/fusion.md
("Capturing a step: ember.compile").

>>> import ember
>>> w = ember.ones(3, device="cpu:fused")
>>> @ember.compile
... def f(x):
...     return (x * w).sum()
>>> [round(f(ember.full((3,), float(i), device="cpu:fused")).item(), 1) for i in range(5)]
[0.0, 3.0, 6.0, 9.0, 12.0]
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable

import numpy as np

from ._tensor import Tensor
from .backend import capture

__all__ = ["compile"]

_EAGER, _WARM, _CAPTURE, _REPLAY = "eager", "warm", "capture", "replay"
MAX_CAPTURES = 4  # captures per signature before giving up on a steady state (the function then runs eagerly)


def compile(fn: Callable | None = None, *, warmup: int = 1, max_signatures: int = 8) -> Callable:  # noqa: A001
    """Capture ``fn``'s work once and replay it on later calls (``torch.compile``'s name; a decorator too).

    The first ``warmup`` calls run ``fn`` eagerly (kernels compile, plans and optimizer state appear).
    Then calls run ``fn`` under capture, recording the work it issues, until two consecutive captures
    record the same work on the same memory (a steady state, usually the first two); every later call
    copies its tensor arguments into static input buffers and replays the recording, without running
    ``fn``'s Python. The returned tensors are static outputs that each replay overwrites (as with CUDA
    graphs): read or clone them before the next call.

    Rules (checked; breaking one raises or falls back to eager, never gives a wrong answer): inside
    ``fn`` nothing may read tensor values (``.item()``, ``print``, ``bool(t)``: CaptureSyncError);
    random ops draw fresh numbers from the default generator on each replay (an explicit generator is
    refused); Python side effects and Python numbers computed in ``fn`` happen once, at capture; an
    optimizer's options (``lr``) changed after capture trigger a new capture; grad mode and autocast
    are part of the signature. Tensor arguments that require grad make the call run eagerly.

    >>> step = ember.compile(lambda x: x * 2 + 1)
    >>> step(ember.ones(2, device="cpu:fused")).tolist()
    [3.0, 3.0]
    """
    if fn is None:
        return lambda f: compile(f, warmup=warmup, max_signatures=max_signatures)
    if not callable(fn):
        raise TypeError(f"ember.compile expects a callable, got {type(fn).__name__}")
    if int(warmup) < 1 or int(max_signatures) < 1:
        # the first call always runs eagerly: it finds the devices the function works on
        raise ValueError(f"ember.compile: warmup and max_signatures must be >= 1, got {warmup} and "
                         f"{max_signatures}")
    return Compiled(fn, int(warmup), int(max_signatures))


class Compiled:
    """A compiled function: call it like ``fn``. ``stats`` counts eager calls, captures and replays."""

    def __init__(self, fn: Callable, warmup: int, max_signatures: int):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.warmup = warmup
        self.max_signatures = max_signatures
        self._entries: dict = {}
        self.stats = {"eager": 0, "captures": 0, "replays": 0}

    def __repr__(self) -> str:
        return f"ember.compile({getattr(self.fn, '__qualname__', self.fn)!r})"

    def __get__(self, obj, objtype=None):  # a compiled method binds like a function
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if capture.capturing():  # inside another capture: just part of that one's work
            return self.fn(*args, **kwargs)
        try:
            key = (_key((args, kwargs)), _modes())
        except TypeError:  # an unhashable, non-tensor argument: no signature to replay by
            return self._eager(args, kwargs)
        e = self._entries.get(key)
        if e is None:
            if len(self._entries) >= self.max_signatures:
                return self._eager(args, kwargs)
            e = self._entries[key] = _Entry(self.warmup)
        mode = e.mode
        if mode == _REPLAY:
            if e.stale():
                e.recapture()
            else:
                self.stats["replays"] += 1
                return e.replay(args, kwargs)
            mode = e.mode
        if mode == _EAGER:
            return self._eager(args, kwargs)
        if mode == _WARM:
            return self._warm(e, args, kwargs)
        self.stats["captures"] += 1
        return e.capture(self.fn, args, kwargs)

    def _eager(self, args, kwargs):
        self.stats["eager"] += 1
        return self.fn(*args, **kwargs)

    def _warm(self, e, args, kwargs):
        """An eager warm-up call; the first one also notes which devices ``fn`` works on."""
        self.stats["eager"] += 1
        if e.device is None:
            seen: dict = {}
            for t in _tensors((args, kwargs)):
                seen[id(t._device)] = t._device
                if t.requires_grad:
                    e.mode = _EAGER
            undo = _guard_devices(None, lambda dev, what: seen.__setitem__(id(dev), dev))
            try:
                out = self.fn(*args, **kwargs)
            finally:
                undo()
            e.choose(list(seen.values()))
        else:
            out = self.fn(*args, **kwargs)
        e.calls += 1
        if e.mode == _WARM and e.calls >= e.warmup:
            e.mode = _CAPTURE
        return out


class _Entry:
    """One signature's state: warm-up, captures, the steady recording and its static buffers."""

    def __init__(self, warmup: int):
        self.mode = _WARM
        self.warmup = warmup
        self.calls = 0
        self.device = None
        self.fusion = None  # the Fusion layer recording (cpu:fused), or None for a CUDA graph
        self.statics: list = []  # (static tensor, its array) per tensor argument, in _tensors order
        self.back: list = []  # per tensor argument: whether fn writes it in place (copied back after replay)
        self.prev = None  # the previous capture's tape, for the steady-state test
        self.rec = None  # the replayed recording: a Tape or a CUDAGraph
        self.out = None
        self.optimizers: list = []
        self.params: list = []  # (parameter, value handle, array, .grad handle after capture, grad read?)
        self.captures = 0

    def choose(self, devices: list) -> None:
        """Pick the recording mechanism from the devices the function used (one, or eager)."""
        if self.mode == _EAGER:
            return
        if len(devices) != 1:
            self.mode = _EAGER
            if devices:
                warnings.warn("ember.compile: the function runs eagerly: it works on several devices ("
                              f"{', '.join(sorted(str(d) for d in devices))}) and a capture records one",
                              stacklevel=4)
            return
        dev = devices[0]
        self.device = dev
        if dev.type == "cuda":
            return
        from .backend.fusion.target import CpuTarget
        be = _fusion_of(dev)
        if be is None or not isinstance(be.target, CpuTarget):
            self.mode = _EAGER
            return
        self.fusion = be

    # ---- capture -------------------------------------------------------------------------------
    def _static_args(self, args, kwargs):
        """The arguments with each tensor replaced by its static buffer (made on the first capture)."""
        ts = _tensors((args, kwargs))
        if not self.statics:
            from .autograd.grad_mode import no_grad
            with no_grad():
                for t in ts:
                    s = t.detach().clone()
                    self.statics.append((s, None))
        else:
            self._copy_in(ts)
        it = iter([s for s, _ in self.statics])
        return _replace((args, kwargs), it)

    def capture(self, fn, args, kwargs):
        if self.device.type == "cuda":
            return self._capture_cuda(fn, args, kwargs)
        fu = self.fusion
        sargs, skw = self._static_args(args, kwargs)
        fu.flush()
        self.statics = [(s, _array(fu, s)) for s, _ in self.statics]
        from .backend.fusion.tape import Tape
        cap = _Capture(self.device, fu, Tape(fu))
        cap.open()
        try:
            out = fn(*sargs, **skw)
            if cap.tape is not None:
                fu.flush()  # everything pending runs now, recorded: the outputs are materialised
        finally:
            cap.close()
        self.captures += 1
        if cap.tainted is None:
            cap.tainted = cap.changed_options()
        if cap.tainted is not None:
            self._copy_back(args, kwargs, None)
            self._give_up(cap.tainted)
            return out
        tape = cap.tape
        self._copy_back(args, kwargs, tape)
        if self.prev is not None and tape.same_as(self.prev):
            self.mode = _REPLAY
            self.rec, self.out, self.prev = tape, out, None
            self.optimizers = list(cap.optimizers.values())
            self.params = _param_guards([o for o, _ in self.optimizers], tape)
            tape.seal()
        elif self.captures >= MAX_CAPTURES:
            self._give_up("its work or the memory it uses changed between calls (no steady state after "
                          f"{MAX_CAPTURES} captures)")
        else:
            self.prev = tape
        return out

    def _capture_cuda(self, fn, args, kwargs):
        """The CUDA path: the same rules over ``ember.cuda.CUDAGraph`` (not run on this CPU-only machine)."""
        import ember
        sargs, skw = self._static_args(args, kwargs)
        fu = _fusion_of(self.device)
        if fu is not None:
            fu.flush()
        ember.cuda.synchronize()
        g = ember.cuda.CUDAGraph()
        cap = _Capture(self.device, None, None)
        with ember.cuda.graph(g):  # the graph capture first: ember.compile's marks it as its own
            cap.open(over_cuda=True)
            try:
                out = fn(*sargs, **skw)
                if fu is not None:
                    fu.flush()  # pending fused work is launched inside the graph
            finally:
                cap.close()
        self.captures += 1
        if cap.tainted is not None:
            g.replay()  # the captured work is this call's (it was recorded, not run)
            self._give_up(cap.tainted)
            return out
        if cap.changed_options() is not None:
            g.replay()
            self._give_up(cap.changed_options())
            return out
        self.mode = _REPLAY
        self.rec, self.out = g, out
        g.replay()
        self.optimizers = list(cap.optimizers.values())
        # arguments fn modified in place (compared by value: a CUDA graph's writes aren't tracked)
        ts = _tensors((args, kwargs))
        self.back = [t is not s and not ember.equal(s, t) for (s, _), t in zip(self.statics, ts)]
        self._copy_out(ts)
        return out

    def _copy_back(self, args, kwargs, tape) -> None:
        """Arguments ``fn`` modified in place get the static buffers' values (``fn`` ran on those), as an
        eager call would have left them; ``tape``: note which buffers replays must copy back too
        (None: the capture was given up, compare the values instead)."""
        fu = self.fusion
        back = []
        for (_, arr), t in zip(self.statics, _tensors((args, kwargs))):
            src = _array(fu, t)
            if tape is not None:
                changed = id(_root_of(arr)) in tape.written
            else:
                changed = not np.array_equal(arr, src, equal_nan=arr.dtype.kind in "fc")
            if changed:
                np.copyto(src, arr)
            back.append(changed)
        self.back = back

    def _give_up(self, reason: str) -> None:
        self.mode = _EAGER
        self.prev = self.rec = self.out = None
        self.statics = []
        warnings.warn(f"ember.compile: the function runs eagerly from now on: {reason}", stacklevel=4)

    # ---- replay --------------------------------------------------------------------------------
    def stale(self) -> bool:
        """Whether the recording no longer fits: an optimizer's options changed since the capture (the
        recording has the old ones), a parameter's memory was replaced (``p.data = ...``), or a
        gradient the recording accumulates into was replaced."""
        for opt, h in self.optimizers:
            if _hyper(opt) != h:
                return True
        fu = self.fusion
        if fu is None or not self.params:
            return False
        if fu._pending or fu._writes:
            fu.flush()
        for p, fh, arr, g_out, reads in self.params:
            var = p._h
            h = getattr(var, "value", var)
            if h is not fh and _memory(h) is not arr:
                return True
            if reads:
                g = var.grad
                if g is not g_out and (g is None or _memory(g) is not _memory(g_out)):
                    return True
        return False

    def recapture(self) -> None:
        self.mode = _CAPTURE
        self.rec = self.out = self.prev = None
        self.params = []
        self.captures = 0

    def replay(self, args, kwargs):
        fu = self.fusion
        if fu is None:  # CUDA graph
            ts = _tensors((args, kwargs))
            self._copy_in(ts)
            self.rec.replay()
            self._copy_out(ts)
            return self.out
        if fu._pending or fu._writes:
            fu.flush()  # work issued before this call reads or writes memory the replay rewrites
        ts = _tensors((args, kwargs))
        srcs = []
        for (s, dst), t in zip(self.statics, ts):
            src = None
            if t is not s:
                src = _array(fu, t)
                np.copyto(dst, src)
            srcs.append(src)
        self.rec.replay()
        for (_, dst), src, back in zip(self.statics, srcs, self.back):
            if back and src is not None:  # fn writes this argument in place: so does the compiled call
                np.copyto(src, dst)
        for p, _, _, g_out, _ in self.params:  # gradients are the recording's, as backward would set them
            var = p._h
            if var.grad is not g_out:
                var.grad = g_out
        return self.out

    def _copy_in(self, ts) -> None:
        from .autograd.grad_mode import no_grad
        with no_grad():
            for (s, _), t in zip(self.statics, ts):
                if t is not s:
                    s.copy_(t)

    def _copy_out(self, ts) -> None:
        """Static inputs ``fn`` writes in place back into the caller's tensors (the CUDA path)."""
        if not any(self.back):
            return
        from .autograd.grad_mode import no_grad
        with no_grad():
            for (s, _), t, back in zip(self.statics, ts, self.back):
                if back and t is not s:
                    t.copy_(s)


class _Capture:
    """The open capture ``capture._compile[0]`` points at: the device recorded, the tape (CPU), guards
    on the other devices, the optimizers that stepped, and why the capture was given up, if it was."""

    def __init__(self, device, fusion, tape):
        self.device = device
        self.fusion = fusion
        self.tape = tape
        self.tainted = None
        self.optimizers: dict = {}
        self._undo = None

    def open(self, over_cuda: bool = False) -> None:
        capture.enter_compile(self, over_cuda)
        self._undo = _guard_devices(self.device, lambda dev, what: self.taint(
            f"{what} on device {dev}, which the capture of {self.device} doesn't record"))
        if self.fusion is not None:
            self.fusion._tape = self.tape

    def close(self) -> None:
        if self.fusion is not None:
            self.fusion._tape = None
        if capture._compile[0] is self:
            capture.leave_compile()
        if self._undo is not None:
            self._undo()  # devices made inside fn were guarded too: work on them tainted the capture
            self._undo = None

    def taint(self, reason: str) -> None:
        """Stop recording; the rest of the call runs eagerly (see ember/backend/capture.py)."""
        if self.tainted is None:
            self.tainted = reason
        if self.fusion is None:
            return  # a CUDA graph can't stop half-way: its work is this call's, replayed once at the end
        self.tape = None
        self.close()

    @staticmethod
    def random_source(seed, offset):
        """(generator, counters used) for a random op's ``seed``/``offset``: the default generator whose
        last reservation handed them out (the smallest offset past ``offset``), or None."""
        from ._random import _DEFAULTS
        best = None
        if offset is None:
            return None
        for g in _DEFAULTS.values():
            if g._seed == seed and g._offset > offset and (best is None or g._offset < best._offset):
                best = g
        return None if best is None else (best, best._offset - offset)

    def note_optimizer(self, opt) -> None:
        """``opt`` steps inside the capture: its options now are those the recording uses."""
        if id(opt) not in self.optimizers:
            self.optimizers[id(opt)] = (opt, _hyper(opt))

    def changed_options(self) -> str | None:
        """Why the recording can't be replayed if the function changed an optimizer's options after its
        step used them (a scheduler stepped inside: a replay would never change them), else None."""
        for opt, h in self.optimizers.values():
            if _hyper(opt) != h:
                return (f"it changes the options of its {type(opt).__name__} (a learning-rate scheduler "
                        "stepped inside?), which a replay would not do: step the scheduler outside the "
                        "compiled function")
        return None


# ---- guards on the other devices ------------------------------------------------------------------
class _Guard:
    """Stands in for another device's backend during a capture: work there from the capturing thread
    calls ``on_use``, then runs (other threads, a data loader's, are not the function's work)."""

    def __init__(self, backend, dev, on_use):
        self._be = backend
        self._dev = dev
        self._on_use = on_use
        self._thread = threading.get_ident()

    def __getattr__(self, name):
        return getattr(self._be, name)

    def run(self, op, inputs, attrs):
        if threading.get_ident() == self._thread:
            self._on_use(self._dev, f"op {op!r}")
        return self._be.run(op, inputs, attrs)

    def write(self, array):
        if threading.get_ident() == self._thread:
            self._on_use(self._dev, "a tensor made from host data")
        return self._be.write(array)

    def read(self, h):
        if threading.get_ident() == self._thread:
            self._on_use(self._dev, "a read of a tensor")
        return self._be.read(h)


def _guard_devices(keep, on_use) -> Callable[[], None]:
    """Put a guard on every interned device but ``keep``, and on each device made until the returned function
    removes them (a device made inside ``fn``, say ``autocast("cuda")`` naming plain cuda while the work runs on
    cuda:fused, is used only if work reaches it)."""
    from ._device import _CACHE, _ON_NEW
    swapped = []

    def guard(dev) -> None:
        if dev is keep or isinstance(dev.backend, _Guard):
            return
        be = dev.backend
        dev.backend = _Guard(be, dev, on_use)
        swapped.append((dev, be))

    for dev in list(_CACHE.values()):
        guard(dev)
    _ON_NEW.append(guard)

    def undo() -> None:
        _ON_NEW.remove(guard)
        for d, b in swapped:
            d.backend = b
        swapped.clear()
    return undo


# ---- signatures, static inputs ---------------------------------------------------------------------
def _key(obj):
    """A hashable signature of the arguments: tensors by shape/dtype/device/requires_grad, containers by
    content, everything else by value (TypeError for an unhashable one)."""
    c = obj.__class__
    if c is Tensor or isinstance(obj, Tensor):
        return ("T", tuple(obj.shape), obj.dtype, str(obj.device), obj.requires_grad)
    if c is tuple or c is list:
        return (c.__name__, tuple(_key(x) for x in obj))
    if c is dict:
        return ("dict", tuple((k, _key(v)) for k, v in obj.items()))
    hash(obj)
    return ("V", c, obj)


def _modes() -> tuple:
    """The global modes a capture bakes in: grad mode and autocast (a call under ``no_grad`` or
    ``autocast`` is another signature)."""
    from ._autocast_hooks import state
    from .autograd.grad_mode import STATE
    return STATE.grad_enabled, tuple(sorted(state.enabled.items())) if state.on else ()


def _tensors(obj, out=None) -> list:
    """The tensors in ``obj`` (nested tuples, lists and dict values), in a fixed order."""
    if out is None:
        out = []
    c = obj.__class__
    if c is Tensor or isinstance(obj, Tensor):
        out.append(obj)
    elif c is tuple or c is list:
        for x in obj:
            _tensors(x, out)
    elif c is dict:
        for x in obj.values():
            _tensors(x, out)
    return out


def _replace(obj, it):
    c = obj.__class__
    if c is Tensor or isinstance(obj, Tensor):
        return next(it)
    if c is tuple or c is list:
        return c(_replace(x, it) for x in obj)
    if c is dict:
        return {k: _replace(v, it) for k, v in obj.items()}
    return obj


def _array(fu, t: Tensor):
    """The numpy array behind tensor ``t`` on Fusion layer ``fu`` (flushing pending work on it)."""
    h = t._h
    h = getattr(h, "value", h)
    return fu.read(h)


def _root_of(a):
    from .backend.fusion.tape import _root
    return _root(a)


def _fusion_of(dev):
    """The Fusion layer in ``dev``'s backend stack, or None."""
    from .backend.fusion import Fusion
    be = dev.backend
    while be is not None and not isinstance(be, Fusion):
        be = getattr(be, "inner", None)
    return be


def _param_guards(optimizers, tape) -> list:
    """What a replay checks of the noted optimizers' parameters: each one's memory (a parameter whose
    array was replaced must be captured again), and its gradient after the capture (restored after a
    replay; a gradient the recording reads, as when gradients accumulate, must still be the same)."""
    from .backend.fusion.tape import _root
    out = []
    for opt in optimizers:
        for g in opt.param_groups:
            for p in g["params"]:
                var = p._h
                fh = getattr(var, "value", var)
                arr = _memory(fh)
                if arr is None or not hasattr(var, "grad"):
                    continue
                g_out = var.grad
                reads = g_out is not None and _memory(g_out) is not None and \
                    id(_root(_memory(g_out))) in tape.external
                out.append((p, fh, arr, g_out, reads))
    return out


def _memory(h):
    """The array behind a Fusion handle: its ``arr`` (None while pending), or the inner array itself."""
    from .backend.fusion.graph import FH
    return h.arr if h.__class__ is FH else h


def _hyper(opt) -> tuple:
    """An optimizer's options, to compare before a replay: every group's non-parameter entries."""
    from .backend.fusion.backend import _freeze
    return tuple(tuple((k, _freeze(v)) for k, v in g.items() if k != "params" and k != "param_names")
                 + (len(g["params"]),) for g in opt.param_groups)


__all__ += ["Compiled"]
