"""ember.models: reference models that load published checkpoints, read without torch.

Vision (torchvision's parameter names): ``resnet18/34/50/101/152``, ``resnext50_32x4d``,
``wide_resnet50_2``, ``mobilenet_v2``, ``VisionTransformer`` / ``vit_b_16``. Transformers (Hugging
Face's names): ``BertModel`` (and ``SentenceEncoder`` for sentence embeddings, e.g.
all-MiniLM-L6-v2), ``GPT2LMHeadModel``, ``LlamaForCausalLM``, each with ``from_pretrained(dir)``;
``generate`` decodes with a key/value cache. ``Tokenizer`` wraps Hugging Face's ``tokenizers``
(optional extra ``ember[text]``).

>>> import ember.models as models
>>> models.resnet18(num_classes=3).fc
Linear(in_features=512, out_features=3, bias=True)
"""

from __future__ import annotations

from ._generate import CausalLMOutput, KVCache, generate  # noqa: F401
from .bert import BertConfig, BertModel, BertModelOutput, SentenceEncoder, mean_pooling  # noqa: F401
from .gpt2 import Conv1D, GPT2Config, GPT2LMHeadModel, GPT2Model  # noqa: F401
from .llama import LlamaConfig, LlamaForCausalLM, LlamaModel, LlamaRMSNorm  # noqa: F401
from .mobilenet import MobileNetV2, mobilenet_v2  # noqa: F401
from .resnet import (  # noqa: F401
    ResNet,
    resnet18,
    resnet34,
    resnet50,
    resnet101,
    resnet152,
    resnext50_32x4d,
    wide_resnet50_2,
)
from .tokenizer import Tokenizer  # noqa: F401
from .vit import VisionTransformer, vit_b_16, vit_b_32, vit_l_16  # noqa: F401
