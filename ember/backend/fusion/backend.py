"""Fusion(inner): the backend decorator that records ops lazily and runs them as fused kernels.

``run`` records fusible ops (elementwise, casts, sum/mean/amax/amin, views of pending values,
in-place writes into whole buffers) into a pending graph and returns a pending :class:`FH`; any
other op is a *sync point*: the pending graph is flushed (:mod:`.schedule`), then the op runs on
``inner`` with real arrays. ``read``, ``storage_offset``, ``data_ptr`` and a bound on the pending
graph's size also flush.

Semantics kept exact:

* views of pending values read through strides and are rebuilt as real views when synced;
* an in-place write (``assign`` or ``add_``, ...) into a whole buffer is recorded as a pending
  write; later reads of that storage see the new value (the write's expression is forwarded to
  them), earlier pending reads see the old one (the schedule orders them first, or snapshots);
* ``storage()`` of a pending value is a token that stays its identity after it is materialised,
  so autograd's saved-tensor version checks keep working.

How each kind of op is recorded lives in recording.py (the Recorder mixin); this module holds the
protocol, the handles and the window's signature.

While ``_tape`` is set (an ``ember.compile`` capture, see tape.py) every piece of work a flush or a
sync runs is also appended to the tape, and host reads are refused (CaptureSyncError).
"""

from __future__ import annotations

import math
import os
import sys
import weakref

from ..base import draws_random
from . import composites, products, replay, schedule
from .codegen import ctype
from .composites import COVERED
from .graph import FH, Buf, N, load
from .ops import ELEMENTWISE, REDUCTIONS, VIEWS
from .recording import _SCALARS, Recorder, contiguous_strides
from .switch import switched
from .target import target_for

_DEBUG = os.environ.get("EMBER_DEBUG", "") not in ("", "0")
_STATE = {"enabled": os.environ.get("EMBER_FUSION", "1") not in ("0", "off", "false")}
_FREE = VIEWS | {"as_strided"}  # views of memory: no kernel, not counted as launches
MAX_PENDING = 1024  # ops recorded before a forced flush (keeps trees, and flush latency, bounded)


def is_enabled() -> bool:
    """Whether Fusion records lazily (``EMBER_FUSION=0`` or :func:`enabled` turn it off)."""
    return _STATE["enabled"]


def enabled(flag: bool = True):
    """Turn fusion on or off inside a ``with`` block (off: every op runs eagerly on the inner backend).

    >>> from ember.backend import fusion
    >>> with fusion.enabled(False):
    ...     pass  # ops here run one by one, for comparison
    """
    return switched(_STATE, flag)


class Fusion(Recorder):
    """Lazy recording and kernel fusion over ``inner`` (whose handles cube can launch on).

    >>> from ember.backend.numpy import Numpy
    >>> be = Fusion(Numpy())
    """

    # views of memory are the inner backend's views and a write into a storage is seen through its views:
    # optimizers may pack parameters into one buffer when the inner backend's views share memory
    # (ember.optim._flat checks the inner backend's plain_array_views)
    packs_views = True

    def __init__(self, inner, min_elements: int | None = 0):
        self.inner = inner
        # storages the program also holds as host arrays (from_numpy, .numpy(): numpy arrays on the CPU
        # target; see share()): id -> weakref. Ops on them run at once, so a write through the host array is seen
        # by the ops after it and an ember write by the host reads after it, as without fusion.
        self._host: dict = {}
        self.name = f"fusion({inner.name})"
        self.device_type = inner.device_type
        self.target = target_for(getattr(inner, "cube_device", "cpu"), inner)
        self._shares_host = getattr(self.target, "shares_host", False)
        # the cost model: an op whose tensor inputs are all in memory and have fewer elements than this
        # runs at once on the inner backend (recording it costs more host time than fusing it saves);
        # 0 records everything (the ":fused" devices), None takes $EMBER_FUSION_MIN or the target's figure
        if min_elements is None:
            min_elements = os.environ.get("EMBER_FUSION_MIN") or self.target.eager_below
        self.min_elements = int(min_elements)
        self._composed = getattr(self.target, "composed", frozenset())  # optional ops left to the frontend
        self._split_min = getattr(self.target, "split_min", 0)  # reductions to one value done in two stages
        self._types = self.target.types  # cube types the target fuses (None: every fusible one)
        self._dtype_fuses: dict = {}  # dtype -> whether the target fuses it (see _recordable)
        self._unfused = getattr(self.target, "unfused", frozenset())  # ops the target computes differently
        self._pending: list = []  # weakrefs to pending handles recorded since the last flush
        self._writes: dict = {}  # storage id -> (dst Buf, value node, dst array): the last pending write
        self._alias: dict = {}  # id(array) -> (weakref(array), token) for materialised pending results
        self.stats = {"kernels": 0, "inner_ops": 0, "flushes": 0, "views": 0, "plan_hits": 0, "plans": 0,
                      "ops_replayed": 0}
        self._known: dict = {}  # id(inner array) -> what lifting it asked (see _remember)
        self._dtype_of = inner.dtype
        self._strides_of = inner.strides
        self._shape_of = inner.shape
        self._meta_of = getattr(inner, "meta", None) or (lambda h: (inner.shape(h), inner.dtype(h)))
        # the recording window's structural signature (see schedule.py: a flush whose signature was
        # seen before replays that flush's plan); _h hashes it incrementally as ops are recorded
        self._plans: dict = {}
        self._memos: dict = {}  # window signature hash after an op -> its replay.OpMemo
        self._serial = 0
        self._busy = 0  # > 0 while an op is being recorded (a flush then taints the new window)
        self._tape = None  # an open ember.compile capture's Tape (tape.py): the work run is also recorded
        self._new_window(False)

    def _new_window(self, tainted: bool) -> None:
        self._serial += 1
        self._sig: list = []  # structural descriptors of the recorded ops and registered leaves
        self._h = 0
        self._leaves: list = []  # concrete Bufs read or written in this window, by slot
        self._sids: dict = {}  # storage id -> first leaf slot on it (aliasing is structure)
        self._scal: list = []  # Python scalar values, by slot (kernel arguments, not structure)
        self._srcs: list = []  # (op, inputs, attrs, k) of single ops that may run on the inner backend
        self._lifted: dict = {}  # id(inner array) -> the FH standing for it in this window (see _lift)
        self._tainted = tainted  # a flush in the middle of recording an op: not cacheable
        # replay.py: ops of a window seen before are replayed from memos (logged here) until one isn't known
        self._log: list | None = None if tainted or not replay.enabled() else []
        # every op recorded so far was replayable: remember the next one (not while replay is off)
        self._learning = self._log is not None

    def __repr__(self) -> str:
        return f"Fusion({self.inner!r})"

    # ---- handles ---------------------------------------------------------------------------------
    def _wrap(self, arr) -> FH:
        """A handle for inner array ``arr`` in memory, its geometry from the memo of arrays seen before."""
        k = self._known.get(id(arr))
        if k is not None and k.ref() is arr:
            return FH(k.shape, k.dtype, k.strides, arr=arr)
        return FH(tuple(self._shape_of(arr)), self._dtype_of(arr), tuple(self._strides_of(arr)), arr=arr)

    def _remember(self, fh: FH, storage, flat, strides, offset) -> None:
        """Keep what lifting inner array ``fh.arr`` into a window asked of the inner backend and the target:
        a parameter or an input tensor is read by every step, and those questions are a few microseconds each
        on CuPy. Weak references only (the memo must not keep memory alive); the launch array is kept only
        when it is the array itself."""
        arr = fh.arr
        try:
            ref, sref = weakref.ref(arr), weakref.ref(storage) if flat is arr else None
        except TypeError:  # a handle that can't be weakly referenced: asked again next time
            return
        if len(self._known) >= 4096:
            self._known = {key: e for key, e in self._known.items() if e.ref() is not None}
            if len(self._known) >= 4096:
                self._known.clear()
        self._known[id(arr)] = _Lifted(ref, fh, sref, strides, offset)

    def _track(self, fh: FH) -> FH:
        fh.idx = len(self._pending)
        self._pending.append(weakref.ref(fh))
        return fh

    def _leaf(self, fh: FH) -> N:
        """The expression reading ``fh``'s value."""
        if fh.arr is None:
            if fh.node is None:
                raise _failed(fh)
            return fh.node
        buf = fh.buf
        if buf is None:
            node = self._load_concrete(fh)
            buf = fh.buf
        else:
            node = fh.node
        w = buf.win
        if w is None or w[0] != self._serial:
            self._register(fh)
        if self._writes:
            w = self._writes.get(buf.sid)
            if w is not None:  # a pending write replaced this storage's contents: read its value
                dbuf, value, darr = w
                ptr = self.target.ptr
                if fh.arr.shape == darr.shape and ptr(fh.arr) == ptr(darr) and \
                        fh.strides == contiguous_strides(fh.shape):
                    return value
                self.flush()  # a partial view of a pending write: run the write first
        return node

    def _load_concrete(self, fh: FH) -> N:
        arr = fh.arr
        k = self._known.get(id(arr))
        if k is not None and k.ref() is not arr:
            k = None
        storage = k.storage() if k is not None and k.storage is not None else None  # (None: dead, or not kept)
        if storage is not None:  # the array itself is its launch array (CUDA): nothing to ask
            flat, strides, offset = arr, k.strides_in, k.offset
        else:
            storage = self.inner.storage(arr)
            r = self.target.flat(arr, storage)
            if r is None:  # memory cube can't index (negative strides, foreign base): read a copy
                arr = self.target.copy(arr)
                storage = self.inner.storage(arr)
                r = self.target.flat(arr, storage)
            elif k is None:
                self._remember(fh, storage, *r)
            flat, strides, offset = r
        if strides is None:
            strides = contiguous_strides(fh.shape)
        buf = Buf(flat, fh.shape, fh.dtype)
        buf.sid = id(storage)
        buf.keep = storage  # the id stays valid while the load is pending
        node = load(buf, fh.shape, strides, offset, fh.dtype)
        fh.buf = buf
        fh.node = node
        return node

    # ---- the window's structural signature -------------------------------------------------------
    def _register(self, fh: FH) -> int:
        """The leaf slot of concrete ``fh``'s Buf in this window (registered on first use, with its
        geometry and storage aliasing as structure)."""
        buf = fh.buf
        if buf is None:
            self._load_concrete(fh)
            buf = fh.buf
        w = buf.win
        if w is not None and w[0] == self._serial:
            return w[1]
        slot = len(self._leaves)
        self._leaves.append(buf)
        buf.win = (self._serial, slot)
        alias = self._sids.setdefault(buf.sid, slot)
        self._note(("L", fh.shape, fh.dtype, fh.node.attrs, alias))
        return slot

    def _note(self, desc) -> None:
        self._sig.append(desc)
        self._h = hash((self._h, desc))

    def _describe(self, op, inputs, attrs) -> tuple:
        """What the structure of a recorded op depends on: its name, attributes, and per input the
        window position of a pending handle, the leaf slot of a concrete one, or a scalar's type."""
        d = []
        for x in inputs:
            c = x.__class__
            if c is FH:
                if x.arr is None:
                    d.append(x.idx)
                else:  # (run() records no op with an input of a dtype the target doesn't fuse)
                    d.append(-1 - self._register(x))
            elif c in _SCALARS or x is None:
                d.append(c)
            else:
                d.append(("?", _freeze(x)))
        return (op, tuple(d), _freeze(attrs) if attrs else ())

    def _scalar(self, value, shape, dtype) -> N:
        """A scalar argument node: its value lives in the window's scalar slots, not in the key."""
        slot = len(self._scal)
        self._scal.append(value)
        return N("sc", (slot,), shape, dtype, value)

    def _src(self, node: N, op, inputs, attrs) -> None:
        """Mark ``node`` as a single op on memory (run on the inner backend if alone at the flush)."""
        node.src = (op, inputs, attrs, len(self._srcs))
        self._srcs.append(node.src)

    def _ctype(self, dtype) -> str | None:
        """The cube type of ``dtype`` when this target fuses it, else None."""
        t = ctype(dtype)
        if t is not None and self._types is not None and t not in self._types:
            return None
        return t

    # ---- protocol --------------------------------------------------------------------------------
    def run(self, op: str, inputs: tuple, attrs: dict):
        if op in _RECORDABLE and _STATE["enabled"]:
            lifted = self._recordable(inputs)
            if lifted is not None:
                self._busy += 1
                try:
                    desc = self._describe(op, lifted, attrs)
                    self._note(desc)
                    r = None
                    if self._log is not None:
                        memo = self._memos.get(self._h) if replay.enabled() else None
                        if memo is not None and memo.n_sig == len(self._sig) and memo.desc == desc:
                            r = replay.replay(self, memo, op, lifted, attrs)
                        if r is None:
                            replay.materialise(self)
                    if r is None:
                        r = self._record_and_learn(op, lifted, attrs, desc) if self._learning else \
                            self._record(op, lifted, attrs)
                finally:
                    self._busy -= 1
                if r is not None and r is not replay.PASS:
                    # the size bound flushes between ops, never inside one: a window cut inside an op
                    # can't be replayed (tainted), so a long step would re-analyse that window every time
                    if len(self._pending) >= MAX_PENDING:
                        self.flush()
                    return r
        return self._pass(op, inputs, attrs)

    def _record_and_learn(self, op: str, inputs: tuple, attrs: dict, desc: tuple):
        """:meth:`_record`, remembering how to replay the op when a later window reaches this point."""
        h = self._h
        mark = (len(self._sig), len(self._pending), len(self._scal), len(self._srcs), len(self._leaves))
        r = self._record(op, inputs, attrs)
        memo = replay.learn(self, desc, op, inputs, attrs, r, mark)
        if memo is None:
            self._learning = False  # ops after this one are reached by recording, never replayed
        else:
            if len(self._memos) >= replay.MAX_MEMOS:
                self._memos.clear()
            self._memos[h] = memo
        return r

    def _record(self, op: str, inputs: tuple, attrs: dict):
        """The pending handle(s) of ``op``, or None when it is not recorded (then it syncs)."""
        if True:
            if op in ELEMENTWISE:
                r = self._elementwise(op, inputs, attrs)
                if r is not None:
                    return r
            elif op in REDUCTIONS:
                r = self._reduce(op, inputs, attrs)
                if r is not None:
                    return r
            elif op in VIEWS or op == "contiguous":
                r = self._view(op, inputs, attrs)
                if r is not None:
                    return r
            elif op in COVERED:
                r = composites.run(self, op, inputs, attrs)
                if r is not None:
                    return r
            elif op == "masked_fill":
                r = self._masked_fill(*inputs)
                if r is not None:
                    return r
            elif op == "matmul":
                r = products.record(self, *inputs) if len(inputs) == 2 and not attrs else None
                if r is not None:
                    return r
            elif op == "assign":
                r = self._inplace(inputs[0], inputs[1])
                if r is not None:
                    return r
            elif op[-1] == "_" and op[:-1] in ELEMENTWISE:
                x = inputs[0]
                if x.__class__ is FH:
                    r = self._elementwise(op[:-1], inputs, attrs)
                    if r is not None:
                        w = self._inplace(x, r)
                        if w is not None:
                            return w
            elif op[-1] == "_" and op[:-1] in COVERED:
                x = inputs[0]
                if x.__class__ is FH:
                    r = composites.run(self, op[:-1], inputs, attrs)
                    if r is not None:
                        w = self._inplace(x, r)
                        if w is not None:
                            return w
        return None

    def _recordable(self, inputs):
        """``inputs`` with every tensor as an FH (memory lifted into this window), or None when the op
        runs at once: all its tensor inputs are in memory and small (the cost model), one is memory the
        program also holds as a host array, or one has a dtype the target doesn't fuse (a bfloat16
        product under autocast: such an op is not described into the window first)."""
        limit, small, lift = self.min_elements, bool(self.min_elements), False
        for x in inputs:
            c = x.__class__
            if c is FH:
                if x.arr is None:
                    small = False
                elif small and math.prod(x.shape) >= limit:
                    small = False
            elif c in _SCALARS or x is None:
                continue
            else:  # the inner backend's own array: a value in memory
                lift = True
                if small:
                    try:
                        n = x.size  # numpy's and CuPy's arrays
                    except AttributeError:  # a handle without it (WebGPU's): its shape's product
                        n = math.prod(x.shape)
                    if n >= limit:
                        small = False
        if small:
            return None
        known, ctype_of = self._dtype_fuses, self._ctype
        for x in inputs:
            c = x.__class__
            if c is FH:
                dt = x.dtype
            elif c in _SCALARS or x is None:
                continue
            else:
                dt = self._dtype_of(x)
            ok = known.get(dt)
            if ok is None:
                ok = known[dt] = ctype_of(dt) is not None
            if not ok:
                return None
        if self._host and self._on_host(inputs):
            return None
        if not lift:
            return inputs
        return tuple([self._lift(x) if x.__class__ is not FH and x.__class__ not in _SCALARS and x is not None
                      else x for x in inputs])

    def _lift(self, arr) -> FH:
        """The handle standing for inner array ``arr`` in this window (one per array, so every read of it
        is one leaf)."""
        fh = self._lifted.get(id(arr))
        if fh is None:
            fh = self._lifted[id(arr)] = self._wrap(arr)  # holds arr: the id stays its own while cached
        return fh

    def _on_host(self, inputs) -> bool:
        """Whether a tensor input's memory is shared with a host array the program holds."""
        host, storage = self._host, self.inner.storage
        for x in inputs:
            c = x.__class__
            if c is FH:
                if x.arr is None:
                    continue
                x = x.arr
            elif c in _SCALARS or x is None:
                continue
            r = host.get(id(storage(x)))
            if r is not None and r() is not None:
                return True
        return False

    def share(self, h):
        """Memory the program now reads or writes outside the op stream (a host array from ``from_numpy``,
        ``.numpy()`` or DLPack, a cube kernel launched on a tensor): pending work that computes, reads or
        writes it runs now, and on the CPU target later ops on it run at once (see ``_host``), so the
        program's own reads and writes happen in program order with the tensor's ops. Returns the inner
        array holding ``h``'s value. The frontend and cube's runtime call it where it exists."""
        arr = self._memory(h)
        st = self.inner.storage(arr)
        if id(st) in self._sids:  # a pending op reads this memory: it must not see what the program writes
            self.flush()
        if self._shares_host:
            key, host = id(st), self._host
            try:
                host[key] = weakref.ref(st, lambda _, key=key: host.pop(key, None))
            except TypeError:  # a storage that can't be weakly referenced: not a host array
                pass
        return arr

    def _memory(self, h):
        """The inner array holding handle ``h``'s value now (pending work on it, or a pending write
        anywhere, runs first)."""
        if h.__class__ is FH:
            if h.arr is None or self._writes:  # a pending write may target this memory
                self.flush()
                if h.arr is None:
                    raise _failed(h)
            return h.arr
        if self._writes:
            self.flush()
        return h

    def _pass(self, op, inputs, attrs):
        """Run ``op`` on the inner backend now (the sync point). Handles in memory are the inner
        backend's own arrays, so an op on them costs one call; materialised pending results (FH) are
        unwrapped, and an op returning one of its inputs (in-place) returns that input's handle."""
        if (self._pending or self._writes) and self._needs_flush(op, inputs):
            self.flush()
        if _DEBUG:
            print(f"[ember.fusion] sync: {op} on the inner backend", file=sys.stderr, flush=True)
        self.stats["views" if op in _FREE else "inner_ops"] += 1
        wrapped = False
        for x in inputs:
            if x.__class__ is FH:
                wrapped = True
                break
        vals = tuple([x.arr if x.__class__ is FH else x for x in inputs]) if wrapped else inputs
        tape = self._tape
        if tape is None:
            out = self.inner.run(op, vals, attrs)
        else:
            src = tape.random_source(op, attrs) if draws_random(op, attrs) else None
            out = self.inner.run(op, vals, attrs)
            if src is not None:  # replays draw fresh numbers from the generator, moving it as eager calls do
                tape.random(src, self.inner.run, op, vals, attrs, out)
            else:
                self._tape_inner(op, vals, attrs, out)
        if not wrapped:
            return out
        if out.__class__ is tuple:
            return tuple([_same_handle(o, inputs, vals) for o in out])
        return _same_handle(out, inputs, vals)

    def _needs_flush(self, op, inputs) -> bool:
        """An op on the inner backend must see pending results and writes; one that writes must
        also run after pending reads. An op on memory nothing pending touches can run right away."""
        writes = self._writes
        # an in-place op must also wait for pending reads of the memory it writes: the window's leaves
        # (_sids) name every storage it reads or writes
        touched = self._sids if op[-1] == "_" or op == "assign" else None
        tensors = False
        for x in inputs:
            c = x.__class__
            if c is FH:
                if x.arr is None:
                    return True
                x = x.arr
            elif c in _SCALARS or x is None:
                continue
            tensors = True
            if writes or touched:
                sid = id(self.inner.storage(x))
                if sid in writes or (touched is not None and sid in touched):
                    return True
        return touched is not None and not tensors  # an in-place op on no tensor: keep the old order

    def supports(self, op: str) -> bool:
        # composites stay whole at this level (Autodiff records their own gradient rules, as on the
        # unfused stack); composites.py computes the covered ones from fusible primitives; the target names
        # the optional ops whose composition fuses better than the op runs (target.composed)
        return op not in self._composed and self.inner.supports(op)

    def write(self, array):
        tape = self._tape
        if tape is not None:  # a constant made inside a capture: private memory, written again by replays
            import numpy as np
            host = np.array(array, copy=True)
            arr = self.inner.write(np.array(host, copy=True))
            tape.write(arr, host)
            return arr
        return self.inner.write(array)

    def _tape_inner(self, op, vals, attrs, out) -> None:
        """Record an op that ran on the inner backend; a result a replay can't redo stops the capture."""
        try:
            self._tape.inner(self.inner.run, op, vals, attrs, out)
        except ValueError as e:
            from ..capture import taint
            taint(str(e))

    def read(self, h):
        if self._tape is not None:
            from ..capture import refuse
            refuse("reading a tensor's values (.item(), .numpy(), .tolist(), print, bool(), control flow on a value)")
        return self.inner.read(self._memory(h))

    # a handle is an FH (pending, or a pending result since materialised) or the inner backend's own array
    def shape(self, h):
        return h.shape if h.__class__ is FH else self._shape_of(h)

    def dtype(self, h):
        return h.dtype if h.__class__ is FH else self._dtype_of(h)

    def meta(self, h):
        return (h.shape, h.dtype) if h.__class__ is FH else self._meta_of(h)

    def strides(self, h):
        return h.strides if h.__class__ is FH else self._strides_of(h)

    def storage(self, h):
        if h.__class__ is FH:
            if h.arr is None:
                return h.token
            h = h.arr
        return self._storage_of(h)

    def _storage_of(self, arr):
        base = self.inner.storage(arr)
        e = self._alias.get(id(base))
        if e is not None and e[0]() is base:
            return e[1]
        return base

    def storage_offset(self, h):
        return self.inner.storage_offset(self._memory(h))

    def data_ptr(self, h):
        return self.inner.data_ptr(self._memory(h))

    def nbytes(self, h):
        return self.inner.nbytes(self._memory(h))

    def __getattr__(self, name):  # other inner-backend extras: sync, then ask inner about the array
        if name.startswith("__"):
            raise AttributeError(name)
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            self.flush()
            if self._tape is not None:  # work the tape can't see: the capture stops, the call runs eagerly
                from ..capture import taint
                taint(f"the backend call {name!r} is not recorded by ember.compile")
            return attr(*[a.arr if a.__class__ is FH else a for a in args], **kwargs)
        return call

    def flush(self) -> None:
        """Run everything pending (the sync point)."""
        if self._pending or self._writes:
            schedule.flush(self)
        elif self._sig:
            self._new_window(self._busy > 0)



class _Lifted:
    """What lifting an inner array asked (Fusion._remember): its geometry, and, where the array itself is
    its launch array, a weak reference to its storage and its element strides and offset in it."""

    __slots__ = ("ref", "shape", "dtype", "strides", "storage", "strides_in", "offset")

    def __init__(self, ref, fh: FH, storage, strides_in, offset: int):
        self.ref = ref
        self.shape, self.dtype, self.strides = fh.shape, fh.dtype, fh.strides
        self.storage = storage  # a weakref, or None: the launch array is asked of the target each time
        self.strides_in = strides_in
        self.offset = offset


def _same_handle(o, inputs, vals):
    """An op's result ``o``: the input's own handle when the op returned that input (in-place ops)."""
    for x, v in zip(inputs, vals):
        if o is v and x.__class__ is FH:
            return x
    return o


_RECORDED = ELEMENTWISE | REDUCTIONS | VIEWS | COVERED | {"contiguous", "masked_fill", "assign", "matmul"}
_RECORDABLE = frozenset(_RECORDED | {op + "_" for op in _RECORDED})  # and their in-place forms


def _freeze(v):
    """A hashable, comparable form of an attribute value. An unhashable, unknown one is named by its id
    (marked replay.OPAQUE): a later object may reuse the id, so a plan keyed by it is still compared in
    full at the flush, and an op described with one is never replayed from a memo."""
    c = v.__class__
    if c is dict:
        items = tuple(v.items())
        try:  # the common case: every value hashable (ints, floats, tuples of ints)
            hash(items)
            return items
        except TypeError:
            return tuple([(k, _freeze(x)) for k, x in v.items()])
    if c is tuple or c is list:
        return tuple([_freeze(x) for x in v])
    try:
        hash(v)
    except TypeError:
        return (replay.OPAQUE, id(v))
    return v


def _failed(fh: FH) -> Exception:
    return RuntimeError(f"fusion: this value was pending when the flush computing it failed (shape "
                        f"{tuple(fh.shape)}, {fh.dtype}); that error was raised then")
