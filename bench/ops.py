"""Core op benchmarks: ember (numpy CPU backend) against PyTorch eager, measured in one run.

    python bench/ops.py            # prints one line per figure
    python bench/ops.py --markdown # also prints a markdown table (for bench/results/)

Figures: per-op overhead (a + b on 4 float32 elements, µs per op), an elementwise chain on 16M
float32 (GB/s of input read + output written), a 2048² float32 matmul (GFLOP/s), softmax over the
last dim of a (4096, 4096) float32 tensor (GB/s).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
from bench._harness import Table, median_time  # noqa: E402

try:
    import torch
except ImportError:
    sys.exit("bench/ops.py compares against PyTorch: pip install torch==2.13.0")


def chain(lib, x):
    return (lib.tanh(x * 1.5 + 0.5) * lib.sigmoid(x) + x * x) * 0.5


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke test")
    args = ap.parse_args()
    torch.manual_seed(0)
    table = Table(f"bench/ops.py — numpy {np.__version__}, torch {torch.__version__} "
                  f"({torch.get_num_threads()} threads), {os.cpu_count()} cores")
    table.header()

    # per-op overhead: a + b on 4 elements
    a, b = ember.ones(4), ember.ones(4)
    ta, tb = torch.ones(4), torch.ones(4)
    n = 20000 if args.quick else 200000
    e = median_time(lambda: a + b, inner=n, repeats=7)
    t = median_time(lambda: ta + tb, inner=n, repeats=7)
    table.add("per-op overhead, a + b on 4 elements", e * 1e6, t * 1e6, "us/op", False)

    # elementwise chain, 16M float32
    size = 1 << 20 if args.quick else 1 << 24
    xn = np.random.default_rng(0).standard_normal(size, dtype=np.float32)
    x, tx = ember.from_numpy(xn), torch.from_numpy(xn)
    gb = 2 * xn.nbytes / 1e9
    e = median_time(lambda: chain(ember, x), repeats=5)
    t = median_time(lambda: chain(torch, tx), repeats=5)
    table.add(f"elementwise chain, {size // (1 << 20)}M float32", gb / e, gb / t, "GB/s", True)

    # matmul
    m = 512 if args.quick else 2048
    an = np.random.default_rng(1).standard_normal((m, m), dtype=np.float32)
    bn = np.random.default_rng(2).standard_normal((m, m), dtype=np.float32)
    ea, eb, ta2, tb2 = ember.from_numpy(an), ember.from_numpy(bn), torch.from_numpy(an), torch.from_numpy(bn)
    flops = 2 * m ** 3 / 1e9
    e = median_time(lambda: ea @ eb, repeats=7)
    t = median_time(lambda: ta2 @ tb2, repeats=7)
    table.add(f"matmul {m}x{m} float32", flops / e, flops / t, "GFLOP/s", True)

    # softmax over rows
    r = 1024 if args.quick else 4096
    sn = np.random.default_rng(3).standard_normal((r, r), dtype=np.float32)
    es, ts = ember.from_numpy(sn), torch.from_numpy(sn)
    gb = 2 * sn.nbytes / 1e9
    e = median_time(lambda: es.softmax(-1), repeats=7)
    t = median_time(lambda: ts.softmax(-1), repeats=7)
    table.add(f"softmax ({r}, {r}) float32, dim -1", gb / e, gb / t, "GB/s", True)

    if args.markdown:
        print()
        print(table.markdown())


if __name__ == "__main__":
    main()
