"""The ops of an MNIST CNN training step (batch 128) one by one: the numpy backend, CpuC and PyTorch
on the same inputs, min ms of repeated calls (backend ops called directly, no autograd), interleaved.

    python bench/cpuc_ops.py [name ...]
"""

from __future__ import annotations

import functools
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
from ember.backend.cpuc import CpuC  # noqa: E402
from ember.backend.numpy import Numpy  # noqa: E402


def cases(rng):
    f = np.float32
    x1 = rng.standard_normal((128, 1, 28, 28)).astype(f)
    w1 = rng.standard_normal((32, 1, 3, 3)).astype(f)
    a1 = rng.standard_normal((128, 32, 28, 28)).astype(f)
    x2 = rng.standard_normal((128, 32, 14, 14)).astype(f)
    w2 = rng.standard_normal((64, 32, 3, 3)).astype(f)
    a2 = rng.standard_normal((128, 64, 14, 14)).astype(f)
    g1 = rng.standard_normal((128, 32, 14, 14)).astype(f)
    cv = dict(stride=(1, 1), padding=((1, 1), (1, 1)), dilation=(1, 1), groups=1)
    pool = dict(kernel_size=(2, 2), stride=(2, 2), padding=((0, 0), (0, 0)), dilation=(1, 1))
    idx = Numpy().run("max_pool", (a1,), pool)[1]
    wb, bb = np.ones((1, 32, 1, 1), f), np.zeros((1, 32, 1, 1), f)
    import torch
    T = torch.from_numpy
    F = torch.nn.functional
    tw = torch.randn(32)
    return [
        ("conv1 fwd", "conv", (x1, w1), cv, lambda: F.conv2d(T(x1), T(w1), padding=1)),
        ("conv2 fwd", "conv", (x2, w2), cv, lambda: F.conv2d(T(x2), T(w2), padding=1)),
        ("conv2 grad weight", "conv_weight", (x2, a2), dict(kernel_size=(3, 3), **cv),
         lambda: torch.ops.aten.convolution_backward(T(a2), T(x2), T(w2), None, (1, 1), (1, 1), (1, 1), False,
                                                     (0, 0), 1, (False, True, False))),
        ("conv1 grad weight", "conv_weight", (x1, a1), dict(kernel_size=(3, 3), **cv),
         lambda: torch.ops.aten.convolution_backward(T(a1), T(x1), T(w1), None, (1, 1), (1, 1), (1, 1), False,
                                                     (0, 0), 1, (False, True, False))),
        ("conv2 grad input", "conv_transpose", (a2, w2), cv,
         lambda: torch.ops.aten.convolution_backward(T(a2), T(x2), T(w2), None, (1, 1), (1, 1), (1, 1), False,
                                                     (0, 0), 1, (True, False, False))),
        ("max_pool 2x2", "max_pool", (a1,), pool, lambda: F.max_pool2d(T(a1), 2, return_indices=True)),
        ("max_pool backward", "max_pool_backward", (g1, idx), dict(input_size=(28, 28), disjoint=True),
         lambda: torch.ops.aten.max_pool2d_with_indices_backward(T(g1), T(a1), (2, 2), (2, 2), (0, 0), (1, 1), False,
                                                                 T(idx))),
        ("batch norm fwd", "norm_affine", (a1, wb, bb), dict(dim=(0, 2, 3), eps=1e-5),
         lambda: F.batch_norm(T(a1), None, None, tw, tw, training=True)),
        ("batch norm bwd", "norm_affine_backward", (a1, wb, a1), dict(dim=(0, 2, 3), eps=1e-5, bias_shape=(32,)),
         lambda: torch.ops.aten.native_batch_norm_backward(T(a1), T(a1), tw, None, None, tw, tw, True, 1e-5,
                                                           (True, True, True))),
        ("relu", "relu", (a1,), {}, lambda: torch.relu(T(a1))),
        ("le (relu mask)", "le", (a1, 0.0), {}, lambda: T(a1) <= 0),
        ("where (relu grad)", "where", (a1 > 0, 0.0, a1), {}, lambda: torch.where(T(a1) > 0, 0.0, T(a1))),
        ("softmax rows", "softmax", (a2.reshape(-1, 196),), dict(dim=1),
         lambda: torch.softmax(T(a2).reshape(-1, 196), 1)),
        ("sum last dim", "sum", (a1,), dict(dim=(3,), keepdim=False, dtype=ember.float32), lambda: T(a1).sum(3)),
    ]


def best(fn, reps=7):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts) * 1e3


def main():
    only = sys.argv[1:]
    N, C = Numpy(), CpuC()
    print(f"{'op':<20} {'numpy ms':>9} {'cpuc ms':>9} {'torch ms':>9}  cpuc/numpy  cpuc/torch (speed)")
    for name, op, ins, attrs, tfn in cases(np.random.default_rng(0)):
        if only and not any(o in name for o in only):
            continue
        numpy_fn = functools.partial(N.run, op, ins, attrs)
        cpuc_fn = functools.partial(C.run, op, ins, attrs)
        tn, tc, tt = best(numpy_fn), best(cpuc_fn), best(tfn)
        print(f"{name:<20} {tn:9.2f} {tc:9.2f} {tt:9.2f}  {tn / tc:9.2f}x  {tt / tc:9.2f}x")


if __name__ == "__main__":
    main()
