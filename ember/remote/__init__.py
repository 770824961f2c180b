"""Remote: run tensor ops on an ``ember serve`` compute server over the network.

>>> import ember                                           # doctest: +SKIP
>>> x = ember.ones(3, device="remote://gpu-box:3000")      # doctest: +SKIP

See docs/remote.md. The client backend is :class:`Remote` (used under Autodiff); the server is
:func:`ember.remote.server.serve` (``ember serve``); the wire format is :mod:`ember.remote.codec`.
"""

from __future__ import annotations

from .client import Remote, RemoteAuthError, RemoteDisconnected, RemoteOpError, make_stack

__all__ = ["Remote", "RemoteAuthError", "RemoteDisconnected", "RemoteOpError", "make_stack"]
