"""Op replay: recording a window that was seen before without building its expression graph.

A training step records the same ops every call, and every flush after the first finds its plan in
the cache (schedule.py): the nodes recording built were only needed to *build* that plan. Recording
them is most of an op's host time (a layer norm is seven nodes, their broadcasts and checks), so
Fusion remembers, for each op it recorded, what the frontend and the flush need from it, keyed by
the window's structural signature up to and including that op (``Fusion._h``, which covers every
earlier op, its attributes and input references, and every leaf's geometry):

* the result handles' shapes, dtypes and strides, their window positions, where a view's base and
  storage token come from, and which input's memory a write (``assign``, ``add_``, ...) goes to;
* which scalar slots the op filled (from its scalar inputs, or constants fixed by its attributes),
  and which single ops on memory it registered to run on the inner backend;
* or that recording didn't take the op (a view of memory): it runs on the inner backend (``PASS``).

When the next window reaches the same signature (the op's descriptor is compared too), the op is
*replayed*: result handles are made from that memo with a placeholder expression (``LAZY``), the
window's scalar and source slots are filled exactly as recording would, and the op is appended to
the window's log. If the window then ends in a cached plan, the flush runs it as usual (it needs the
leaves, scalars, sources and live handles, not the nodes). At the first op the memo doesn't know
(or one that can't be replayed: ops whose recording depends on a scalar's value, a write into memory
that doesn't cover its whole storage this time), or at a flush whose plan is not cached, the window
is *materialised*: the logged ops are recorded for real, in order, and their nodes moved into the
handles the frontend holds, so the window continues exactly as if it had been recorded op by op from
its start.

The log keeps no pending handle alive (the flush writes a value to memory only if someone still
holds its handle): it refers to pending inputs by their window position.
"""

from __future__ import annotations

import os
import weakref

from .graph import FH, N, Token
from .switch import switched

__all__ = ["LAZY", "PASS", "OpMemo", "learn", "replay", "materialise", "enabled", "replaying"]

# the expression of a replayed handle until its window is materialised (never compiled: a flush either
# replays a cached plan or materialises the window first)
LAZY = N("lazy", (), (), None)
_SCALARS = frozenset({bool, int, float})
_CUR = object()  # a source op's inputs/attributes are the recorded op's own
PASS = object()  # what replay() answers for an op that recording didn't take (Fusion runs it at once)
# backend._freeze's mark on a value it can only name by id(): an id a dead object's successor may reuse, so an
# op described with one is never remembered (a plan keyed by it costs at most a re-analysis)
OPAQUE = object()
MAX_MEMOS = 1 << 14  # ops remembered per Fusion layer (a training step records a few thousand)
_STATE = {"enabled": os.environ.get("EMBER_FUSION_REPLAY", "1") not in ("0", "off", "false")}


def enabled() -> bool:
    """Whether op replay is on (``EMBER_FUSION_REPLAY=0`` or :func:`replaying` turn it off)."""
    return _STATE["enabled"]


def replaying(flag: bool = True):
    """Turn op replay on or off for ops recorded inside a ``with`` block (off: every op builds its graph,
    as the first window does; results are the same, only host time differs).

    >>> from ember.backend import fusion
    >>> with fusion.replaying(False):
    ...     pass  # ops recorded here build their expression graphs
    """
    return switched(_STATE, flag)


class _Dead:
    pass


_DEAD = weakref.ref(_Dead())  # a window position whose handle the frontend never sees (a composite's step)


class OpMemo:
    """What replaying one recorded op needs (see the module docstring)."""

    __slots__ = ("desc", "n_sig", "results", "single", "blank", "scal", "srcs", "writes")

    def __init__(self, desc, n_sig, results, single, n_tracked, scal, srcs):
        self.desc = desc
        self.n_sig = n_sig  # the signature's length after this op: a second check on the hash key
        # per result: ("in", k) input k itself | ("new", pos, shape, dtype, strides, tok, view) a pending value
        # | ("w", pos, shape, dtype, strides, k) a pending write into the memory input k stands for
        self.results = results  # None: the op is not recorded (it runs on the inner backend: PASS)
        self.writes = results is not None and any(res[0] == "w" for res in results)
        self.single = single  # one handle, not a tuple
        self.blank = [_DEAD] * n_tracked  # window positions the op takes
        self.scal = scal  # per scalar slot: (k, None) scalar input k | (-1, value) a constant
        self.srcs = srcs  # per source op: (op, inputs spec | _CUR, attrs | _CUR)


def _opaque(v) -> bool:
    """Whether a descriptor holds a value named only by its id (see OPAQUE)."""
    if v.__class__ is not tuple:
        return False
    if len(v) == 2 and v[0] is OPAQUE:
        return True
    return any(_opaque(x) for x in v)


def _index(x, seq) -> int:
    for k, y in enumerate(seq):
        if y is x:
            return k
    return -1


def learn(fu, desc, op, inputs, attrs, r, mark) -> OpMemo | None:
    """The memo of op ``op`` just recorded (``r`` its result), or None when it can't be replayed.
    ``mark`` = the window's (signature, pending, scalar, source, leaf) counts before recording it, the
    signature's counted after its descriptor."""
    n_sig, p0, s0, r0, l0 = mark
    if len(fu._sig) != n_sig or len(fu._leaves) != l0:
        return None  # recording noted a value (x ** 2, lerp) or registered memory: not replayable
    if _opaque(desc):
        return None
    if r is None:  # not recorded (a view of memory, say): it runs on the inner backend, as it will next time
        if len(fu._pending) != p0 or len(fu._scal) != s0 or len(fu._srcs) != r0:
            return None  # a composite that failed part way: its steps stay in the window
        return OpMemo(desc, n_sig, None, True, 0, (), ())
    pending = fu._pending
    n = len(pending)
    results = []
    for fh in (r if r.__class__ is tuple else (r,)):
        if fh.__class__ is not FH:
            return None
        k = _index(fh, inputs)
        if k >= 0:  # the op returned an input (an in-place op on a pending value: its expression changed)
            results.append(("in", k))
            continue
        if fh.arr is not None or not p0 <= fh.idx < n or pending[fh.idx]() is not fh:
            return None
        if fh.write is not None:  # a write into memory: input k's array, or the array input k's write targets
            dst = fh.write[1]
            k = -1
            for j, x in enumerate(inputs):
                if x.__class__ is FH and (x.arr is dst or x.arr is None and x.write is not None and x.write[1] is dst):
                    k = j
            if k < 0:
                return None
            results.append(("w", fh.idx - p0, fh.shape, fh.dtype, fh.strides, k))
            continue
        tok = -1
        for j, x in enumerate(inputs):
            if x.__class__ is FH and x.token is not None and x.token is fh.token:
                tok = j
        view = -1
        if fh.view_of is not None:
            base, vop, vattrs = fh.view_of
            view = _index(base, inputs)
            if view < 0 or vop != op or vattrs is not attrs:
                return None
        results.append(("new", fh.idx - p0, fh.shape, fh.dtype, fh.strides, tok, view))
    scalars = [k for k, x in enumerate(inputs) if x.__class__ in _SCALARS]
    added = fu._scal[s0:]
    if scalars:
        # each slot must be one of the op's scalar inputs, in order (elementwise ops): a value computed
        # from them would be a constant in the memo
        if len(added) != len(scalars) or any(v is not inputs[k] for v, k in zip(added, scalars)):
            return None
        scal = [(k, None) for k in scalars]
    else:
        scal = [(-1, v) for v in added]  # constants of the op's attributes (a norm's eps)
    srcs = []
    for sop, sin, sattrs, _ in fu._srcs[r0:]:
        if sin is inputs:
            spec = _CUR
        else:
            spec = []
            for x in sin:
                k = _index(x, inputs)
                if k < 0 and (x.__class__ is FH or scalars):
                    return None
                spec.append((k, None) if k >= 0 else (-1, x))
        srcs.append((sop, spec, _CUR if sattrs is attrs else sattrs))
    return OpMemo(desc, n_sig, tuple(results), r.__class__ is not tuple, n - p0, scal, srcs)


def _destinations(fu, memo: OpMemo, inputs) -> list | None:
    """(array, its leaf Buf) written by each write the memo replays, or None when one can't be replayed
    here: its array doesn't cover its whole storage (a partial write runs on the inner backend; the
    signature holds the array's geometry, not its storage's size) or isn't a leaf of this window."""
    out = []
    for res in memo.results:
        if res[0] != "w":
            continue
        d = inputs[res[5]]
        if d.arr is not None:
            arr, buf = d.arr, d.buf
        else:  # another write's handle: its destination's handle in this window
            arr = d.write[1]
            lifted = fu._lifted.get(id(arr))
            buf = None if lifted is None else lifted.buf
        if buf is None or buf.win is None or buf.win[0] != fu._serial or \
                not fu.target.whole(arr, fu.inner.storage(arr)):
            return None
        out.append((arr, buf))
    return out


def replay(fu, memo: OpMemo, op, inputs, attrs):
    """Op ``op``'s result handle(s) from ``memo``, its scalar and source slots filled, the op logged; PASS
    for an op recording doesn't take; None (nothing changed) when a write it makes can't be replayed here
    (see _destinations)."""
    if memo.results is None:
        return PASS
    dests = _destinations(fu, memo, inputs) if memo.writes else ()
    if dests is None:
        return None
    pending = fu._pending
    p0 = len(pending)
    pending.extend(memo.blank)
    scal = fu._scal
    for k, v in memo.scal:
        scal.append(v if k < 0 else inputs[k])
    if memo.srcs:
        srcs = fu._srcs
        for sop, spec, sattrs in memo.srcs:
            sin = inputs if spec is _CUR else tuple([v if k < 0 else inputs[k] for k, v in spec])
            srcs.append((sop, sin, attrs if sattrs is _CUR else sattrs, len(srcs)))
    out = []
    d = 0
    for res in memo.results:
        kind = res[0]
        if kind == "in":
            out.append(inputs[res[1]])
            continue
        if kind == "w":  # as Fusion._assign: the write is pending, later reads of the storage see it
            arr, dbuf = dests[d]
            d += 1
            dst = inputs[res[5]]
            if dst.arr is not None:
                fu._lifted.setdefault(id(arr), dst)  # as Fusion._assign: later writes through the handle find it
            fh = FH(res[2], res[3], res[4], node=LAZY, token=fu._storage_of(arr))
            fh.write = (dbuf, arr)
            fu._writes[dbuf.sid] = (dbuf, LAZY, arr)
            if fu._tape is not None:
                fu._tape.wrote(arr)
            fh.idx = p0 + res[1]
            pending[p0 + res[1]] = weakref.ref(fh)
            out.append(fh)
            continue
        _, pos, shape, dtype, strides, tok, view = res
        fh = FH(shape, dtype, strides, node=LAZY, token=Token() if tok < 0 else inputs[tok].token)
        fh.idx = p0 + pos
        pending[p0 + pos] = weakref.ref(fh)
        if view >= 0:
            base = inputs[view]
            fh.view_of = (base, op, attrs)
            base.viewed = True
        out.append(fh)
    # the log names pending inputs by window position only (desc holds it): it must not keep them alive
    fu._log.append((op, memo.desc, tuple([None if x.__class__ is FH and x.arr is None else x for x in inputs]),
                    attrs))
    fu.stats["ops_replayed"] += 1
    return out[0] if memo.single else tuple(out)


def materialise(fu) -> None:
    """Record the window's replayed ops for real, moving their expressions into the handles the
    frontend holds; the window continues unreplayed (ops are recorded, the flush analyses if needed)."""
    log = fu._log
    fu._log = None
    if not log:
        return
    old = fu._pending
    # the replayed writes' entries hold no expressions: recording the ops again makes them
    fu._pending, fu._scal, fu._srcs, fu._writes = [], [], [], {}
    made: dict = {}  # window position -> the handle standing for it (the frontend's, or a new one if it is gone)
    for op, desc, inputs, attrs in log:
        args = tuple([made[d] if x is None and d.__class__ is int and d >= 0 else x
                      for x, d in zip(inputs, desc[1])])
        r = fu._record(op, args, attrs)
        if r is None:  # recording is deterministic: the memo said this op records
            raise RuntimeError(f"fusion: replaying op {op!r} failed to record it again (an ember bug)")
        for new in (r if r.__class__ is tuple else (r,)):
            if _index(new, args) >= 0:
                continue
            i = new.idx
            mine = old[i]() if i < len(old) else None
            if mine is None:
                made[i] = new
                continue
            mine.node, mine.buf, mine.view_of, mine.write = new.node, new.buf, new.view_of, new.write
            fu._pending[i] = weakref.ref(mine)
            made[i] = mine
