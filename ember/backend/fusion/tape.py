"""The tape: every piece of work a Fusion(CPU) layer runs during an ``ember.compile`` capture, replayable.

While a tape is open (``Fusion._tape``), the layer records and flushes exactly as usual, and each
piece of work it runs is also appended here with its *concrete* arrays and scalars:

* a fused kernel launch: its argument block (pointers, sizes, scalars, grid) is packed once, so a
  replay is one call of the compiled C function per kernel, no dict lookup and no packing;
* a matrix product: ``matmul_into(a, b, out)`` on the same three arrays;
* an op run on the inner backend: replayed by running it again on the same input arrays and copying
  the result into the array it returned at capture (which later steps read); an op that writes an
  existing buffer (``add_``, ``assign``) runs again as is; a view op needs nothing (the captured
  view still aliases its base);
* a snapshot (a copy taken before a write) and host data written into a tensor (a constant: the
  captured data is written again, since later steps may modify that memory in place);
* a random op (dropout): replayed with the default generator's next seed and offset, which it then
  moves past the counters the op used, so replays draw the numbers eager calls would have drawn.

The tape holds every array it touches alive, so memory the replay writes is never handed to
anything else (the target's pool sees the extra reference). A replay is the steps in order:
the same memory operations on the same memory as the capture, so it computes what the capture
computed, for the values the input memory holds now.

``same_as`` is the steady-state test ember.compile runs on two consecutive captures: the same work
(kernels, ops, attributes, scalars) on the same external memory (memory the capture read but did
not produce: parameters, optimizer state, static inputs). A function whose state moves between
calls (a gradient accumulated out of place, optimizer state created late, a Python number that
changes) fails it and is not replayed.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Tape"]


def _root(a):
    """The object owning ``a``'s memory (numpy keeps views' ``base`` pointing at the owner)."""
    b = a.base
    while b is not None:
        if not isinstance(b, np.ndarray):
            return b
        a = b
        b = a.base
    return a


class Tape:
    """The work recorded during one capture on one Fusion layer, and its replay."""

    def __init__(self, fusion):
        self.fusion = fusion
        self.steps: list = []  # (callable, args): the replay
        self.desc: list = []  # what each step is, for the steady-state test
        self.made: dict = {}  # id(root) -> root: memory the capture produced
        self.order: dict = {}  # id(root) -> index, for memory the capture produced, in order
        self.external: dict = {}  # id(root) -> root: memory the capture read or wrote without producing it
        self.keep: list = []  # arrays the steps point at (packed argument blocks hold raw pointers)
        self.written: dict = {}  # id(root) -> root: existing memory the capture wrote in place
        self.n_kernels = 0

    def __len__(self) -> int:
        return len(self.steps)

    # ---- recording ---------------------------------------------------------------------------------
    def _made(self, a) -> None:
        r = _root(a)
        k = id(r)
        if k not in self.made:
            self.made[k] = r
            self.order[k] = len(self.order)

    def _refs(self, arrays) -> tuple:
        """How the steady-state test sees a step's arrays: memory the capture made by its order of
        making, other memory by identity, and each view's geometry in it (the same ops wired to
        other buffers are other work)."""
        out = []
        for a in arrays:
            if not isinstance(a, np.ndarray):
                out.append(None)
                continue
            r = _root(a)
            k = id(r)
            base = r.__array_interface__["data"][0] if isinstance(r, np.ndarray) else 0
            where = ("m", self.order[k]) if k in self.order else ("e", k)
            out.append((where, a.shape, a.strides, a.__array_interface__["data"][0] - base))
        return tuple(out)

    def _touch(self, arrays) -> None:
        made, ext = self.made, self.external
        for a in arrays:
            if a.__class__ is np.ndarray or isinstance(a, np.ndarray):
                r = _root(a)
                k = id(r)
                if k not in made and k not in ext:
                    ext[k] = r

    def wrote(self, arr) -> None:
        """``arr`` (memory that existed before) is written in place by the recorded work."""
        r = _root(arr)
        self.written[id(r)] = r

    def alloc(self, out) -> None:
        """A buffer the flush allocated (its contents come from later steps)."""
        self._made(out)

    def kernel(self, target, kern, grid: int, block: int, arrays: list, scalars: list) -> None:
        """A fused kernel launch that just ran (so the target has bound it)."""
        if grid == 0:
            return
        self._touch(arrays)
        self.keep.append(arrays)
        fn, packer, rt, obj = target._bound[(kern, block)]
        if packer is not None:
            vals = []
            for a in arrays:
                vals.append(a.ctypes.data)
                vals.append(a.size)
            blob = packer.pack(*vals, *scalars, grid, 1, 1)
            self.steps.append((fn, (blob,)))
        else:
            from .target import _Arg
            self.steps.append((rt.launch, (obj, (grid, 1, 1), (block, 1, 1), [_Arg(a) for a in arrays] +
                                           list(scalars))))
        self.desc.append(("k", id(kern), grid, block, tuple(scalars), self._refs(arrays)))
        self.n_kernels += 1

    def matmul(self, into, a, b, out) -> None:
        self._touch((a, b))
        self.steps.append((into, (a, b, out)))
        self.desc.append(("m", self._refs((a, b, out))))

    def copy(self, dst, src) -> None:
        """A snapshot ``dst`` of ``src`` taken at this point."""
        self._touch((src,))
        self._made(dst)
        self.steps.append((np.copyto, (dst, src)))
        self.desc.append(("c", self._refs((dst, src))))

    def write(self, arr, host) -> None:
        """Host data ``host`` written into the new array ``arr`` (written again by each replay)."""
        self._made(arr)
        self.steps.append((np.copyto, (arr, host)))
        data = host.tobytes()  # a constant whose value changes between captures is not a steady state
        self.desc.append(("w", host.dtype.str, data if len(data) <= 4096 else hash(data), self._refs((arr,))))

    def inner(self, run, op: str, vals: tuple, attrs: dict, out) -> None:
        """Op ``op`` that ran on the inner backend (``run``) on ``vals`` and returned ``out`` (the array
        or tuple later steps read). Raises ValueError when the result can't be replayed (the caller
        then stops the capture)."""
        arrays = [v for v in vals if isinstance(v, np.ndarray)]
        self._touch(arrays)
        from .backend import _freeze
        desc = ["i", op, _freeze(attrs) if attrs else (), tuple(None if isinstance(v, np.ndarray) else _freeze(v)
                                                               for v in vals), self._refs(vals)]
        self.desc.append(desc)
        if op[-1] == "_" or op == "assign":  # writes an existing buffer: run it again as is
            if arrays:
                self.wrote(arrays[0])
            self.steps.append((run, (op, vals, attrs)))
            return
        outs = out if out.__class__ is tuple else (out,)
        in_roots = {id(_root(a)) for a in arrays}
        fresh = []
        for i, o in enumerate(outs):
            if o is None:
                continue
            if not isinstance(o, np.ndarray):  # a numpy scalar: no memory a replay could write
                raise ValueError(f"op {op!r} returned a {type(o).__name__}, not an array")
            if id(_root(o)) in in_roots:
                continue  # a view of an input: it still aliases the same memory
            if not o.flags.writeable:
                if not arrays:
                    self._made(o)
                    continue  # a read-only constant (a broadcast fill): nothing to redo
                raise ValueError(f"op {op!r} returned read-only memory that is not a view of its inputs")
            self._made(o)
            fresh.append((i, o))
        desc.append(self._refs(outs))  # where the results are (made now, or views of the inputs)
        if fresh:
            self.steps.append((_rerun, (run, op, vals, attrs, out.__class__ is tuple, tuple(fresh))))

    def random_source(self, op: str, attrs: dict):
        """(generator, counters used) of a random op about to run, from the open capture (the frontend
        knows the generators: see ember/_compile.py). A generator passed explicitly can't be found:
        CaptureSyncError (a replay would repeat the captured numbers)."""
        from ..capture import CaptureSyncError, random_source
        src = random_source(attrs.get("seed"), attrs.get("offset"))
        if src is None:
            raise CaptureSyncError(
                f"random op {op!r} inside an ember.compile capture draws from a generator passed explicitly: "
                "replays can only draw fresh numbers from the default generator. Use the default generator, "
                "or draw the numbers outside the compiled function and pass them in as a tensor argument")
        return src

    def random(self, src, run, op: str, vals: tuple, attrs: dict, out) -> None:
        """A random op: each replay draws the next numbers of the same generator (as an eager call would:
        the same counters, then the generator moves past them)."""
        gen, used = src
        outs = out if out.__class__ is tuple else (out,)
        if not all(isinstance(o, np.ndarray) and o.flags.writeable for o in outs):
            from ..capture import taint
            taint(f"random op {op!r} returned memory a replay can't write")
            return
        arrays = [v for v in vals if isinstance(v, np.ndarray)]
        self._touch(arrays)
        from .backend import _freeze
        rest = {k: v for k, v in attrs.items() if k != "seed" and k != "offset"}
        for o in outs:
            self._made(o)
        self.desc.append(("r", op, used, _freeze(rest), self._refs(vals), self._refs(outs)))
        self.steps.append((_redraw, (gen, used, run, op, vals, rest, outs)))

    def seal(self) -> None:
        """Drop what only the capture needed (the description and the memory bookkeeping): the steps
        and the arrays they point at are all a replay needs."""
        self.desc = []
        self.made, self.order, self.external, self.written = {}, {}, {}, {}

    # ---- replay ------------------------------------------------------------------------------------
    def replay(self) -> None:
        """Run every recorded step in order."""
        from ..capture import note_replay
        note_replay()
        for f, a in self.steps:
            f(*a)

    def same_as(self, other: Tape) -> bool:
        """Whether ``other`` recorded the same work on the same external memory (steady state)."""
        return (self.desc == other.desc and self.external.keys() == other.external.keys()
                and all(self.external[k] is other.external[k] for k in self.external))


def _rerun(run, op, vals, attrs, is_tuple, fresh) -> None:
    r = run(op, vals, attrs)
    for i, o in fresh:
        v = r[i] if is_tuple else r
        if v.shape != o.shape:
            raise RuntimeError(
                f"ember.compile: op {op!r} returned shape {tuple(v.shape)} on replay but {tuple(o.shape)} when "
                "it was captured: its result's shape depends on the data, which a replay can't follow. Run "
                "this function without ember.compile (or keep that op outside it).")
        np.copyto(o, v, casting="unsafe")


def _redraw(gen, used, run, op, vals, attrs, outs) -> None:
    seed, off = gen._seed, gen._offset
    gen._offset = off + used
    got = run(op, vals, {**attrs, "seed": seed, "offset": off})
    for o, g in zip(outs, got if got.__class__ is tuple else (got,)):
        np.copyto(o, g, casting="unsafe")
