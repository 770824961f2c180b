"""ember's CUDA backend against PyTorch eager on the same GPU, in one run (needs CuPy and a GPU).

    python bench/backends.py [--markdown FILE] [--quick]

1. per-op overhead: ``a + b`` on 4 float32 elements, microseconds per op (10,000 ops, one sync);
2. an elementwise op: ``a + b`` on 64M float32, GB/s counting two reads and one write;
3. matmul float32 (TF32 off), float32 with TF32, bfloat16 at 4096³ and 8192³: TFLOP/s;
4. conv2d 3x3 (batch 64, 128 -> 128 channels, 28x28, padding 1) forward, and forward plus backward,
   float32 with TF32 allowed on both sides (PyTorch's cuDNN default): milliseconds;
5. softmax and layer_norm over the last dim of 32768x4096 float32: GB/s (one read, one write);
6. a ResNet-50 training step (batch 32, 224x224, float32 with TF32 allowed on both sides, SGD with
   momentum): images per second. ember runs ``ember.models.resnet50``; PyTorch the same network
   defined in plain torch (bench/models.py's TorchResNet50).

GPU times are medians of repeated runs bracketed by device synchronisations (CUDA events would not
see ember's host-side work, which is part of what is measured). Targets (issue 10): per-op overhead at
most 1.5x PyTorch's, bf16 matmul at least 0.9x, ResNet-50 step at least 0.5x.
"""

from __future__ import annotations

import argparse
import os
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
    e = median_time(loop_e, repeats=5, sync=_sync_both) / n
    t = median_time(loop_t, repeats=5, sync=_sync_both) / n
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
    ember.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def _profile_ops(what: str, step) -> None:
    """Where one call of ``step`` spends its GPU time, op by op (a sync around every op, so the total
    exceeds the step's normal time): the top ops, for finding what to speed up next."""
    import collections
    backend = ember.device("cuda").backend.inner
    plain = backend._run
    spent: dict = collections.defaultdict(float)
    count: dict = collections.Counter()

    def timed(op, inputs, attrs):
        backend.synchronize()
        t0 = time.perf_counter()
        out = plain(op, inputs, attrs)
        backend.synchronize()
        spent[op] += time.perf_counter() - t0
        count[op] += 1
        return out
    backend._run = timed
    try:
        step()
    finally:
        backend._run = plain
    total = sum(spent.values())
    print(f"# {what}: {total * 1e3:.1f} ms in {sum(count.values())} ops (synchronised); top ops:")
    for op, t in sorted(spent.items(), key=lambda kv: -kv[1])[:15]:
        print(f"#   {op:<24} {t * 1e3:8.2f} ms  {count[op]:5d} calls  {100 * t / total:5.1f}%")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--markdown", help="also write the table as markdown to this file")
    p.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test)")
    p.add_argument("--only", default="", help="comma-separated subset: perop,elementwise,matmul,conv,norms,resnet")
    args = p.parse_args(argv)
    if not ember.cuda.is_available():
        sys.exit("bench/backends.py needs CuPy and a CUDA GPU")
    table = Table(f"CUDA backend vs PyTorch eager, {ember.cuda.get_device_name()}")
    table.header()
    parts = {"perop": per_op, "elementwise": elementwise, "matmul": matmuls, "conv": conv, "norms": norms,
             "resnet": resnet50}
    chosen = [s for s in args.only.split(",") if s] or list(parts)
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
