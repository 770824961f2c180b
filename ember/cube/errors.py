"""The errors of ember.cube: compile errors point at the kernel's source line."""

from __future__ import annotations

__all__ = ["CompileError", "LaunchError", "CompilerUnavailable"]


class CompileError(Exception):
    """A kernel that cube can't compile: unsupported syntax, a type mismatch, an unknown name...

    ``str(err)`` starts with ``file:line:`` of the offending line of the kernel and shows it.
    """

    def __init__(self, message: str, filename: str | None = None, line: int | None = None,
                 source_line: str | None = None, kernel: str | None = None):
        self.message, self.filename, self.line, self.source_line, self.kernel = (
            message, filename, line, source_line, kernel)
        where = f"{filename}:{line}: " if filename and line else ""
        text = f"{where}{message}"
        if kernel:
            text += f" (in kernel '{kernel}')"
        if source_line:
            text += f"\n    {source_line.strip()}"
        super().__init__(text)


class LaunchError(TypeError):
    """Arguments that don't fit a kernel: wrong dtype, rank, device, layout, or a bad grid/block."""


class CompilerUnavailable(RuntimeError):
    """The C target needs a C compiler and none was found."""
