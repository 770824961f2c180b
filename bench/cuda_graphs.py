"""A ResNet-50 training step replayed as a CUDA graph, ember against PyTorch, in one run (needs a GPU).

    python bench/cuda_graphs.py [--markdown FILE] [--batch 32]

Both libraries run the same step (batch 32, 224x224, float32 with TF32 allowed, SGD with momentum):
eagerly, and captured once (``ember.cuda.graph`` / ``torch.cuda.graph``) then replayed. A replay
runs the captured kernels with no Python in between, so it measures the GPU work alone; the eager
rows measure what a plain training loop gets, host overhead included. Images per second, medians of
repeated runs bracketed by device synchronisations.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
import ember.backends  # noqa: E402
import ember.models  # noqa: E402
from bench._harness import Table, median_time  # noqa: E402

try:
    import torch
except ImportError:
    sys.exit("bench/cuda_graphs.py compares against PyTorch: install torch with CUDA")


def _sync():
    ember.cuda.synchronize()
    torch.cuda.synchronize()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--markdown", help="also write the table as markdown to this file")
    p.add_argument("--batch", type=int, default=32)
    args = p.parse_args(argv)
    if not ember.cuda.is_available() or not torch.cuda.is_available():
        sys.exit("bench/cuda_graphs.py needs a CUDA GPU for both ember (CuPy) and PyTorch")
    from bench.models import TorchResNet50
    ember.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    n = args.batch
    table = Table(f"ResNet-50 training step, batch {n}, eager and as a CUDA graph")
    table.header()

    model = ember.models.resnet50().to("cuda")
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = ember.nn.CrossEntropyLoss()
    x = ember.randn(n, 3, 224, 224, device="cuda")
    y = ember.randint(0, 1000, (n,), device="cuda")

    def step_e():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    tmodel = TorchResNet50().cuda()
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.01, momentum=0.9)
    tloss = torch.nn.CrossEntropyLoss()
    tx = torch.randn(n, 3, 224, 224, device="cuda")
    ty = torch.randint(0, 1000, (n,), device="cuda")

    def step_t():
        topt.zero_grad(set_to_none=True)
        loss = tloss(tmodel(tx), ty)
        loss.backward()
        topt.step()
        return loss

    e = median_time(step_e, repeats=7, warmup=3, sync=_sync)
    t = median_time(step_t, repeats=7, warmup=3, sync=_sync)
    table.add("eager step", n / e, n / t, "img/s", True)

    g = ember.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with ember.cuda.graph(g):
        step_e()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # PyTorch's recipe: warm up on a side stream before capturing
        for _ in range(3):
            step_t()
    torch.cuda.current_stream().wait_stream(side)
    tg = torch.cuda.CUDAGraph()
    topt.zero_grad(set_to_none=True)
    with torch.cuda.graph(tg):
        step_t()
    e = median_time(g.replay, repeats=7, warmup=3, sync=_sync)
    t = median_time(tg.replay, repeats=7, warmup=3, sync=_sync)
    table.add("CUDA graph replay of the step", n / e, n / t, "img/s", True)
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write(table.markdown() + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
