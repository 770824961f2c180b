"""Where compiled kernels live on disk, and writing files there safely under concurrent processes.

The directory is ``$EMBER_CACHE/cube`` when ``EMBER_CACHE`` is set, else ``$XDG_CACHE_HOME/ember/cube``
(``~/.cache/ember/cube``). Files are named by a hash of everything that determines their content
(source, target, compiler and its flags), so a name never needs invalidating; writes go to a
unique temporary file that is renamed into place, which is atomic on POSIX and Windows.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import sys
import time

from .._fileio import atomic_write as _atomic_write

__all__ = ["cache_dir", "atomic_write", "digest", "debug_level", "debug"]


def cache_dir(sub: str = "") -> pathlib.Path:
    """The cube cache directory (created on first use), or its subdirectory ``sub``."""
    root = os.environ.get("EMBER_CACHE")
    if root:
        base = pathlib.Path(root).expanduser() / "cube"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = pathlib.Path(xdg) / "ember" / "cube"
    path = base / sub if sub else base
    path.mkdir(parents=True, exist_ok=True)
    return path


def digest(*parts) -> str:
    """A short stable hash of strings/bytes."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def atomic_write(path: pathlib.Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
    _atomic_write(path, [data.encode() if isinstance(data, str) else data], fsync=False)


def debug_level() -> int:
    """``EMBER_DEBUG``: 1 prints generated sources, 2 also timings."""
    try:
        return int(os.environ.get("EMBER_DEBUG", "0") or 0)
    except ValueError:
        return 0


def debug(level: int, message: str) -> None:
    if debug_level() >= level:
        print(f"[ember.cube] {message}", file=sys.stderr, flush=True)


class Timer:
    """``with Timer("compile x"):`` prints the elapsed time at EMBER_DEBUG=2."""

    def __init__(self, what: str):
        self.what = what

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        debug(2, f"{self.what}: {(time.perf_counter() - self.t0) * 1e3:.1f} ms")
