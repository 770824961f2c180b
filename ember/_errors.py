"""Exception types shared by every layer (the lowest layer: imports nothing from ember)."""


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (singular matrix, not positive-definite...)."""


class BackendUnavailable(RuntimeError):
    """A device was asked for whose backend is not installed or has no hardware."""


class IndexOutOfRange(IndexError, RuntimeError):
    """An index outside its dimension, in an op for which PyTorch raises RuntimeError: catchable as
    either, so code written for PyTorch and code expecting IndexError both work."""
