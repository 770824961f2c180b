"""MobileNetV2 with torchvision's module and parameter names (``features.N...``, ``classifier.1``),
so a torchvision ``state_dict`` loads key by key.

Each inverted-residual block expands the channels with a 1x1 conv (skipped when the expansion is
1), filters them with a depthwise 3x3 conv, and projects back with a linear 1x1 conv; blocks that
keep shape and resolution add their input.

>>> model = mobilenet_v2(num_classes=10).eval()
>>> model(ember.randn(1, 3, 32, 32)).shape
ember.Size([1, 10])
"""

from __future__ import annotations

import os

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn import BatchNorm2d, Conv2d, Dropout, Linear, Module, ReLU6, Sequential, init
from ..nn import functional as F
from ._hub import from_file

__all__ = ["MobileNetV2", "InvertedResidual", "Conv2dNormActivation", "mobilenet_v2"]


def _make_divisible(value: float, divisor: int) -> int:
    """``value`` rounded to a multiple of ``divisor``, never more than 10% below it (MobileNet's rule)."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    if rounded < 0.9 * value:
        rounded += divisor
    return rounded


class Conv2dNormActivation(Sequential):
    """``Sequential(Conv2d (no bias, 'same' padding), BatchNorm2d, ReLU6)``: children 0, 1, 2."""

    def __init__(self, cin: int, cout: int, kernel_size: int = 3, stride: int = 1, groups: int = 1) -> None:
        super().__init__(Conv2d(cin, cout, kernel_size, stride, (kernel_size - 1) // 2, groups=groups, bias=False),
                         BatchNorm2d(cout), ReLU6(inplace=True))
        self.out_channels = cout


class InvertedResidual(Module):
    """``conv``: [1x1 expand CNA,] depthwise 3x3 CNA, 1x1 projection conv, BatchNorm2d; a residual
    connection when ``stride == 1`` and the channel count is unchanged."""

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int) -> None:
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"InvertedResidual: stride must be 1 or 2, got {stride}")
        hidden = int(round(inp * expand_ratio))
        self.stride = stride
        self.use_res_connect = stride == 1 and inp == oup
        layers: list[Module] = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden, kernel_size=1))
        layers += [Conv2dNormActivation(hidden, hidden, stride=stride, groups=hidden),
                   Conv2d(hidden, oup, 1, 1, 0, bias=False), BatchNorm2d(oup)]
        self.conv = Sequential(*layers)
        self.out_channels = oup

    def forward(self, x: Tensor) -> Tensor:
        out = self.conv(x)
        return x + out if self.use_res_connect else out


# (expansion t, output channels c, repeats n, first stride s) of each stage
_SETTING = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
            [6, 320, 1, 1]]


class MobileNetV2(Module):
    """MobileNetV2: ``features`` (a 3x3/2 stem, 17 inverted-residual blocks, a 1x1 conv to 1280
    channels), global average pool, ``classifier`` = (Dropout, Linear).

    ``width_mult`` scales every width (rounded to multiples of ``round_nearest``). Initialised
    as torchvision does (Kaiming-normal convs, BN 1/0, Linear normal(0, 0.01)).
    """

    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0, round_nearest: int = 8,
                 dropout: float = 0.2) -> None:
        super().__init__()
        channels = _make_divisible(32 * width_mult, round_nearest)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult), round_nearest)
        features: list[Module] = [Conv2dNormActivation(3, channels, stride=2)]
        for t, c, n, s in _SETTING:
            out = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(InvertedResidual(channels, out, s if i == 0 else 1, t))
                channels = out
        features.append(Conv2dNormActivation(channels, self.last_channel, kernel_size=1))
        self.features = Sequential(*features)
        self.classifier = Sequential(Dropout(dropout), Linear(self.last_channel, num_classes))
        with no_grad():
            for m in self.modules():
                if isinstance(m, Conv2d):
                    init.kaiming_normal_(m.weight, mode="fan_out")
                elif isinstance(m, BatchNorm2d):
                    init.ones_(m.weight)
                    init.zeros_(m.bias)
                elif isinstance(m, Linear):
                    init.normal_(m.weight, 0.0, 0.01)
                    init.zeros_(m.bias)

    def forward(self, x: Tensor) -> Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1)).flatten(1)
        return self.classifier(x)


def mobilenet_v2(*, weights: str | os.PathLike | None = None, num_classes: int = 1000, **kwargs) -> MobileNetV2:
    """MobileNetV2 (3.5M parameters at ``width_mult=1``). ``weights``: a torchvision checkpoint file
    to load, read without torch; the model is then in eval mode."""
    model = MobileNetV2(num_classes=num_classes, **kwargs)
    if weights is not None:
        from_file(model, weights)
        model.eval()
    return model
