"""ember.cube benchmarks: the same kernels on the C target, CUDA and WebGPU, beside the reference
libraries measured in the same run.

* CPU: an elementwise chain (``x * sigmoid(x) * y + 0.1 * x``) from cube's C target against numpy.
* CUDA (when CuPy sees a GPU): the chain in GB/s against the device copy bandwidth, CuPy and PyTorch;
  fp32 (TF32 off) and bf16 matmul TFLOP/s against cuBLAS (CuPy) and PyTorch.
* WebGPU (when wgpu finds an adapter): the chain GB/s and fp32 matmul TFLOP/s.

Figures are medians of repeated runs. ``--quick`` uses small sizes (a smoke test);
``--out FILE`` also writes the tables as markdown (for bench/results/).

    python bench/cube.py [--quick] [--only cpu,cuda,wgpu] [--out bench/results/DATE-cube.md]
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import statistics
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench._harness import median_time  # noqa: E402
from ember import cube  # noqa: E402
from ember.cube import testing  # noqa: E402

CHAIN_FLOPS = 6  # per element, counting exp as one


@cube.kernel
def chain(x: cube.Array[cube.f32], y: cube.Array[cube.f32], out: cube.Array[cube.f32]):
    i = cube.global_idx.x
    if i < x.size:
        v = x[i]
        out[i] = v * cube.sigmoid(v) * y[i] + 0.1 * v


@cube.kernel
def chain_vec4(x: cube.Array[cube.f32], y: cube.Array[cube.f32], out: cube.Array[cube.f32]):
    i = cube.global_idx.x
    if i * 4 < x.size:
        v = x.vec4[i]
        out.vec4[i] = v * cube.sigmoid(v) * y.vec4[i] + 0.1 * v


class Report:
    """Rows of (section, what, value, unit, reference name, reference value); prints as it goes."""

    def __init__(self):
        self.rows: list = []

    def add(self, section: str, what: str, value: float, unit: str, ref: str = "", ref_value: float | None = None):
        self.rows.append((section, what, value, unit, ref, ref_value))
        line = f"[{section}] {what:<48} {value:10.2f} {unit}"
        if ref_value:
            line += f"   {ref}: {ref_value:10.2f} {unit}   ratio {value / ref_value:5.2f}"
        print(line, flush=True)

    def markdown(self) -> str:
        out = ["| section | what | cube | unit | reference | reference figure | cube / reference |",
               "|---|---|---:|---|---|---:|---:|"]
        for sec, what, v, unit, ref, rv in self.rows:
            ratio = f"{v / rv:.2f}" if rv else ""
            ref_text = "" if rv is None else f"{rv:.2f}"
            out.append(f"| {sec} | {what} | {v:.2f} | {unit} | {ref} | {ref_text} | {ratio} |")
        return "\n".join(out)


# ---- CPU -----------------------------------------------------------------------------------------
def bench_cpu(rep: Report, quick: bool) -> None:
    n = 1 << (20 if quick else 24)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    tenth = np.float32(0.1)

    def run_cube():
        chain[cube.cdiv(n, 1024), 1024](x, y, out)

    def run_numpy():
        return x * (1 / (1 + np.exp(-x))) * y + tenth * x

    run_cube()
    np.testing.assert_allclose(out, run_numpy(), rtol=1e-5, atol=1e-6)
    gb = 3 * 4 * n / 1e9
    t_c, t_n = median_time(run_cube), median_time(run_numpy)
    rep.add("cpu", f"elementwise chain, {n} f32 (C target vs numpy)", gb / t_c, "GB/s", "numpy", gb / t_n)


# ---- CUDA ----------------------------------------------------------------------------------------
def _gpu_time(fn, repeats: int = 20) -> float:
    import cupy
    for _ in range(3):
        fn()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    ts = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return statistics.median(ts)


def bench_cuda(rep: Report, quick: bool) -> None:
    import cupy
    n = 1 << (22 if quick else 28)
    x = cupy.random.standard_normal(n, dtype=cupy.float32)
    y = cupy.random.standard_normal(n, dtype=cupy.float32)
    out = cupy.empty_like(x)
    copy_t = _gpu_time(lambda: cupy.copyto(out, x))
    copy_bw = 2 * 4 * n / copy_t / 1e9
    rep.add("cuda", f"device copy, {n} f32 (read + write)", copy_bw, "GB/s")
    gb = 3 * 4 * n / 1e9
    t = _gpu_time(lambda: chain[cube.cdiv(n, 256), 256](x, y, out))
    ref = cupy.asnumpy(x * (1 / (1 + cupy.exp(-x))) * y + cupy.float32(0.1) * x)
    np.testing.assert_allclose(cupy.asnumpy(out), ref, rtol=1e-5, atol=1e-6)
    rep.add("cuda", "elementwise chain (cube, scalar loads)", gb / t, "GB/s", "device copy", copy_bw)
    t4 = _gpu_time(lambda: chain_vec4[cube.cdiv(n // 4, 256), 256](x, y, out))
    rep.add("cuda", "elementwise chain (cube, vec4 loads)", gb / t4, "GB/s", "device copy", copy_bw)
    fused = cupy.ElementwiseKernel("float32 x, float32 y", "float32 o", "o = x * (1.0f / (1.0f + expf(-x))) * y + "
                                   "0.1f * x", "cb_chain_ref")
    tc = _gpu_time(lambda: fused(x, y, out))
    rep.add("cuda", "elementwise chain (cube vec4 vs CuPy ElementwiseKernel)", gb / t4, "GB/s", "cupy", gb / tc)
    try:
        import torch
        tx, ty = torch.as_tensor(x, device="cuda"), torch.as_tensor(y, device="cuda")
        tt = _gpu_time(lambda: tx * torch.sigmoid(tx) * ty + 0.1 * tx)
        rep.add("cuda", "elementwise chain (cube vec4 vs PyTorch eager)", gb / t4, "GB/s", "torch", gb / tt)
    except ImportError:
        pass
    for size in ((1024,) if quick else (4096, 8192)):
        bench_cuda_matmul(rep, size, "float32")
    bench_cuda_matmul(rep, 1024 if quick else 4096, "bfloat16")


def bench_cuda_matmul(rep: Report, s: int, dtype: str) -> None:
    import cupy
    import ml_dtypes
    L = cube.library
    rng = np.random.default_rng(0)
    npdt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float32
    a_h = rng.standard_normal((s, s)).astype(npdt)
    b_h = rng.standard_normal((s, s)).astype(npdt)
    a, b = cupy.asarray(a_h), cupy.asarray(b_h)
    c = cupy.empty((s, s), dtype=a.dtype)
    flops = 2 * s ** 3
    t = _gpu_time(lambda: L.matmul(a, b, out=c), repeats=10)
    if s <= 4096:
        ref = a_h.astype(np.float32)[:256] @ b_h.astype(np.float32)
        got = cupy.asnumpy(c[:256]).astype(np.float32)
        np.testing.assert_allclose(got, ref.astype(npdt).astype(np.float32), rtol=5e-2, atol=5e-1 * np.sqrt(s / 64))
    what = f"matmul {s}^3 {dtype}"
    ref_name, ref_t = "", None
    if dtype == "float32":
        ref_t = _gpu_time(lambda: cupy.matmul(a, b, out=c), repeats=10)  # CuPy leaves TF32 off by default
        ref_name = "cuBLAS (CuPy)"
    else:
        try:
            import torch
            ta = torch.from_numpy(a_h.view(np.int16)).view(torch.bfloat16).cuda()
            tb = torch.from_numpy(b_h.view(np.int16)).view(torch.bfloat16).cuda()
            ref_t = _gpu_time(lambda: ta @ tb, repeats=10)
            ref_name = "cuBLAS bf16 (torch, tensor cores)"
        except ImportError:
            pass
    rep.add("cuda", what, flops / t / 1e12, "TFLOP/s", ref_name, flops / ref_t / 1e12 if ref_t else None)
    if dtype == "float32":
        try:
            import torch
            torch.backends.cuda.matmul.allow_tf32 = False
            ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
            tt = _gpu_time(lambda: ta @ tb, repeats=10)
            rep.add("cuda", what + " (vs PyTorch, TF32 off)", flops / t / 1e12, "TFLOP/s", "torch", flops / tt / 1e12)
        except ImportError:
            pass


# ---- WebGPU --------------------------------------------------------------------------------------
def bench_wgpu(rep: Report, quick: bool) -> None:
    from ember.cube.runtime.wgpu import WgpuArray, device, synchronize
    n = 1 << (20 if quick else 26)
    n = min(n, device().limits.get("max-storage-buffer-binding-size", 1 << 27) // 4)
    rng = np.random.default_rng(0)
    xh = rng.standard_normal(n).astype(np.float32)
    yh = rng.standard_normal(n).astype(np.float32)
    x, y, out = WgpuArray.from_numpy(xh), WgpuArray.from_numpy(yh), WgpuArray.empty((n,), cube.f32)
    gb = 3 * 4 * n / 1e9
    t = median_time(lambda: chain_vec4[cube.cdiv(n // 4, 256), 256](x, y, out), inner=20, sync=synchronize)
    np.testing.assert_allclose(out.numpy(), xh * (1 / (1 + np.exp(-xh))) * yh + np.float32(0.1) * xh,
                               rtol=1e-4, atol=1e-5)
    rep.add("wgpu", f"elementwise chain, {n} f32 (vec4)", gb / t, "GB/s")
    s = 512 if quick else 4096
    a = WgpuArray.from_numpy(rng.standard_normal((s, s)).astype(np.float32))
    b = WgpuArray.from_numpy(rng.standard_normal((s, s)).astype(np.float32))
    c = WgpuArray.empty((s, s), cube.f32)
    L = cube.library
    t = median_time(lambda: L.matmul(a, b, out=c), inner=3, repeats=5, sync=synchronize)
    rep.add("wgpu", f"matmul {s}^3 float32", 2 * s ** 3 / t / 1e12, "TFLOP/s")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    p.add_argument("--only", default="cpu,cuda,wgpu", help="comma-separated sections")
    p.add_argument("--out", help="write the results as markdown to this file")
    args = p.parse_args(argv)
    only = set(args.only.split(","))
    rep = Report()
    print(f"# ember.cube benchmark on {platform.node()} ({platform.processor() or platform.machine()}); "
          "medians of repeated runs, same process")
    if "cpu" in only:
        bench_cpu(rep, args.quick)
    if "cuda" in only:
        if testing.has_cuda():
            bench_cuda(rep, args.quick)
        else:
            print("[cuda] skipped: no CuPy or no GPU")
    if "wgpu" in only:
        if testing.has_wgpu():
            bench_wgpu(rep, args.quick)
        else:
            print("[wgpu] skipped: no wgpu or no adapter")
    if args.out:
        path = pathlib.Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"### ember.cube on {platform.node()}\n\n{rep.markdown()}\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
