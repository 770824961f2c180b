"""Remote backend benchmarks over loopback: ember's remote stack against the same ops run locally.

    python bench/remote.py [--address HOST:PORT] [--device cpu] [--quick]

Starts ``ember serve`` on a free loopback port (unless --address names a running server) and measures,
in one run:

1. Sync round trip: one tiny op and a read of its one-element result (µs), remote vs local.
2. Pipelined throughput: a chain of tiny ops with one read at the end (ops per second).
3. MLP 784-512-512-10 training step at batch 128 (forward, cross-entropy, backward, SGD with momentum,
   ``loss.item()`` each step): steps per second, remote vs local (blocks alternated), and PyTorch's
   figure for reference. Target: remote at least 0.5x local. Also the CPU time per step of the
   client plus the server against local (Linux), which a loaded machine distorts less than wall time.

Local and remote share the machine here, so the server's compute competes with the client's Python.
"""

from __future__ import annotations

import argparse
import os
import statistics
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
    torch = None


SERVER_ENV = dict(kv.split("=", 1) for kv in os.environ.get("BENCH_SERVER_ENV", "").split() if "=" in kv)


def start_server(device: str):
    proc = subprocess.Popen([sys.executable, "-m", "ember.cli", "serve", "--port", "0", "--device", device],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, **SERVER_ENV})
    line = proc.stdout.readline()
    if " on " not in line:
        proc.kill()
        sys.exit(f"ember serve did not start: {line!r}")
    return proc, line.split(" on ", 1)[1].split()[0]


def _proc_cpu(proc) -> float | None:
    """CPU seconds the server process has used (Linux /proc), or None."""
    if proc is None:
        return None
    try:
        with open(f"/proc/{proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def round_trip(dev) -> float:
    x = ember.ones(1, device=dev)
    return median_time(lambda: (x + 1).item(), inner=50, repeats=7)


def pipelined(dev, n: int) -> float:
    x0 = ember.ones(16, device=dev)

    def chain():
        x = x0
        for _ in range(n):
            x = x + 1.0
        x.sum().item()
    return n / median_time(chain, inner=1, repeats=5)


def mlp_step(lib, dev, torch_dev=None):
    rng = np.random.default_rng(0)
    kw = {"device": dev} if dev is not None else {}
    nn = lib.nn
    if lib is ember:
        ember.manual_seed(0)
    else:
        torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    model = model.to(dev) if dev is not None else model
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.tensor(rng.standard_normal((128, 784), dtype=np.float32), **kw)
    y = lib.tensor(rng.integers(0, 10, 128), **kw)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()
    return step


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--address", help="a running server (host:port); default: start one on loopback")
    p.add_argument("--device", default="cpu", help="the server's --device when this script starts it")
    p.add_argument("--quick", action="store_true", help="fewer repeats")
    args = p.parse_args(argv)
    proc = None
    address = args.address
    if address is None:
        proc, address = start_server(args.device)
    try:
        remote = ember.device(f"remote://{address}")
        print(f"# ember remote over loopback ({address}, server device {args.device}); medians, same process")
        rt_r, rt_l = round_trip(remote), round_trip("cpu")
        print(f"sync round trip (tiny op + read)      remote {rt_r * 1e6:9.1f} µs   local {rt_l * 1e6:9.1f} µs"
              f"   remote/local speed {rt_l / rt_r:5.2f}x")
        n = 500 if args.quick else 2000
        tp_r, tp_l = pipelined(remote, n), pipelined("cpu", n)
        print(f"pipelined tiny ops ({n} then one read)  remote {tp_r:9.0f} op/s  local {tp_l:9.0f} op/s"
              f"  remote/local speed {tp_r / tp_l:5.2f}x")
        reps = 5 if args.quick else 9
        steps = {"remote": mlp_step(ember, remote), "local": mlp_step(ember, None)}
        if torch is not None:
            steps["torch"] = mlp_step(torch, None)
        wall = {k: [] for k in steps}
        cpu = {k: [] for k in steps}
        server_cpu = []
        for fn in steps.values():
            for _ in range(3):
                fn()
        for _ in range(reps):  # alternate, so a change in the machine's load hits all alike
            for k, fn in steps.items():
                s0, w0, c0 = _proc_cpu(proc), time.perf_counter(), time.process_time()
                for _ in range(3):
                    fn()
                wall[k].append((time.perf_counter() - w0) / 3)
                cpu[k].append((time.process_time() - c0) / 3)
                if k == "remote" and s0 is not None:
                    server_cpu.append((_proc_cpu(proc) - s0) / 3)
        t = {k: statistics.median(v) for k, v in wall.items()}
        line = (f"MLP 784-512-512-10 step, batch 128       remote {1 / t['remote']:9.1f} st/s  local "
                f"{1 / t['local']:9.1f} st/s  remote/local speed {t['local'] / t['remote']:5.2f}x (target >= 0.5x)")
        if torch is not None:
            line += f"   [torch local {1 / t['torch']:.1f} st/s]"
        print(line)
        c = {k: statistics.median(v) * 1e3 for k, v in cpu.items()}
        if server_cpu:
            sc = statistics.median(server_cpu) * 1e3
            print(f"CPU time per MLP step                   remote client {c['remote']:.1f} ms + server {sc:.1f} ms"
                  f" = {c['remote'] + sc:.1f} ms   local {c['local']:.1f} ms   (load-independent view)")
        r = remote.backend.inner
        print(f"# segments replayed as programs: {r._conn.segmenter.replayed}; server: {r.stats()}")
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
