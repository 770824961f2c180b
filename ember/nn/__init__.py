"""ember.nn: neural-network building blocks (PyTorch's torch.nn): Module, Parameter, containers,
``init``, ``utils`` and ``functional``."""

from __future__ import annotations

from . import functional, init, utils  # noqa: F401
from .container import Identity, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .module import Module  # noqa: F401
from .modules.activation import *  # noqa: E402,F401,F403 - ReLU, GELU, ..., Softmax, PReLU
from .modules.conv import *  # noqa: E402,F401,F403 - Conv1d..3d, ConvTranspose1d..3d
from .modules.dropout import *  # noqa: E402,F401,F403 - Dropout, Dropout1d..3d, AlphaDropout
from .modules.linear import *  # noqa: E402,F401,F403 - Linear, Bilinear
from .modules.loss import *  # noqa: E402,F401,F403 - loss classes (CrossEntropyLoss, ...)
from .modules.misc import *  # noqa: E402,F401,F403 - Flatten, Upsample, PixelShuffle, SwiGLU, ...
from .modules.normalization import *  # noqa: E402,F401,F403 - BatchNorm, LayerNorm, GroupNorm, RMSNorm, ...
from .modules.pooling import *  # noqa: E402,F401,F403 - MaxPool, AvgPool, Adaptive*, LPPool, MaxUnpool, Fold
from .modules.positional import *  # noqa: E402,F401,F403 - RotaryEmbedding, SinusoidalPositionalEncoding
from .modules.rnn import *  # noqa: E402,F401,F403 - RNN, LSTM, GRU and their cells
from .modules.sparse import *  # noqa: E402,F401,F403 - Embedding, EmbeddingBag
from .modules.transformer import *  # noqa: E402,F401,F403 - MultiheadAttention, Transformer*
from .parameter import Parameter  # noqa: F401
