"""Fusion (the default stacks and the ``:fused`` devices) against the unfused numpy backend, PyTorch eager
and torch.compile, in one run.

    python bench/fusion.py [--quick] [--markdown]

CPU section (always):

* the elementwise chain ``(tanh(x*1.5+0.5)*sigmoid(x) + x*x)*0.5`` on 16M float32, in GB/s
  (one read of x and one write of the result: 8 bytes an element);
* an MLP 784-512-512-10 training step at batch 128 (cross-entropy, SGD), in steps/s, also under
  ``ember.compile`` (column ``compiled``: the step captured once and replayed); the section
  ``mlp-interleaved`` (not run by default) measures the same step with the columns taking turns,
  which keeps a shared machine's changing load from favouring one column;
* the MNIST CNN training step (``ember.examples.mnist``'s model, Adam, batch 64), in steps/s;
* the cold start: the first fused chain in a fresh cache directory (generation and C compile).

GPU section (``gpu``): runs when ``ember.device("cuda")`` exists (the issue's GPU workloads: the chain
on 256M float32, softmax and layer_norm on (32768, 4096), in GB/s, ten calls per timed sample), and
says why not otherwise. ``gpt2``: the GPT-2 124M training step (batch 8 x 1024 tokens, bf16 autocast,
AdamW, dropout 0.1) in ms, and each column's first step (its cold start); there ``ember`` is the eager
step on the default ``cuda`` (Fusion with its cost model; ``unfused`` is cuda:unfused, a column unless
EMBER_DEFAULT_FUSION=0 makes ``cuda`` the unfused stack), ``compiled`` ember.compile of the cuda:fused step,
``fused`` the eager cuda:fused step and ``graph`` ember.compile of the unfused step (a CUDA graph of its
kernels); BENCH_GPT2_COLUMNS=ember,unfused,... picks columns. ``gpt2-interleaved`` (not run by
default) times the eager steps of ``cuda``, cuda:unfused and PyTorch taking turns in one process: the
comparison to quote on a host whose speed moves. torch.compile may be unavailable or fail on a machine:
its column then says n/a.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
from bench._harness import median_time  # noqa: E402

try:
    import torch
except ImportError:
    sys.exit("bench/fusion.py compares against PyTorch: pip install torch==2.13.0")

ROWS: list = []


def row(what: str, unit: str, **figures) -> None:
    """Print one line: each figure (None prints n/a) and the fused figure's ratio to the others."""
    ROWS.append((what, unit, figures))
    cells = "  ".join(f"{k} {f'{v:10.3f}' if v is not None else '       n/a'}" for k, v in figures.items())
    print(f"{what:<34} {unit:<8} {cells}", flush=True)


def chain_ember(x):
    return ((x * 1.5 + 0.5).tanh() * x.sigmoid() + x * x) * 0.5


def chain_torch(x):
    return (torch.tanh(x * 1.5 + 0.5) * torch.sigmoid(x) + x * x) * 0.5


def _cpu_columns() -> list:
    """(device, column) of the CPU sections: cpu:fused, the default "cpu" stack when it is the fused one (unless
    EMBER_DEFAULT_FUSION=0), and the numpy stack."""
    from ember import _device
    return [("cpu:fused", "fused")] + ([("cpu", "default")] if _device.FUSED_DEFAULTS else []) + \
        [("cpu:numpy", "numpy")]


def bench_chain(n: int, repeats: int) -> None:
    x0 = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    gb = 8 * n / 1e9
    figs = {}
    for dev, key in _cpu_columns():
        x = ember.tensor(x0, device=dev)
        figs[key] = gb / median_time(
            lambda x=x: chain_ember(x).numpy(), repeats=repeats)
    xt = torch.from_numpy(x0)
    figs["torch"] = gb / median_time(lambda: chain_torch(xt), repeats=repeats)
    figs["compile"] = None
    try:
        c = torch.compile(chain_torch)
        c(xt)
        figs["compile"] = gb / median_time(lambda: c(xt), repeats=repeats)
    except Exception as e:  # noqa: BLE001
        print(f"  (torch.compile failed: {type(e).__name__}: {str(e)[:120]})")
    row(f"chain {n // 2**20}M float32", "GB/s", **figs)


def _mlp_setup(dev: str, batch: int):
    """The MLP workload on ``dev``: model, SGD optimizer, one batch."""
    nn = ember.nn
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).to(dev)
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((batch, 784)).astype(np.float32), device=dev)
    y = ember.tensor(rng.integers(0, 10, batch), device=dev)
    return model, opt, x, y


def _mlp_ember(dev: str, batch: int):
    model, opt, x, y = _mlp_setup(dev, batch)

    def step():
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def _mlp_ember_compiled(batch: int):
    """The cpu:fused step of ``_mlp_ember`` under ``ember.compile`` (forward, backward, SGD step and
    zero_grad captured once, then replayed; the batch is a tensor argument, copied into the static
    input each call); ``loss.item()`` is read after the compiled call, outside it."""
    from ember._compile import compile as ember_compile
    model, opt, x, y = _mlp_setup("cpu:fused", batch)

    @ember_compile
    def train_step(x, y):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def step():
        return train_step(x, y).item()
    return step


def _mlp_torch(batch: int, compiled: bool):
    tnn = torch.nn
    torch.manual_seed(0)
    model = tnn.Sequential(tnn.Linear(784, 512), tnn.ReLU(), tnn.Linear(512, 512), tnn.ReLU(), tnn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((batch, 784)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 10, batch))

    def fwd_bwd():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    fb = torch.compile(fwd_bwd) if compiled else fwd_bwd

    def step():
        opt.zero_grad()
        loss = fb()
        opt.step()
        return loss.item()
    return step


def bench_mlp(batch: int, repeats: int) -> None:
    figs = {}
    figs["fused"] = 1 / median_time(_mlp_ember("cpu:fused", batch), inner=10, repeats=repeats, warmup=3)
    figs["compiled"] = 1 / median_time(_mlp_ember_compiled(batch), inner=10, repeats=repeats, warmup=3)
    for dev, key in _cpu_columns()[1:]:
        figs[key] = 1 / median_time(_mlp_ember(dev, batch), inner=10, repeats=repeats, warmup=3)
    figs["torch"] = 1 / median_time(_mlp_torch(batch, False), inner=10, repeats=repeats, warmup=3)
    figs["compile"] = None
    try:
        figs["compile"] = 1 / median_time(_mlp_torch(batch, True), inner=10, repeats=repeats, warmup=3)
    except Exception as e:  # noqa: BLE001
        print(f"  (torch.compile failed: {type(e).__name__}: {str(e)[:120]})")
    row(f"MLP 784-512-512-10 step, batch {batch}", "steps/s", **figs)


def bench_mlp_interleaved(batch: int, repeats: int) -> None:
    """The MLP row measured round-robin: each round runs 10 steps of every column in turn (after
    a 0.2 s pause, so that one library's idle threads, still spinning, don't take the cores of the
    next), and each column's figure is its median over the rounds. On a machine shared with other
    jobs this exposes every column to the same load, which one column after another does not."""
    import statistics
    steps = {"fused": _mlp_ember("cpu:fused", batch), "compiled": _mlp_ember_compiled(batch),
             **{key: _mlp_ember(dev, batch) for dev, key in _cpu_columns()[1:]}, "torch": _mlp_torch(batch, False)}
    try:
        steps["compile"] = _mlp_torch(batch, True)
        steps["compile"]()
    except Exception as e:  # noqa: BLE001
        print(f"  (torch.compile failed: {type(e).__name__}: {str(e)[:120]})")
    times = {k: [] for k in steps}
    for fn in steps.values():
        for _ in range(3):
            fn()
    for _ in range(repeats):
        for k, fn in steps.items():
            time.sleep(0.2)
            t0 = time.perf_counter()
            for _ in range(10):
                fn()
            times[k].append((time.perf_counter() - t0) / 10)
    figs = {k: (1 / statistics.median(times[k]) if k in times else None)
            for k in ("fused", "compiled", "default", "numpy", "torch", "compile")}
    row(f"MLP 784-512-512-10 step, batch {batch} (interleaved)", "steps/s", **figs)


def bench_cnn(batch: int, repeats: int) -> None:
    from ember.examples import mnist
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    y0 = rng.integers(0, 10, batch)
    figs = {}
    for dev, key in _cpu_columns():
        ember.manual_seed(0)
        model = mnist.MnistCNN().to(dev)
        model.train()
        opt = ember.optim.Adam(model.parameters(), lr=1e-3)
        x, y = ember.tensor(x0, device=dev), ember.tensor(y0, device=dev)

        def step(model=model, opt=opt, x=x, y=y):
            opt.zero_grad()
            loss = ember.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.item()
        figs[key] = 1 / median_time(step, inner=3, repeats=repeats, warmup=2)
    tnn = torch.nn
    torch.manual_seed(0)
    tm = tnn.Sequential(
        tnn.Conv2d(1, 32, 3, padding=1, bias=False), tnn.BatchNorm2d(32), tnn.ReLU(), tnn.MaxPool2d(2),
        tnn.Conv2d(32, 64, 3, padding=1, bias=False), tnn.BatchNorm2d(64), tnn.ReLU(), tnn.MaxPool2d(2),
        tnn.Flatten(), tnn.Dropout(0.25), tnn.Linear(64 * 7 * 7, 128), tnn.ReLU(), tnn.Dropout(0.25),
        tnn.Linear(128, 10))
    topt = torch.optim.Adam(tm.parameters(), lr=1e-3)
    xt, yt = torch.from_numpy(x0), torch.from_numpy(y0)

    def tstep():
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(tm(xt), yt)
        loss.backward()
        topt.step()
        return loss.item()
    figs["torch"] = 1 / median_time(tstep, inner=3, repeats=repeats, warmup=2)
    row(f"MNIST CNN step, batch {batch}", "steps/s", **figs)


def bench_cold_start() -> None:
    """The first fused chain in a fresh process with an empty kernel cache (generation + compile)."""
    import tempfile
    code = ("import time; t0 = time.perf_counter(); import ember; x = ember.ones(1000, device='cpu:fused'); "
            "t1 = time.perf_counter(); ((x * 1.5 + 0.5).tanh() * x.sigmoid() + x * x).mul(0.5).numpy(); "
            "print(time.perf_counter() - t1)")
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, EMBER_CACHE=d)
        cold = float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                    check=True).stdout.strip())
        warm = float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                    check=True).stdout.strip())
    print(f"{'cold start, first fused chain':<34} {'s':<8} empty cache {cold:8.3f}  disk cache {warm:8.3f}")


def _fusion_layer(device: str):
    """The Fusion layer of a device's stack (its ``flush`` runs what is pending), or None."""
    from ember.backend.fusion import Fusion
    be = ember.device(device).backend
    while be is not None and not isinstance(be, Fusion):
        be = getattr(be, "inner", None)
    return be


def _flushed(fn, layer):
    """``fn`` made to finish its fused work: the result is still held while the layer flushes (a
    pending value nobody holds is never computed), so its kernels are queued before the timer's
    sync waits for the GPU."""
    def run(*args):
        y = fn(*args)
        layer.flush()
        return y
    return run


INNER = 10  # GPU calls per timed sample


def _cuda_here(section: str) -> bool:
    """Whether ember's "cuda" device and PyTorch's CUDA both work here; prints why ``section`` is skipped
    when not."""
    if not torch.cuda.is_available():
        print(f"# {section} skipped: PyTorch has no CUDA here")
        return False
    try:
        ember.device("cuda")
    except Exception as e:  # noqa: BLE001 - no CuPy, no GPU: the section is skipped, saying why
        print(f"# {section} skipped: no ember CUDA device here ({type(e).__name__}: {str(e)[:100]})")
        return False
    return True


def bench_gpu(repeats: int) -> None:
    """The issue's GPU workloads: the chain on 256M float32, softmax and layer_norm on (32768, 4096),
    for cuda:fused (``fused``), the default ``cuda`` stack (``ember``: Fusion with its cost model; cuda:unfused
    gets a column unless EMBER_DEFAULT_FUSION=0), PyTorch eager and torch.compile, in GB/s (one read and one
    write of every element). Throughput: each sample is INNER calls issued back to back, then a
    device-wide synchronize (for the Fusion stacks after forcing each call's flush, see _flushed), as a
    training loop issues work; every column is timed the same way."""
    if not _cuda_here("GPU section"):
        return
    print(f"# GPU: {torch.cuda.get_device_name()}")
    import ember.cuda as ecuda

    def esync():
        ecuda.synchronize()

    tsync = torch.cuda.synchronize
    from ember import _device
    columns = {"fused": "cuda:fused", "ember": "cuda"}
    if _device.FUSED_DEFAULTS:  # "cuda" is the fused default: the unfused stack gets its own column
        columns["unfused"] = "cuda:unfused"

    def figures(fe, ft, make, xt, gb) -> dict:
        figs = {}
        for key, device in columns.items():
            try:
                x = make(device)
                layer = _fusion_layer(device)
                run = fe if layer is None else _flushed(fe, layer)
                t0 = time.perf_counter()
                run(x)
                esync()
                if key == "fused":
                    print(f"#   cuda:fused first call (generation + NVRTC compile): {time.perf_counter() - t0:.2f} s")
                figs[key] = gb / median_time(lambda run=run, x=x: run(x), inner=INNER, repeats=repeats, sync=esync)
            except Exception as e:  # noqa: BLE001 - report, keep the other columns
                print(f"#   {device} failed: {type(e).__name__}: {str(e)[:300]}")
                figs[key] = None
            x = None
        figs["torch"] = gb / median_time(lambda: ft(xt), inner=INNER, repeats=repeats, sync=tsync)
        try:
            c = torch.compile(ft)
            c(xt)
            figs["compile"] = gb / median_time(lambda: c(xt), inner=INNER, repeats=repeats, sync=tsync)
        except Exception:  # noqa: BLE001
            figs["compile"] = None
        return figs

    n = 256 * 2**20
    xt = torch.randn(n, device="cuda")
    row("chain 256M float32 (cuda)", "GB/s",
        **figures(chain_ember, chain_torch, lambda d: ember.randn(n, device=d), xt, 8 * n / 1e9))
    del xt
    for name, fe, ft in (("softmax", lambda a: ember.nn.functional.softmax(a, -1), lambda a: torch.softmax(a, -1)),
                         ("layer_norm", lambda a: ember.nn.functional.layer_norm(a, (4096,)),
                          lambda a: torch.nn.functional.layer_norm(a, (4096,)))):
        at = torch.randn(32768, 4096, device="cuda")
        row(f"{name} (32768, 4096) (cuda)", "GB/s",
            **figures(fe, ft, lambda d: ember.randn(32768, 4096, device=d), at, 8 * at.numel() / 1e9))
        del at


GPT2_BATCH, GPT2_SEQ = 8, 1024


def _gpt2_torch(compiled: bool):
    """GPT-2 124M in PyTorch with the same structure as ember.models.gpt2 (pre-norm blocks, tanh GELU,
    dropout 0.1, tied head, scaled_dot_product_attention with is_causal), AdamW, bf16 autocast.
    Returns (step, first_step_seconds)."""
    tnn, F = torch.nn, torch.nn.functional

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = tnn.LayerNorm(768), tnn.LayerNorm(768)
            self.c_attn, self.c_proj = tnn.Linear(768, 3 * 768), tnn.Linear(768, 768)
            self.c_fc, self.mlp_proj = tnn.Linear(768, 3072), tnn.Linear(3072, 768)
            self.drop = tnn.Dropout(0.1)

        def forward(self, x):
            b, s, e = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).view(b, s, 3, 12, 64).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.1 if self.training else 0.0)
            x = x + self.drop(self.c_proj(a.transpose(1, 2).reshape(b, s, e)))
            return x + self.drop(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")))

    class GPT2(tnn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = tnn.Embedding(50257, 768), tnn.Embedding(1024, 768)
            self.drop = tnn.Dropout(0.1)
            self.h = tnn.ModuleList(Block() for _ in range(12))
            self.ln_f = tnn.LayerNorm(768)
            self.lm_head = tnn.Linear(768, 50257, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, idx):
            x = self.drop(self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device)))
            for blk in self.h:
                x = blk(x)
            return self.lm_head(self.ln_f(x))

    torch.manual_seed(0)
    model = GPT2().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    x = torch.randint(0, 50257, (GPT2_BATCH, GPT2_SEQ), device="cuda")
    y = torch.randint(0, 50257, (GPT2_BATCH, GPT2_SEQ), device="cuda")

    def fwd_bwd(x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x).view(-1, 50257).float(), y.view(-1))
        loss.backward()
        return loss

    fb = torch.compile(fwd_bwd) if compiled else fwd_bwd

    def step():
        fb(x, y)
        opt.step()
        opt.zero_grad(set_to_none=True)
    t0 = time.perf_counter()
    step()
    torch.cuda.synchronize()
    return step, time.perf_counter() - t0


def _gpt2_ember(device: str, compiled: bool):
    """ember.models.gpt2 (124M, dropout 0.1) on ``device``: AdamW, bf16 autocast, cross-entropy over
    the vocabulary; ``compiled`` wraps the step in ember.compile (a CUDA graph on cuda devices).
    Returns (step, first_step_seconds: for ember.compile the warm-up and both captures)."""
    from ember.models.gpt2 import GPT2Config, GPT2LMHeadModel
    ember.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).to(device).train()
    opt = ember.optim.AdamW(model.parameters(), lr=3e-4)
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.integers(0, 50257, (GPT2_BATCH, GPT2_SEQ)), device=device)
    y = ember.tensor(rng.integers(0, 50257, (GPT2_BATCH, GPT2_SEQ)), device=device)

    def train_step(x, y):
        opt.zero_grad()
        with ember.autocast("cuda", dtype=ember.bfloat16):
            logits = model(x).logits
        loss = ember.nn.functional.cross_entropy(logits.view(-1, 50257).float(), y.view(-1))
        loss.backward()
        opt.step()
        return loss

    fn = ember.compile(train_step) if compiled else train_step
    t0 = time.perf_counter()
    for _ in range(3 if compiled else 1):  # ember.compile: warm-up, then two captures
        fn(x, y)
    import ember.cuda as ecuda
    ecuda.synchronize()
    first = time.perf_counter() - t0
    return (lambda: fn(x, y)), first


def bench_gpt2(repeats: int) -> None:
    """The GPT-2 124M training step (batch 8 x 1024 tokens, bf16 autocast, AdamW, dropout 0.1) in ms a
    step: the ``cuda`` stack, cuda:fused under ember.compile and eager, the unfused stack under
    ember.compile (and eager, when EMBER_DEFAULT_FUSION=1 makes ``cuda`` fused), PyTorch eager and
    torch.compile;
    then each column's first step (cold start: compiles and, for ember.compile, the captures)."""
    if not _cuda_here("GPT-2 section"):
        return
    import gc

    import ember.cuda as ecuda
    figs, cold = {}, {}
    from ember import _device
    makers = {"ember": lambda: _gpt2_ember("cuda", False), "compiled": lambda: _gpt2_ember("cuda:fused", True),
              "fused": lambda: _gpt2_ember("cuda:fused", False), "graph": lambda: _gpt2_ember("cuda:unfused", True),
              "torch": lambda: _gpt2_torch(False), "compile": lambda: _gpt2_torch(True)}
    if _device.FUSED_DEFAULTS:  # "cuda" is the fused default: the unfused stack gets its own column
        makers["unfused"] = lambda: _gpt2_ember("cuda:unfused", False)
    only = os.environ.get("BENCH_GPT2_COLUMNS")
    if only:
        makers = {k: v for k, v in makers.items() if k in only.split(",")}
    for name, make in makers.items():
        sync = torch.cuda.synchronize if name in ("torch", "compile") else ecuda.synchronize
        try:
            step, cold[name] = make()
            figs[name] = 1e3 * median_time(step, repeats=repeats, warmup=2, sync=sync)
        except Exception as e:  # noqa: BLE001 - report, keep the other columns
            print(f"#   GPT-2 {name} failed: {type(e).__name__}: {str(e)[:300]}")
            figs[name] = cold[name] = None
        step = None
        gc.collect()
        ecuda.empty_cache()
        torch.cuda.empty_cache()
        print(f"#   GPT-2 {name}: {figs[name]} ms a step, first step {cold[name]} s", flush=True)
    row("GPT-2 124M step, 8x1024, bf16 (cuda)", "ms", **figs)
    row("GPT-2 first step (cold start)", "s", **cold)


def bench_gpt2_interleaved(rounds: int) -> None:
    """The eager GPT-2 124M step (as bench_gpt2) on the default ``cuda`` stack, cuda:unfused and PyTorch,
    taking turns: each round times 3 steps of every column in turn (synchronised), and each column's figure
    is its median step over the rounds, so a host whose speed moves during the run moves every column."""
    import statistics
    if not _cuda_here("gpt2-interleaved"):
        return
    import ember.cuda as ecuda
    steps = {"ember": (_gpt2_ember("cuda", False)[0], ecuda.synchronize),
             "unfused": (_gpt2_ember("cuda:unfused", False)[0], ecuda.synchronize),
             "torch": (_gpt2_torch(False)[0], torch.cuda.synchronize)}
    times = {k: [] for k in steps}
    for step, sync in steps.values():
        for _ in range(2):
            step()
        sync()
    for _ in range(rounds):
        for k, (step, sync) in steps.items():
            for _ in range(3):
                t0 = time.perf_counter()
                step()
                sync()
                times[k].append(time.perf_counter() - t0)
    row("GPT-2 124M eager step (interleaved)", "ms", **{k: 1e3 * statistics.median(v) for k, v in times.items()})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats (a smoke run)")
    ap.add_argument("--markdown", action="store_true", help="also print the table as markdown")
    ap.add_argument("--only", default="chain,mlp,cnn,cold,gpu,gpt2",
                    help="comma-separated sections to run (also: mlp-interleaved, gpt2-interleaved)")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    repeats = 3 if args.quick else 7
    print(f"# bench/fusion.py: ember {getattr(ember, '__version__', '?')}, torch {torch.__version__}, "
          f"{os.cpu_count()} CPUs, threads torch={torch.get_num_threads()}")
    print("# columns: fused = cpu:fused (Autodiff(Fusion(...)), every op recorded), compiled = ember.compile of "
          "the cpu:fused step (MLP), default = cpu (Fusion with its cost model), "
          "numpy = cpu:numpy (unfused), torch = eager, compile = torch.compile; GPU rows: fused = cuda:fused, "
          "ember = cuda (the default: Fusion with its cost model), unfused = cuda:unfused, compiled/graph = "
          "ember.compile of the cuda:fused/cuda:unfused step")
    t0 = time.perf_counter()
    if "chain" in only:
        bench_chain(2**20 if args.quick else 16 * 2**20, repeats)
    if "mlp" in only:
        bench_mlp(128, repeats)
    if "mlp-interleaved" in only:
        bench_mlp_interleaved(128, 2 * repeats)
    if "cnn" in only:
        bench_cnn(64, repeats)
    if "cold" in only:
        bench_cold_start()
    if "gpu" in only:
        bench_gpu(repeats)
    if "gpt2" in only:
        bench_gpt2(repeats)
    if "gpt2-interleaved" in only:
        bench_gpt2_interleaved(2 * repeats)
    if args.markdown:
        order = ["fused", "compiled", "graph", "default", "numpy", "ember", "unfused", "torch", "compile"]
        keys = sorted({k for _, _, f in ROWS for k in f}, key=lambda k: order.index(k) if k in order else len(order))
        print("\n| what | unit | " + " | ".join(keys) + " |")
        print("|---|---|" + "---:|" * len(keys))
        for what, unit, f in ROWS:
            cells = " | ".join("n/a" if f.get(k) is None else f"{f[k]:.3f}" for k in keys)
            print(f"| {what} | {unit} | {cells} |")
    print(f"# total {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
