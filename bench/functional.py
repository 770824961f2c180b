"""nn.functional benchmarks: ember (numpy CPU backend) against PyTorch eager, forward only, one run.

    python bench/functional.py [--markdown] [--quick]

conv2d (batch 64, 3->64 channels, 56x56, 3x3, padding 1) and (64->128, 28x28, 3x3), max_pool2d,
bilinear interpolate, layer_norm, and scaled_dot_product_attention (batch 8, 8 heads, 512 tokens,
64 dims). Figures are calls per second (or GFLOP/s for conv2d) from medians of repeated runs.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
import ember.nn.functional as EF  # noqa: E402
from bench._harness import Table, median_time  # noqa: E402

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    sys.exit("bench/functional.py compares against PyTorch: pip install torch==2.13.0")


def both(*shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    return ember.from_numpy(a), torch.from_numpy(a)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smaller batches, for a smoke test")
    args = ap.parse_args()
    n = 8 if args.quick else 64
    reps = 3 if args.quick else 7
    table = Table(f"bench/functional.py — torch {torch.__version__} ({torch.get_num_threads()} threads), "
                  f"{os.cpu_count()} cores, batch {n}")
    table.header()

    with ember.no_grad(), torch.no_grad():
        for cin, cout, hw in ((3, 64, 56), (64, 128, 28)):
            ex, tx = both(n, cin, hw, hw, seed=1)
            ew, tw = both(cout, cin, 3, 3, seed=2)
            eb, tb = both(cout, seed=3)
            got, want = EF.conv2d(ex, ew, eb, padding=1).numpy(), TF.conv2d(tx, tw, tb, padding=1).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
            flops = 2 * n * cout * hw * hw * cin * 9 / 1e9
            e = median_time(lambda ex=ex, ew=ew, eb=eb: EF.conv2d(ex, ew, eb, padding=1), repeats=reps)
            t = median_time(lambda tx=tx, tw=tw, tb=tb: TF.conv2d(tx, tw, tb, padding=1), repeats=reps)
            table.add(f"conv2d {cin}->{cout}, {hw}x{hw}, 3x3, batch {n}", flops / e, flops / t, "GFLOP/s", True)

        ex, tx = both(n, 64, 56, 56, seed=4)
        e = median_time(lambda: EF.max_pool2d(ex, 2), repeats=reps)
        t = median_time(lambda: TF.max_pool2d(tx, 2), repeats=reps)
        table.add(f"max_pool2d 2x2, ({n}, 64, 56, 56)", 1 / e, 1 / t, "calls/s", True)

        ex, tx = both(n, 64, 28, 28, seed=5)
        e = median_time(lambda: EF.interpolate(ex, scale_factor=2, mode="bilinear"), repeats=reps)
        t = median_time(lambda: TF.interpolate(tx, scale_factor=2, mode="bilinear"), repeats=reps)
        table.add(f"interpolate bilinear x2, ({n}, 64, 28, 28)", 1 / e, 1 / t, "calls/s", True)

        ex, tx = both(n * 128, 768, seed=6)
        ew, tw = both(768, seed=7)
        eb, tb = both(768, seed=8)
        e = median_time(lambda: EF.layer_norm(ex, (768,), ew, eb), repeats=reps)
        t = median_time(lambda: TF.layer_norm(tx, (768,), tw, tb), repeats=reps)
        table.add(f"layer_norm ({n * 128}, 768)", 1 / e, 1 / t, "calls/s", True)

        b = 2 if args.quick else 8
        eq, tq = both(b, 8, 512, 64, seed=9)
        ek, tk = both(b, 8, 512, 64, seed=10)
        ev, tv = both(b, 8, 512, 64, seed=11)
        got = EF.scaled_dot_product_attention(eq, ek, ev).numpy()
        want = TF.scaled_dot_product_attention(tq, tk, tv).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
        e = median_time(lambda: EF.scaled_dot_product_attention(eq, ek, ev), repeats=reps)
        t = median_time(lambda: TF.scaled_dot_product_attention(tq, tk, tv), repeats=reps)
        table.add(f"scaled_dot_product_attention ({b}, 8, 512, 64)", 1 / e, 1 / t, "calls/s", True)

    if args.markdown:
        print()
        print(table.markdown())


if __name__ == "__main__":
    main()
