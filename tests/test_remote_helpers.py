"""Helpers for the remote tests (no tests here): a loopback ``ember serve`` subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest


class ServerProcess:
    """``ember serve`` on a free loopback port, in a subprocess; ``.address`` is ``host:port``."""

    def __init__(self, *args: str, env: dict | None = None):
        cmd = [sys.executable, "-m", "ember.cli", "serve", "--host", "127.0.0.1", "--port", "0", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        line = self.proc.stdout.readline()
        if " on " not in line:
            self.proc.kill()
            raise RuntimeError(f"ember serve did not start: {line!r} {self.proc.stderr.read()!r}")
        self.port = int(line.split(" on ", 1)[1].split()[0].rsplit(":", 1)[1])
        self.address = f"127.0.0.1:{self.port}"
        self.url = f"remote://{self.address}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc.stdout.close()
        self.proc.stderr.close()

    def alive(self) -> bool:
        return self.proc.poll() is None


def wait_for(pred, timeout: float = 10.0, step: float = 0.05):
    """Poll ``pred`` until it returns a truthy value (returned) or ``timeout`` passes (last value)."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


def server_fixture(*args: str, scope: str = "module"):
    @pytest.fixture(scope=scope)
    def _server():
        s = ServerProcess(*args)
        yield s
        s.stop()
    return _server
