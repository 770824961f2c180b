"""The host path: ops the CUDA backend has no GPU implementation for run on the numpy reference
backend, with inputs copied to the host and results copied back.

It is correct by construction and slow (two transfers and a sync). Every primitive has a GPU version
(``Cuda.host_ops()`` is empty); the path serves ops that raise ``HostPath`` before touching data: linear
algebra on empty matrices, and random ops when the Philox kernel fails its self-check.
"""

from __future__ import annotations

import numpy as np


class HostRunner:
    """Runs ``op`` on the numpy backend for device handles of array module ``xp``."""

    def __init__(self, xp, to_host, to_device):
        from ..numpy import Numpy
        self.numpy = Numpy()
        self.xp = xp
        self.to_host = to_host
        self.to_device = to_device

    def run(self, op: str, inputs: tuple, attrs: dict):
        xp = self.xp
        host = tuple([self.to_host(a) if isinstance(a, xp.ndarray) else a for a in inputs])
        out = self.numpy.run(op, host, attrs)
        if op[-1] == "_" or op == "assign":  # written in place: put the new values into the device memory
            dst = inputs[0]
            xp.copyto(dst, self.to_device(np.asarray(host[0])), casting="unsafe")
            return dst
        if isinstance(out, tuple):
            return tuple([self._back(o) for o in out])
        return self._back(out)

    def _back(self, o):
        if isinstance(o, np.generic):
            o = np.asarray(o)
        if isinstance(o, np.ndarray):
            return self.to_device(o if o.flags.c_contiguous else o.copy())
        return o
