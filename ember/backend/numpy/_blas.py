"""Control of the BLAS thread count (the OpenBLAS that numpy links).

OpenBLAS hands each GEMM to its thread pool; for small and mid-size products the hand-off costs
more than it saves, and on a machine whose cores are busy it made such GEMMs 10-20x slower (measured
here: an MLP training step ran 2.3-3.5x faster with one BLAS thread). ``one_blas_thread()`` holds
BLAS to a single thread for a region; nesting and concurrent users share one count.
"""

from __future__ import annotations

import os
import threading

import numpy as np


def _blas_threads_api():
    """(get, set) for the thread count of the OpenBLAS that numpy links, or None when not found."""
    import ctypes
    import glob
    paths = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "*openblas*"))
    try:
        with open("/proc/self/maps") as f:   # a system OpenBLAS (Linux)
            paths += sorted({ln.split()[-1] for ln in f if "openblas" in ln and ln.split()[-1].startswith("/")})
    except OSError:
        pass
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    return get, put
    return None


BLAS = _blas_threads_api() if (os.cpu_count() or 1) > 1 else None
_lock = threading.Lock()
_state = {"depth": 0, "saved": 1}


class one_blas_thread:  # noqa: N801 - used like a function: ``with one_blas_thread():``
    """Context: BLAS runs single-threaded inside (a no-op when the BLAS can't be controlled)."""

    def __enter__(self):
        if BLAS is not None:
            with _lock:
                if _state["depth"] == 0:
                    _state["saved"] = BLAS[0]()
                    BLAS[1](1)
                _state["depth"] += 1
        return self

    def __exit__(self, *exc):
        if BLAS is not None:
            with _lock:
                _state["depth"] -= 1
                if _state["depth"] == 0:
                    BLAS[1](_state["saved"])
        return False


def _after_fork_in_child():
    global _lock
    _lock = threading.Lock()
    _state["depth"] = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
