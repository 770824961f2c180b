"""ember's CUDA backend against PyTorch eager on the same GPU, in one run (needs CuPy and a GPU).

    python bench/backends.py [--markdown FILE] [--quick]

1. per-op overhead: ``a + b`` on 4 float32 elements, microseconds per op (10,000 ops, one sync; the
   ember and PyTorch loops take turns over 15 rounds, medians);
2. an elementwise op: ``a + b`` on 64M float32, GB/s counting two reads and one write;
3. matmul float32 (TF32 off), float32 with TF32, bfloat16 at 4096³ and 8192³: TFLOP/s;
4. conv2d 3x3 (batch 64, 128 -> 128 channels, 28x28, padding 1) forward, and forward plus backward,
   float32 with TF32 allowed on both sides (PyTorch's cuDNN default): milliseconds;
5. softmax and layer_norm over the last dim of 32768x4096 float32: GB/s (one read, one write);
6. a ResNet-50 training step (batch 32, 224x224, float32 with TF32 allowed on both sides, SGD with
   momentum): images per second. ember runs ``ember.models.resnet50``; PyTorch the same network
   defined in plain torch (bench/models.py's TorchResNet50).

Diagnostics, run only when named in ``--only``: ``hostcost`` (host microseconds per CuPy building block:
allocation, kernel launches, ufuncs, reductions, cuBLAS) and ``convparts`` (GPU milliseconds of the
convolution and batch-norm building blocks, by CUDA events). The ResNet row also prints a per-op profile
(synchronised GPU time and host issue time per op type); ``EMBER_BENCH_CPROFILE=1`` adds the host time
by Python function.

GPU times are medians of repeated runs bracketed by device synchronisations (CUDA events would not
see ember's host-side work, which is part of what is measured). Targets (issue 10): per-op overhead at
most 1.5x PyTorch's, bf16 matmul at least 0.9x, ResNet-50 step at least 0.5x.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
import ember.backends  # noqa: E402
from bench._harness import Table, median_time  # noqa: E402

try:
    import torch
except ImportError:
    sys.exit("bench/backends.py compares against PyTorch: install torch with CUDA")


def _sync_both():
    ember.cuda.synchronize()
    torch.cuda.synchronize()


def per_op(table: Table, quick: bool) -> None:
    n = 2000 if quick else 10000
    a, b = ember.ones(4, device="cuda"), ember.ones(4, device="cuda")
    ta, tb = torch.ones(4, device="cuda"), torch.ones(4, device="cuda")

    def loop_e():
        for _ in range(n):
            a + b

    def loop_t():
        for _ in range(n):
            ta + tb
    # the two loops take turns (15 rounds), so that a change in the host's load or clock during the run
    # lands on both columns alike; medians of the rounds, and the median of the rounds' ratios
    for loop in (loop_e, loop_t):
        loop()
    _sync_both()
    es, ts = [], []
    for _ in range(7 if quick else 15):
        for loop, out in ((loop_e, es), (loop_t, ts)):
            t0 = time.perf_counter()
            loop()
            _sync_both()
            out.append((time.perf_counter() - t0) / n)
    e, t = statistics.median(es), statistics.median(ts)
    ratios = sorted(x / y for x, y in zip(es, ts))
    print(f"# per-op rounds (ember/torch time): median {statistics.median(ratios):.2f}, "
          f"range {ratios[0]:.2f}-{ratios[-1]:.2f} over {len(ratios)} interleaved rounds")
    table.add("per-op overhead a+b (4 elements)", e * 1e6, t * 1e6, "us", False)


def elementwise(table: Table, quick: bool) -> None:
    n = (16 if quick else 64) << 20
    a, b = ember.rand(n, device="cuda"), ember.rand(n, device="cuda")
    ta, tb = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    gb = 3 * 4 * n / 1e9
    e = median_time(lambda: a + b, inner=10, sync=_sync_both)
    t = median_time(lambda: ta + tb, inner=10, sync=_sync_both)
    table.add(f"a+b, {n >> 20}M float32", gb / e, gb / t, "GB/s", True)


def matmuls(table: Table, quick: bool) -> None:
    sizes = (4096,) if quick else (4096, 8192)
    for n in sizes:
        for name, dt, tf32 in (("float32", "float32", False), ("tf32", "float32", True),
                               ("bfloat16", "bfloat16", False)):
            ember.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32
            ed = getattr(ember, dt)
            td = getattr(torch, dt)
            a, b = ember.randn(n, n, device="cuda").to(ed), ember.randn(n, n, device="cuda").to(ed)
            ta, tb = torch.randn(n, n, device="cuda", dtype=td), torch.randn(n, n, device="cuda", dtype=td)
            inner = 3 if n == 8192 else 10
            e = median_time(lambda a=a, b=b: a @ b, inner=inner, sync=_sync_both)
            t = median_time(lambda ta=ta, tb=tb: ta @ tb, inner=inner, sync=_sync_both)
            flop = 2 * n ** 3 / 1e12
            table.add(f"matmul {name} {n}^3", flop / e, flop / t, "TFLOP/s", True)
            del a, b, ta, tb
    ember.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def conv(table: Table, quick: bool) -> None:
    ember.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    N = 16 if quick else 64
    x = ember.randn(N, 128, 28, 28, device="cuda", requires_grad=True)
    w = ember.randn(128, 128, 3, 3, device="cuda", requires_grad=True)
    tx = torch.randn(N, 128, 28, 28, device="cuda", requires_grad=True)
    tw = torch.randn(128, 128, 3, 3, device="cuda", requires_grad=True)
    with ember.no_grad():
        e = median_time(lambda: ember.nn.functional.conv2d(x, w, padding=1), inner=5, sync=_sync_both)
    with torch.no_grad():
        t = median_time(lambda: torch.nn.functional.conv2d(tx, tw, padding=1), inner=5, sync=_sync_both)
    table.add(f"conv2d 3x3 fwd, {N}x128x28x28", e * 1e3, t * 1e3, "ms", False)

    def step_e():
        ember.nn.functional.conv2d(x, w, padding=1).sum().backward()

    def step_t():
        torch.nn.functional.conv2d(tx, tw, padding=1).sum().backward()
    e = median_time(step_e, inner=3, sync=_sync_both)
    t = median_time(step_t, inner=3, sync=_sync_both)
    table.add(f"conv2d 3x3 fwd+bwd, {N}x128x28x28", e * 1e3, t * 1e3, "ms", False)
    ember.backends.cuda.matmul.allow_tf32 = False


def norms(table: Table, quick: bool) -> None:
    rows = 8192 if quick else 32768
    x = ember.randn(rows, 4096, device="cuda")
    tx = torch.randn(rows, 4096, device="cuda")
    gb = 2 * 4 * rows * 4096 / 1e9
    e = median_time(lambda: ember.softmax(x, -1), inner=5, sync=_sync_both)
    t = median_time(lambda: torch.softmax(tx, -1), inner=5, sync=_sync_both)
    table.add(f"softmax {rows}x4096 float32", gb / e, gb / t, "GB/s", True)
    w, b = ember.ones(4096, device="cuda"), ember.zeros(4096, device="cuda")
    tw, tb = torch.ones(4096, device="cuda"), torch.zeros(4096, device="cuda")
    e = median_time(lambda: ember.nn.functional.layer_norm(x, (4096,), w, b), inner=5, sync=_sync_both)
    t = median_time(lambda: torch.nn.functional.layer_norm(tx, (4096,), tw, tb), inner=5, sync=_sync_both)
    table.add(f"layer_norm {rows}x4096 float32", gb / e, gb / t, "GB/s", True)


def resnet50(table: Table, quick: bool) -> None:
    import ember.models
    from bench.models import TorchResNet50
    ember.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    batch = 8 if quick else 32
    model = ember.models.resnet50().to("cuda")
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = ember.randn(batch, 3, 224, 224, device="cuda")
    y = ember.randint(0, 1000, (batch,), device="cuda")
    loss_fn = ember.nn.CrossEntropyLoss()
    tmodel = TorchResNet50().cuda()
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.01, momentum=0.9)
    tx = torch.randn(batch, 3, 224, 224, device="cuda")
    ty = torch.randint(0, 1000, (batch,), device="cuda")
    tloss = torch.nn.CrossEntropyLoss()

    def step_e():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    def step_t():
        topt.zero_grad()
        tloss(tmodel(tx), ty).backward()
        topt.step()
    e = median_time(step_e, repeats=5, warmup=2, sync=_sync_both)
    t = median_time(step_t, repeats=5, warmup=2, sync=_sync_both)
    table.add(f"ResNet-50 train step, batch {batch}", batch / e, batch / t, "img/s", True)
    _profile_ops("ResNet-50 train step", step_e)
    if os.environ.get("EMBER_BENCH_CPROFILE"):
        _cprofile("ResNet-50 train step", step_e)
    ember.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def _profile_ops(what: str, step) -> None:
    """Where one call of ``step`` spends its time, op by op: with a device sync around every op (GPU time
    plus launch, so the total exceeds the step's normal time), and without syncs (the host's cost of issuing
    each op: ember's frontend and dispatch plus CuPy's launch). A step whose host time is close to its wall
    time is bound by the host (op count and per-op overhead), not by the GPU kernels."""
    import collections
    backend = ember.device("cuda").backend.inner
    plain = backend._run
    spent: dict = collections.defaultdict(float)
    host: dict = collections.defaultdict(float)
    count: dict = collections.Counter()

    def timed(op, inputs, attrs):
        backend.synchronize()
        t0 = time.perf_counter()
        out = plain(op, inputs, attrs)
        backend.synchronize()
        spent[op] += time.perf_counter() - t0
        count[op] += 1
        return out

    def issued(op, inputs, attrs):
        t0 = time.perf_counter()
        out = plain(op, inputs, attrs)
        host[op] += time.perf_counter() - t0
        return out
    backend.synchronize()
    t0 = time.perf_counter()
    step()
    t1 = time.perf_counter()
    backend.synchronize()
    t2 = time.perf_counter()
    print(f"# {what}: host done issuing after {(t1 - t0) * 1e3:.1f} ms, GPU done after {(t2 - t0) * 1e3:.1f} ms")
    for wrapper in (timed, issued):
        backend._run = wrapper
        try:
            step()
        finally:
            backend._run = plain
        backend.synchronize()
    total, htotal = sum(spent.values()), sum(host.values())
    print(f"# {what}: {total * 1e3:.1f} ms in {sum(count.values())} ops synchronised, {htotal * 1e3:.1f} ms "
          "of it issuing the ops on the host (backend.run only, without syncs); top ops:")
    print(f"#   {'op':<24} {'synced ms':>9}  {'calls':>5}  {'share':>5}  {'host ms':>8}")
    for op, t in sorted(spent.items(), key=lambda kv: -kv[1])[:20]:
        print(f"#   {op:<24} {t * 1e3:9.2f}  {count[op]:5d}  {100 * t / total:4.1f}%  {host[op] * 1e3:8.2f}")


def host_costs(table: Table, quick: bool) -> None:
    """Host microseconds per call of the CuPy building blocks that ember's CUDA ops are made of (a step that
    is bound by the host spends its time here): allocation, kernel launches by kind and argument count,
    ufuncs, reductions, cuBLAS. Printed as comments; nothing to compare with PyTorch."""
    import cupy
    import numpy as np
    from ember.backend.cuda import kernels
    a = cupy.ones((64, 64), cupy.float32)
    b = cupy.ones((8, 64, 64), cupy.float32)
    raw = cupy.RawKernel(r"""extern "C" __global__ void k3(float* x, int n, int m) { }
extern "C" __global__ void k17(float* x, float* y, int a, int b, int c, int d, int e, int f, int g, int h, int i,
                               int j, int k, int l, int m, int n, int o) { }""", "k3")
    raw17 = cupy.RawKernel(raw.code, "k17")
    ew = cupy.ElementwiseKernel("T x, int32 k", "T y", "y = x * k", "ember_bench_ew")
    i32 = np.int32
    cases = {
        "cupy.empty": lambda: cupy.empty((64, 64), cupy.float32),
        "RawKernel, 3 args": lambda: raw((1,), (32,), (a, i32(1), i32(2))),
        "RawKernel, 17 args": lambda: raw17((1,), (32,), (a, a) + (i32(1),) * 15),
        "ElementwiseKernel, 1 array + 1 scalar": lambda: ew(a, 3),
        "ufunc a * 2.0": lambda: a * 2.0,
        "ufunc a * b (arrays)": lambda: a * a,
        "ufunc in place, out=, casting": lambda: cupy.multiply(a, 2.0, out=a, casting="unsafe"),
        "sum(axis=0)": lambda: b.sum(axis=0),
        "ascontiguousarray (already)": lambda: cupy.ascontiguousarray(a),
        "copy of a transposed view": lambda: cupy.ascontiguousarray(a.T),
        "cupy.matmul 2-d": lambda: cupy.matmul(a, a),
        "kernels.gemm_batched (cuBLAS strided batched)": lambda: kernels.gemm_batched(cupy, a, b),
    }
    n = 300 if quick else 2000
    for name, fn in cases.items():
        fn()
        ember.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        ember.cuda.synchronize()
        print(f"# host cost {name:<48} {(t1 - t0) / n * 1e6:7.2f} us/call")


def conv_parts(table: Table, quick: bool) -> None:
    """GPU milliseconds (CUDA events, medians) of the building blocks of the CUDA backend's convolution and
    batch norm, on the conv row's shape (3x3, 64x128x28x28, TF32) and a ResNet 1x1 and batch-norm shape:
    im2col in both column layouts, the per-sample batched GEMM against one 2-d GEMM over N*L plus the
    layout transpose, col2im's gather, batch norm's kernels. Printed as comments."""
    import cupy
    import numpy as np
    from ember.backend.cuda import kernels
    ember.backends.cuda.matmul.allow_tf32 = True
    be = ember.device("cuda").backend.inner
    ops = be._ops

    def gpu_ms(fn, reps=20):
        fn()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        times = []
        for _ in range(reps):
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end))
        return sorted(times)[len(times) // 2]

    N = 16 if quick else 64
    x = cupy.random.standard_normal((N, 128, 28, 28), dtype=cupy.float32)
    w = cupy.random.standard_normal((128, 128, 3, 3), dtype=cupy.float32)
    k = kernels.conv_kernel("im2col", x.dtype)
    L, CK = 28 * 28, 128 * 9
    i32 = np.int32
    geo = (i32(128), i32(28), i32(28), i32(3), i32(3), i32(28), i32(28), i32(N), i32(1), i32(1), i32(1), i32(1),
           i32(1), i32(1))
    col_ps = cupy.empty((N, CK, L), cupy.float32)
    col_cn = cupy.empty((CK, N * L), cupy.float32)
    parts = {
        "im2col per-sample (N, CK, L)": lambda: k(((L + 255) // 256, CK, N), (256,), (x, col_ps) + geo + (i32(1),)),
        "im2col (CK, N*L)": lambda: k(((L + 255) // 256, CK, N), (256,), (x, col_cn) + geo + (i32(0),)),
        "GEMM per-sample batched (W shared)": lambda: kernels.gemm_batched(cupy, w.reshape(128, CK), col_ps),
        "GEMM 2-d over N*L (cupy.matmul)": lambda: cupy.matmul(w.reshape(128, CK), col_cn),
        "transpose (O, N, L) -> (N, O, L)": lambda: cupy.ascontiguousarray(
            cupy.empty((128, N, L), cupy.float32).swapaxes(0, 1)),
        "conv forward op (whole)": lambda: ops["conv"](x, w, stride=(1, 1), padding=((1, 1), (1, 1)),
                                                       dilation=(1, 1), groups=1),
        "conv_transpose op (input grad)": lambda: ops["conv_transpose"](
            x, w, stride=(1, 1), padding=((1, 1), (1, 1)), dilation=(1, 1), groups=1),
        "conv_weight op": lambda: ops["conv_weight"](x, x, kernel_size=(3, 3), stride=(1, 1),
                                                     padding=((1, 1), (1, 1)), dilation=(1, 1), groups=1),
    }
    xb = cupy.random.standard_normal((32 if not quick else 8, 256, 56, 56), dtype=cupy.float32)
    w1 = cupy.random.standard_normal((64, 256, 1, 1), dtype=cupy.float32)
    g1 = cupy.random.standard_normal((xb.shape[0], 64, 56, 56), dtype=cupy.float32)
    wv, bv = cupy.ones((256, 1, 1), cupy.float32), cupy.zeros((256, 1, 1), cupy.float32)
    parts.update({
        "1x1 conv 256->64 @56x56 fwd": lambda: ops["conv"](xb, w1, stride=(1, 1), padding=((0, 0), (0, 0)),
                                                            dilation=(1, 1), groups=1),
        "1x1 conv weight grad": lambda: ops["conv_weight"](xb, g1, kernel_size=(1, 1), stride=(1, 1),
                                                           padding=((0, 0), (0, 0)), dilation=(1, 1), groups=1),
        "batch norm fwd 256ch @56x56": lambda: ops["norm_affine"](xb, wv, bv, dim=(0, 2, 3), eps=1e-5),
        "batch norm bwd 256ch @56x56": lambda: ops["norm_affine_backward"](xb, wv, xb, dim=(0, 2, 3), eps=1e-5,
                                                                           bias_shape=(256, 1, 1)),
        "copy of the same bytes (bandwidth reference)": lambda: xb.copy(),
    })
    for name, fn in parts.items():
        print(f"# gpu time {name:<46} {gpu_ms(fn):8.3f} ms")
    ember.backends.cuda.matmul.allow_tf32 = False


def _cprofile(what: str, step) -> None:
    """The host's time in one call of ``step`` by Python function (cProfile, no device syncs): where the
    time of a host-bound step goes. Enabled by the environment variable EMBER_BENCH_CPROFILE=1."""
    import cProfile
    import io
    import pstats
    prof = cProfile.Profile()
    ember.cuda.synchronize()
    prof.enable()
    step()
    prof.disable()
    ember.cuda.synchronize()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(45)
    print(f"# {what}: host time by function (cProfile, tottime)")
    print(out.getvalue())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--markdown", help="also write the table as markdown to this file")
    p.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test)")
    p.add_argument("--only", default="", help="comma-separated subset: perop,elementwise,matmul,conv,norms,resnet; "
                   "diagnostics (not in the default run): hostcost,convparts")
    args = p.parse_args(argv)
    if not ember.cuda.is_available():
        sys.exit("bench/backends.py needs CuPy and a CUDA GPU")
    table = Table(f"CUDA backend vs PyTorch eager, {ember.cuda.get_device_name()}")
    table.header()
    parts = {"perop": per_op, "elementwise": elementwise, "matmul": matmuls, "conv": conv, "norms": norms,
             "resnet": resnet50, "hostcost": host_costs, "convparts": conv_parts}
    chosen = [s for s in args.only.split(",") if s] or [p for p in parts if p not in ("hostcost", "convparts")]
    for name in chosen:
        t0 = time.perf_counter()
        try:
            parts[name](table, args.quick)
        except Exception as e:  # noqa: BLE001 - report and go on: one broken row must not hide the others
            print(f"{name}: FAILED {type(e).__name__}: {e}", flush=True)
        print(f"# ({name} took {time.perf_counter() - t0:.1f} s)", flush=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table.markdown() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
