"""The C runtime: compile generated C with the system compiler, cache the shared library, call it.

The compiler is ``$CC`` or the first of ``cc``, ``gcc``, ``clang`` on the PATH. Flags: ``-O3
-march=native -fno-math-errno -fno-trapping-math -ffp-contract=off`` (no ``-ffast-math``: NaN and
inf behave as IEEE says; no contraction: ``a * b + c`` rounds twice, as numpy does; ``cube.fma``
fuses explicitly; no ``-fwrapv``: signed overflow is undefined as in CUDA, which lets the compiler
see that a thread's index is consecutive and vectorise its loads), plus ``-fopenmp`` when the
compiler links OpenMP programs (else ``-fopenmp-simd``, or nothing). What the compiler supports is
probed once per compiler and remembered on disk, so a process that finds its kernels in the cache
runs no compiler at all.

Libraries are cached as ``<cache>/c/<hash>.so`` with the hash over the source, the compiler's
identity (path, size, mtime), the flags and the CPU's feature flags (``-march=native`` code is
CPU specific).
"""

from __future__ import annotations

import ctypes
import json
import os
import pathlib
import platform
import shutil
import subprocess
import threading

from ..cache import Timer, atomic_write, cache_dir, debug, digest
from ..errors import CompileError, CompilerUnavailable

ABI = "cube-c-1"
BASE_FLAGS = ["-O3", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-fPIC", "-shared"]
_LOCK = threading.Lock()
_LOADED: dict = {}  # path -> ctypes function (one dlopen per library per process)

_PROBE_OPENMP = """
#include <omp.h>
int cb_probe(void) { int n = 0;
#pragma omp parallel reduction(+:n)
n += 1;
return n + omp_get_max_threads(); }
"""
_PROBE_MVEC = """
#include <math.h>
#pragma omp declare simd notinbranch
extern float expf(float);
void cb_probe(float *x, int n) {
#pragma omp simd
for (int i = 0; i < n; i++) x[i] = expf(x[i]);
}
"""


def _cpu_id() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return digest(platform.machine(), line)
    except OSError:
        pass
    return digest(platform.machine(), platform.processor())


def _run(cmd: list, cwd=None) -> subprocess.CompletedProcess:
    """Run the compiler (every compiler invocation goes through here)."""
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)


class Compiler:
    """The system C compiler and what it supports (probed once, remembered on disk)."""

    def __init__(self):
        cc = os.environ.get("CC") or next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
        path = shutil.which(cc.split()[0]) if cc else None
        if path is None:
            raise CompilerUnavailable(
                "ember.cube's C target needs a C compiler and none was found: install one (Debian/Ubuntu: "
                "`apt-get install gcc`; macOS: `xcode-select --install`) or point $CC at it")
        self.cmd = [path] + (cc.split()[1:] if cc else [])
        st = os.stat(path)
        self.identity = digest(os.path.realpath(path), st.st_size, st.st_mtime_ns, " ".join(self.cmd), _cpu_id())
        probe_file = cache_dir("c") / f"probe-{self.identity}.json"
        try:
            info = json.loads(probe_file.read_text())
        except (OSError, ValueError):
            info = self._probe()
            atomic_write(probe_file, json.dumps(info))
        self.flags = BASE_FLAGS + info["flags"]
        self.openmp = info["openmp"]
        self.simd_math = info["simd_math"]

    def _probe(self) -> dict:
        import tempfile
        flags: list = []
        with tempfile.TemporaryDirectory() as tmp:
            t = pathlib.Path(tmp)

            def builds(src: str, extra: list, load: bool = False) -> bool:
                (t / "p.c").write_text(src)
                out = t / f"p{len(os.listdir(tmp))}.so"
                r = _run(self.cmd + BASE_FLAGS + flags + extra + ["p.c", "-o", str(out), "-lm"], cwd=tmp)
                if r.returncode != 0:
                    return False
                if load:
                    try:
                        with _passive_openmp():  # the probe may be the first to load libgomp
                            ctypes.CDLL(str(out))
                    except OSError:
                        return False
                return True

            if builds("int cb_probe(void) { return 1; }", ["-march=native"]):
                flags.append("-march=native")
            openmp = builds(_PROBE_OPENMP, ["-fopenmp"], load=True)
            if openmp:
                flags.append("-fopenmp")
            elif builds("int cb_probe(void) { return 1; }", ["-fopenmp-simd"]):
                flags.append("-fopenmp-simd")
            simd_math = bool(flags) and builds(_PROBE_MVEC, [], load=True)
        debug(1, f"C compiler {' '.join(self.cmd)}: flags {flags}, openmp={openmp}, simd math={simd_math}")
        return {"flags": flags, "openmp": openmp, "simd_math": simd_math}

    def build(self, source: str, name: str) -> ctypes._CFuncPtr:
        """The ``cb_entry`` function of ``source``, compiled (or found in the cache) and loaded."""
        key = digest(ABI, source, self.identity, " ".join(self.flags))
        d = cache_dir("c")
        so = d / f"{key}.so"
        with _LOCK:
            fn = _LOADED.get(str(so))
            if fn is not None:
                return fn
            if not so.exists():
                with Timer(f"compile {name} (C)"):
                    self._compile(source, so, name)
            else:
                debug(2, f"{name}: found {so}")
            with Timer(f"load {name}"), _passive_openmp():
                lib = ctypes.CDLL(str(so))
            fn = lib.cb_entry
            fn.argtypes = [ctypes.c_void_p]
            fn.restype = None
            _LOADED[str(so)] = fn
            return fn

    def _compile(self, source: str, so: pathlib.Path, name: str) -> None:
        import tempfile
        d = so.parent
        c_file = d / (so.stem + ".c")
        atomic_write(c_file, source)  # kept next to the library for reading
        fd, tmp = tempfile.mkstemp(dir=d, prefix=so.stem + ".", suffix=".so.tmp")
        os.close(fd)
        try:
            r = _run(self.cmd + self.flags + [str(c_file), "-o", tmp, "-lm"])
            if r.returncode != 0:
                raise CompileError(f"the C compiler failed on the code generated for kernel '{name}' (this is a "
                                   f"bug in ember.cube; the source is {c_file}):\n{r.stderr[-4000:]}")
            os.replace(tmp, so)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


class _passive_openmp:  # noqa: N801 - used like a function
    """Load a library with OpenMP's idle threads sleeping instead of spinning (``OMP_WAIT_POLICY=
    passive``) unless the user chose a policy. Spinning threads took the cores that numpy's and
    BLAS's own threads needed between kernels (the compiled CPU backend's and fused kernels run
    between numpy calls): on 2 cores a training step ran 1.4x slower. libgomp reads the variable once,
    when the first library linking it loads, so it is restored afterwards (a PyTorch imported later
    keeps its own default)."""

    def __enter__(self):
        self.saved = os.environ.get("OMP_WAIT_POLICY")
        if self.saved is None:
            os.environ["OMP_WAIT_POLICY"] = "passive"

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop("OMP_WAIT_POLICY", None)
        return False


_COMPILER: Compiler | None = None


def compiler() -> Compiler:
    """The process-wide :class:`Compiler` (found and probed on first use)."""
    global _COMPILER
    if _COMPILER is None:
        with _LOCK:
            if _COMPILER is None:
                _COMPILER = Compiler()
    return _COMPILER


def reset() -> None:
    """Forget the compiler and loaded libraries (tests; after changing $CC or $EMBER_CACHE)."""
    global _COMPILER
    _COMPILER = None
    _LOADED.clear()



class CpuRuntime:
    """Runs kernels on the CPU through the C renderer and the system compiler."""

    key = "c"

    def __init__(self):
        from ..frontend import Target
        self.frontend_target = Target("c", 32)

    def render(self, kir, plan) -> str:
        from ..render.c import render
        try:
            simd = compiler().simd_math
        except CompilerUnavailable:
            simd = True
        return render(kir, plan, simd_math=simd)

    def compile(self, kir, plan, source: str):
        fn = compiler().build(source, kir.name)
        layout = [(p.kind, p.type, p.ndim) for p in kir.params]
        return fn, layout

    def launch(self, obj, grid: tuple, block: tuple, values: list) -> None:
        import struct
        fn, layout = obj
        slots: list = []
        it = iter(layout)
        for v in values:
            if v is None:  # a compile-time constant
                continue
            kind, t, ndim = next(it)
            if kind == "array":
                a = v.handle
                slots.append(a.ctypes.data)
                if ndim == 1 and a.ndim != 1:
                    slots.append(a.size)
                else:
                    slots.extend(a.shape)
            elif t.kind == "f":
                if t.bits == 32:
                    slots.append(struct.unpack("<I", struct.pack("<f", v))[0])
                else:
                    slots.append(struct.unpack("<q", struct.pack("<d", v))[0])
            else:
                slots.append(int(v))
        slots.extend(grid)
        buf = (ctypes.c_int64 * len(slots))(*slots)
        fn(ctypes.addressof(buf))
