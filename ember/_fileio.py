"""Writing files so that a crash never leaves a partial one (shared by ember.store, ember.save and
ember.cube's compile cache)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable


def atomic_write(path, parts: Iterable[bytes], *, fsync: bool = True) -> None:
    """Write ``parts`` to a temporary file beside ``path``, fsync it and rename it over ``path``, so a
    crash leaves the old file or the new one, never a partial one."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            for p in parts:
                fh.write(p)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if fsync and hasattr(os, "O_DIRECTORY"):  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
