"""The exceptions of ember.store (and of ember.save / ember.load).

Every error is a :class:`StoreError`, a RuntimeError whose message starts with the file it is about
and names the tensor key when there is one (also available as ``.path`` and ``.key``), so a loader
can catch ember's own failures with one ``except`` and let everything else through.
"""

from __future__ import annotations

__all__ = ["StoreError", "SerializationError", "SafetensorsError", "TorchFileError", "UnknownFormatError",
           "UnsafePickleError", "StoreDtypeError", "LoadIntoError"]


class StoreError(RuntimeError):
    """Base class: a weights file or checkpoint ember.store can't read or apply.

    ``path`` is the file (or ``"<bytes>"``/``"<dict>"``) and ``key`` the tensor name, or None.
    """

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None):
        where = f"{path}: " if path else ""
        what = f"tensor {key!r}: " if key is not None else ""
        super().__init__(f"{where}{what}{message}")
        self.path, self.key = path, key


class SerializationError(StoreError):
    """A file that is not a valid ember/safetensors/PyTorch file: truncated, corrupted or tampered with."""


class SafetensorsError(SerializationError):
    """A damaged safetensors file: bad header length, bad JSON, offsets out of range or overlapping..."""


class TorchFileError(SerializationError):
    """A damaged PyTorch file (zip or legacy format), or one that is not a checkpoint at all."""


class UnknownFormatError(SerializationError):
    """The first bytes match none of the formats ember.store reads."""


class UnsafePickleError(StoreError):
    """A pickle asked for a global outside the allowlist; ``global_name`` is ``"module.name"``.

    Raised before anything the global names could run: nothing in the file was executed.
    """

    def __init__(self, message: str, *, global_name: str, path: str | None = None):
        super().__init__(message, path=path)
        self.global_name = global_name


class StoreDtypeError(StoreError, TypeError):
    """A tensor whose dtype ember has no counterpart for (float8, complex, uint16...); also a TypeError."""


class LoadIntoError(StoreError):
    """``load_into(strict=True)`` found missing, unexpected or mismatched keys; ``report`` has them all."""

    def __init__(self, message: str, *, report, path: str | None = None):
        super().__init__(message, path=path)
        self.report = report
