"""The compiled library behind CpuC: C kernels built once with ember.cube's C toolchain, called by id.

All kernels live in one C source (assembled from the ``SOURCE`` strings of the ``_c_*`` modules, each
instantiated for float and double). ``cube.runtime.c.compiler()`` builds it with cube's flags (``-O3
-march=native -fno-math-errno -fno-trapping-math -ffp-contract=off``, ``-fopenmp`` when it links, no
``-ffast-math``: NaN and inf follow IEEE) and caches the shared library in ``$EMBER_CACHE/cube/c``, so a
process that finds it there runs no compiler. The library exports cube's one entry point,
``cb_entry(const int64_t *args)``; ``args[0]`` picks the kernel and the rest are its arguments (array
addresses, integers, and doubles as their bit patterns).

Why hand-written C and not ``@cube.kernel``: the kernel language's CUDA-style blocks of threads
render as per-thread loops that GCC vectorises for elementwise maps, but reductions over strided
windows and channels became per-thread slot arrays with masked gathers (a per-channel sum ran 10x
slower than numpy's); these kernels are loops written for a CPU (contiguous inner loops, ``omp simd
reduction`` for sums, one OpenMP task per plane or channel).
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading
from string import Template

import numpy as np

_HEADER = r"""
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif
typedef int64_t i64;
static inline double cpuc_f64(i64 v) { double d; memcpy(&d, &v, 8); return d; }
#define ARG_P(T, i) ((T *)(intptr_t)a[i])
/* for (i = 0; i < n; i++) body, over OpenMP threads when par is nonzero. Not one "parallel for simd ... if (par)":
   GCC runs that construct's if-false case as a scalar loop (a 262,144-element relu: 0.23 ms against 0.027) */
#define CPUC_MAP(par, n, ...) do { \
    if (par) { \
        _Pragma("omp parallel for simd schedule(static)") \
        for (i64 i = 0; i < (n); i++) { __VA_ARGS__; } \
    } else { \
        _Pragma("omp simd") \
        for (i64 i = 0; i < (n); i++) { __VA_ARGS__; } \
    } } while (0)
"""

# Kernel names in id order; each C kernel is ``static void k_<name>(const int64_t *a)``.
_NAMES: list[str] = []
_lock = threading.Lock()
_entry = None
_error: Exception | None = None


def _instantiate(template: str) -> tuple[str, list[str]]:
    """The source for float and double of a template written with $T (element type), $S (suffix
    f32/f64), $INF, $EXP, $LOG and $SQRT (the libm functions of the type), and the kernel names it defines."""
    out, names = [], []
    for T, S in (("float", "f32"), ("double", "f64")):
        text = Template(template).substitute(T=T, S=S, INF="INFINITY", EXP="expf" if T == "float" else "exp",
                                             LOG="logf" if T == "float" else "log",
                                             SQRT="sqrtf" if T == "float" else "sqrt")
        out.append(text)
        for line in text.splitlines():
            if line.startswith("static void k_"):
                names.append(line[len("static void k_"):].split("(")[0])
    return "\n".join(out), names


def _source() -> str:
    from ...cube.runtime.c import compiler
    from . import _c_conv, _c_ew, _c_norm, _c_optim, _c_rows
    parts, names = [_HEADER], []
    if compiler().simd_math:  # glibc's libmvec: vectorised exp/log in omp simd loops, IEEE kept
        parts.append("\n".join(f"#pragma omp declare simd notinbranch\nextern {t} {f}({t});"
                               for t, f in (("float", "expf"), ("double", "exp"), ("float", "logf"),
                                            ("double", "log"))))
    for mod in (_c_conv, _c_norm, _c_rows, _c_ew, _c_optim):
        text, ns = _instantiate(mod.SOURCE)
        parts.append(text)
        names += ns
    cases = "\n".join(f"    case {i}: k_{n}(a); break;" for i, n in enumerate(names))
    parts.append("void cb_entry(const int64_t *a) {\n  switch (a[0]) {\n" + cases + "\n    default: break;\n  }\n}\n")
    _NAMES[:] = names
    return "\n".join(parts)


def load():
    """Build (or find in the cache) and load the library; raises cube's CompilerUnavailable or
    CompileError when that is impossible. Idempotent and thread-safe."""
    global _entry, _error
    if _entry is not None:
        return _entry
    with _lock:
        if _entry is None:
            if _error is not None:
                raise _error
            from ...cube.runtime.c import compiler
            try:
                _entry = compiler().build(_source(), "cpuc")
            except Exception as e:  # remembered: a broken compiler is not retried on every op
                _error = e
                raise
            _IDS.update({n: i for i, n in enumerate(_NAMES)})
    return _entry


def openmp() -> bool:
    """Whether the kernels run multithreaded (the compiler linked OpenMP)."""
    from ...cube.runtime.c import compiler
    return compiler().openmp


_IDS: dict[str, int] = {}
_pack = struct.Struct("<d").pack
_unpack = struct.Struct("<q").unpack


def fbits(v: float) -> int:
    """A double as the int64 with its bits (how float arguments travel)."""
    return _unpack(_pack(v))[0]


def ptr(a) -> int:
    """The address of an array's first element (0 for None). The caller keeps ``a`` referenced until
    the kernel returns: ``ptr(np.ascontiguousarray(x))`` would hand C a freed temporary."""
    return 0 if a is None else a.__array_interface__["data"][0]


def call(name: str, *args: int) -> None:
    """Run kernel ``name`` with integer arguments (addresses, sizes, fbits of floats)."""
    fn = _entry if _entry is not None else load()
    vals = (_IDS[name],) + args
    buf = (ctypes.c_int64 * len(vals))(*vals)
    fn(ctypes.addressof(buf))


def suffix(dt: np.dtype) -> str | None:
    """The kernel suffix for a dtype the C kernels handle natively (float32, float64), else None."""
    return "f32" if dt == np.float32 else "f64" if dt == np.float64 else None


# ---- threads -------------------------------------------------------------------------------------
# An OpenMP parallel region costs a few microseconds to start (more on a busy machine, where woken
# threads wait for a core), so kernels run on one thread below this many elements of work. Measured
# on the 2-core development machine: the break-even of a 2-thread relu was near 32K float32 elements.
PARALLEL_MIN = int(os.environ.get("EMBER_CPUC_PARALLEL_MIN", 1 << 15))


_forked = False


# Memory-bound one-pass kernels (relu, where, comparisons, clamp, row reductions) gain little from a
# second thread on arrays under this size, and their parallel region waits when BLAS's workers still
# spin on the other core after a product: an MLP step (784-512-512-10, batch 128) took 12.4 ms with
# them on 2 threads at 64K elements, 7.6 ms on one (the numpy backend: 7.0)
STREAM_MIN = int(os.environ.get("EMBER_CPUC_STREAM_MIN", 1 << 20))


def par(work: int, minimum: int | None = None) -> int:
    """1 when ``work`` elements justify the kernel's OpenMP threads (``minimum``, else PARALLEL_MIN),
    else 0 (always 0 in a forked child: GNU OpenMP's thread pool does not survive fork, and a parallel
    region there hangs)."""
    return 1 if work >= (PARALLEL_MIN if minimum is None else minimum) and not _forked else 0


def _after_fork_in_child():
    global _forked
    _forked = True   # DataLoader workers started with fork run the kernels on their one thread


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
