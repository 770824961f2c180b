"""A character-level transformer language model, trained on the Python standard library's source.

    python -m ember.examples.char_lm [--steps-per-epoch 200] [--epochs 4]

The corpus is on every machine that runs Python: the ``.py`` files of the standard library
(``os.path.dirname(os.__file__)``), read in sorted order, about two million characters by default.
The last tenth is held out for validation. The model is a small GPT-style decoder: token and
position embeddings, pre-norm transformer blocks with causal self-attention, a linear head over the
characters. Each epoch samples ``--steps-per-epoch`` random batches of windows; validation reports
the loss and perplexity per character. At the end the model writes Python-looking text.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import ember
from ember import nn
from ember.data import DataLoader, Dataset, RandomSampler
from ember.train import Learner

# printable ASCII, newline and tab; anything else in the corpus becomes "?"
VOCAB = "\n\t" + "".join(chr(c) for c in range(32, 127))
UNKNOWN = VOCAB.index("?")


def read_corpus(max_chars: int) -> str:
    """Up to ``max_chars`` characters of the standard library's .py files, in sorted file order."""
    root = os.path.dirname(os.__file__)
    parts, total = [], 0
    for name in sorted(os.listdir(root)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
            text = f.read()
        parts.append(text)
        total += len(text)
        if total >= max_chars:
            break
    if not parts:
        raise FileNotFoundError(f"no .py files in {root}: the standard library's source is not installed")
    return "".join(parts)[:max_chars]


def encode(text: str) -> np.ndarray:
    """Characters -> int64 ids into VOCAB (UNKNOWN for anything outside it)."""
    table = np.full(128, UNKNOWN, np.int64)  # ASCII code -> id
    for i, ch in enumerate(VOCAB):
        table[ord(ch)] = i
    codes = np.frombuffer(text.encode("utf-32-le"), np.uint32)
    return np.where(codes < 128, table[np.minimum(codes, 127)], UNKNOWN)


def decode(ids) -> str:
    return "".join(VOCAB[i] for i in ids)


class Windows(Dataset):
    """Item i: (ids[i : i + context], ids[i + 1 : i + context + 1]): inputs and next characters."""

    def __init__(self, ids: np.ndarray, context: int, stride: int = 1):
        if len(ids) <= context:
            raise ValueError(f"Windows: {len(ids)} characters are too few for a context of {context}")
        self.ids, self.context, self.stride = ids, context, stride

    def __len__(self) -> int:
        return (len(self.ids) - self.context - 1) // self.stride + 1

    def __getitem__(self, i: int):
        if not -len(self) <= i < len(self):
            raise IndexError(f"Windows: index {i} out of range for {len(self)} windows")
        s = (i % len(self)) * self.stride
        chunk = self.ids[s:s + self.context + 1]
        return chunk[:-1], chunk[1:]


class CharTransformer(nn.Module):
    """Embeddings, ``layers`` pre-norm causal transformer blocks, a final norm and the head."""

    def __init__(self, vocab: int, context: int, dim: int = 128, heads: int = 4, layers: int = 3,
                 dropout: float = 0.1):
        super().__init__()
        self.context = context
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        block = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(context), persistent=False)

    def forward(self, ids: ember.Tensor) -> ember.Tensor:
        t = ids.shape[1]
        h = self.tok(ids) + self.pos(ember.arange(t))
        h = self.blocks(h, mask=self.causal[:t, :t], is_causal=True)
        return self.head(self.norm(h))

    @ember.no_grad()
    def generate(self, prompt: str, length: int, temperature: float = 0.8, generator=None) -> str:
        """``prompt`` followed by ``length`` sampled characters."""
        self.eval()
        ids = encode(prompt).tolist() or [VOCAB.index("\n")]
        for _ in range(length):
            x = ember.tensor([ids[-self.context:]])
            logits = self(x)[0, -1] / temperature
            ids.append(int(ember.multinomial(logits.softmax(-1), 1, generator=generator).item()))
        return decode(ids)


def sequence_loss(logits: ember.Tensor, target: ember.Tensor) -> ember.Tensor:
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chars", type=int, default=2_000_000, help="corpus size in characters")
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--steps-per-epoch", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sample", type=int, default=400, help="characters to generate at the end")
    p.add_argument("--dashboard", choices=("auto", "tui", "plain", "none"), default="auto")
    args = p.parse_args(argv)

    ids = encode(read_corpus(args.chars))
    split = int(len(ids) * 0.9)
    train = Windows(ids[:split], args.context)
    val = Windows(ids[split:], args.context, stride=args.context)  # non-overlapping: each character once
    ember.manual_seed(args.seed)
    g = ember.Generator().manual_seed(args.seed)
    sampler = RandomSampler(train, replacement=True, num_samples=args.steps_per_epoch * args.batch_size,
                            generator=g)
    val_sampler = RandomSampler(val, num_samples=min(len(val), 20 * args.batch_size), generator=ember.Generator()
                                .manual_seed(args.seed + 1))
    model = CharTransformer(len(VOCAB), args.context)
    opt = ember.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.epochs * args.steps_per_epoch)
    print(f"corpus: {len(ids):,} characters of the standard library ({len(VOCAB)} symbols); "
          f"model: {sum(q.numel() for q in model.parameters()):,} parameters")
    learner = Learner(model, opt, sequence_loss, DataLoader(train, batch_size=args.batch_size, sampler=sampler),
                      DataLoader(val, batch_size=args.batch_size, sampler=val_sampler), epochs=args.epochs,
                      scheduler=sched, scheduler_step="step", metrics=("perplexity",), clip_grad_norm=1.0,
                      seed=args.seed, dashboard=None if args.dashboard == "none" else args.dashboard)
    model, history = learner.fit()
    print(f"validation perplexity per character: {history['val_perplexity'][-1]:.2f} "
          f"(a uniform guess: {len(VOCAB)})")
    print("--- sampled text " + "-" * 50)
    print(model.generate("def ", args.sample, generator=ember.Generator().manual_seed(args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
