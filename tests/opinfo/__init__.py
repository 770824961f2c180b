"""The op registry: every op declares samples, dtypes and a reference; tests run it everywhere.

An op is one function ``fn(lib, *args, **kwargs)`` called with ``lib`` = ``ember`` or ``torch``:
ember mirrors PyTorch's names, so the same lambda drives both and the comparison also checks API
parity. Samples hold numpy arrays (``T``) that are turned into tensors of either library, with
optional non-contiguous layouts, so every backend and PyTorch see identical inputs.
"""
