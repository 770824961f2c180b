"""ember.cube's compile cache: on disk across processes (no compiler run the second time), in memory
within a process, safe when processes compile the same kernel at once; EMBER_DEBUG output."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from ember import cube

ROOT = pathlib.Path(__file__).resolve().parent.parent

SCRIPT = """
import sys
import numpy as np
from ember import cube
from ember.cube.runtime import c as cr

if sys.argv[1] == "forbid":
    def no_compiler(cmd, cwd=None):
        raise AssertionError("the compiler ran: " + " ".join(cmd))
    cr._run = no_compiler

@cube.kernel
def add_k(x: cube.Array[cube.f32], out: cube.Array[cube.f32], k: cube.Const[int]):
    i = cube.global_idx.x
    if i < x.size:
        out[i] = x[i] + cube.f32(k)

x = np.arange(100, dtype=np.float32)
out = np.zeros_like(x)
add_k[4, 32](x, out, int(sys.argv[2]))
assert np.array_equal(out, x + int(sys.argv[2])), out
print("ok")
"""


def _run(tmp_path, *args, env=None, wait=True):
    script = tmp_path / "kern.py"
    script.write_text(SCRIPT)
    e = dict(os.environ, EMBER_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    e.pop("EMBER_DEBUG", None)
    e.update(env or {})
    cmd = [sys.executable, str(script), *map(str, args)]
    if not wait:
        return subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=120)


def test_second_process_reuses_the_library_without_compiling(tmp_path):
    first = _run(tmp_path, "allow", 3)
    assert first.returncode == 0 and "ok" in first.stdout, first.stderr
    libs = sorted((tmp_path / "cache" / "cube" / "c").glob("*.so"))
    assert len(libs) == 1 and libs[0].with_suffix(".c").exists()
    second = _run(tmp_path, "forbid", 3)
    assert second.returncode == 0 and "ok" in second.stdout, second.stderr
    third = _run(tmp_path, "forbid", 4)  # a new constant is a new variant: it must compile
    assert third.returncode != 0 and "the compiler ran" in third.stderr


def test_concurrent_processes_compile_the_same_kernel(tmp_path):
    procs = [_run(tmp_path, "allow", 5, wait=False) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 and "ok" in o for p, (o, _) in zip(procs, outs)), outs
    d = tmp_path / "cache" / "cube" / "c"
    assert len(list(d.glob("*.so"))) == 1 and not list(d.glob("*.tmp"))


def test_debug_prints_source_and_timings(tmp_path):
    r = _run(tmp_path, "allow", 6, env={"EMBER_DEBUG": "2"})
    assert r.returncode == 0, r.stderr
    assert "void cb_entry" in r.stderr and "compile add_k (C):" in r.stderr and " ms" in r.stderr


def test_relaunch_in_process_needs_no_compile(monkeypatch):
    from ember.cube.runtime import c as cr

    @cube.kernel
    def twice(x: cube.Array[cube.i32]):
        i = cube.global_idx.x
        if i < x.size:
            x[i] = x[i] * 2

    x = np.arange(10, dtype=np.int32)
    twice[1, 16](x)

    def no_compiler(cmd, cwd=None):
        raise AssertionError("compiled again")

    monkeypatch.setattr(cr, "_run", no_compiler)
    twice[1, 16](x)
    twice[1, 16](x[:5].copy())
    assert x.tolist() == [4 * k for k in range(10)] and len(twice.variants) == 1


def test_cache_dir_follows_ember_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_CACHE", str(tmp_path))
    assert cube.cache_dir() == tmp_path / "cube" and (tmp_path / "cube").is_dir()
    monkeypatch.delenv("EMBER_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cube.cache_dir("c") == tmp_path / "xdg" / "ember" / "cube" / "c"


@pytest.mark.parametrize("bad", ["", "x"])
def test_atomic_write_leaves_no_temporaries(tmp_path, bad):
    from ember.cube.cache import atomic_write
    p = tmp_path / "f.txt"
    atomic_write(p, "old")
    atomic_write(p, bad or "new")
    assert p.read_text() == (bad or "new") and [q.name for q in tmp_path.iterdir()] == ["f.txt"]
