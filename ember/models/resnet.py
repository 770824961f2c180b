"""ResNets with torchvision's module and parameter names (``conv1``, ``bn1``, ``layer1.0.conv1``,
``layer2.0.downsample.0``, ``fc``), so a torchvision ``state_dict`` (a ``.pth`` file) loads key by
key: ResNet-18/34 (basic blocks), ResNet-50/101/152 (bottlenecks, stride on the 3x3 conv as in
torchvision's "v1.5"), ResNeXt and wide ResNets through ``groups`` / ``width_per_group``.

>>> model = resnet18(num_classes=10).eval()
>>> model(ember.randn(1, 3, 32, 32)).shape
ember.Size([1, 10])
"""

from __future__ import annotations

import os

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn import AdaptiveAvgPool2d, BatchNorm2d, Conv2d, Linear, MaxPool2d, Module, ReLU, Sequential, init
from ._hub import from_file

__all__ = ["BasicBlock", "Bottleneck", "ResNet", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
           "resnext50_32x4d", "wide_resnet50_2"]


def _conv3x3(cin: int, cout: int, stride: int = 1, groups: int = 1) -> Conv2d:
    return Conv2d(cin, cout, 3, stride=stride, padding=1, groups=groups, bias=False)


def _conv1x1(cin: int, cout: int, stride: int = 1) -> Conv2d:
    return Conv2d(cin, cout, 1, stride=stride, bias=False)


class BasicBlock(Module):
    """Two 3x3 convolutions with batch norm and a shortcut (``downsample`` when the shape changes)."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Module | None = None,
                 groups: int = 1, base_width: int = 64) -> None:
        super().__init__()
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64 (use Bottleneck for ResNeXt "
                             "and wide ResNets)")
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = BatchNorm2d(planes)
        self.relu = ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        shortcut = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + shortcut)


class Bottleneck(Module):
    """1x1 reduce, 3x3 (strided, optionally grouped), 1x1 expand by 4, each with batch norm, plus
    the shortcut."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Module | None = None,
                 groups: int = 1, base_width: int = 64) -> None:
        super().__init__()
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = _conv1x1(inplanes, width)
        self.bn1 = BatchNorm2d(width)
        self.conv2 = _conv3x3(width, width, stride, groups)
        self.bn2 = BatchNorm2d(width)
        self.conv3 = _conv1x1(width, planes * self.expansion)
        self.bn3 = BatchNorm2d(planes * self.expansion)
        self.relu = ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        shortcut = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + shortcut)


class ResNet(Module):
    """A ResNet: 7x7/2 stem, 3x3/2 max pool, four stages of ``block`` (counts in ``layers``, widths
    64-128-256-512, stages 2-4 halving the resolution), global average pool, ``fc``.

    Initialised as torchvision does (Kaiming-normal convolutions, BN weight 1 bias 0; with
    ``zero_init_residual`` each block's last BN weight starts at 0). Any input of at least 32x32
    pixels works; ImageNet weights expect 224x224, normalised per channel.
    """

    def __init__(self, block: type[BasicBlock] | type[Bottleneck], layers: list[int], num_classes: int = 1000,
                 zero_init_residual: bool = False, groups: int = 1, width_per_group: int = 64) -> None:
        super().__init__()
        if len(layers) != 4:
            raise ValueError(f"ResNet: layers must give the block count of 4 stages, got {layers}")
        self.inplanes = 64
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = Conv2d(3, self.inplanes, 7, stride=2, padding=3, bias=False)
        self.bn1 = BatchNorm2d(self.inplanes)
        self.relu = ReLU(inplace=True)
        self.maxpool = MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = AdaptiveAvgPool2d((1, 1))
        self.fc = Linear(512 * block.expansion, num_classes)
        with no_grad():
            for m in self.modules():
                if isinstance(m, Conv2d):
                    init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(m, BatchNorm2d):
                    init.ones_(m.weight)
                    init.zeros_(m.bias)
            if zero_init_residual:
                for m in self.modules():
                    if isinstance(m, Bottleneck):
                        init.zeros_(m.bn3.weight)
                    elif isinstance(m, BasicBlock):
                        init.zeros_(m.bn2.weight)

    def _make_layer(self, block, planes: int, blocks: int, stride: int = 1) -> Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = Sequential(_conv1x1(self.inplanes, planes * block.expansion, stride),
                                    BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, groups=self.groups, base_width=self.base_width)
                   for _ in range(1, blocks)]
        return Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def _build(block, layers, weights, num_classes, **kwargs) -> ResNet:
    model = ResNet(block, layers, num_classes=num_classes, **kwargs)
    if weights is not None:
        from_file(model, weights)
        model.eval()
    return model


def resnet18(*, weights: str | os.PathLike | None = None, num_classes: int = 1000, **kwargs) -> ResNet:
    """ResNet-18 (basic blocks 2-2-2-2, 11.7M parameters). ``weights``: a torchvision checkpoint file
    (``.pth``/``.pt``/``.safetensors``) to load, read without torch; the model is then in eval mode."""
    return _build(BasicBlock, [2, 2, 2, 2], weights, num_classes, **kwargs)


def resnet34(*, weights: str | os.PathLike | None = None, num_classes: int = 1000, **kwargs) -> ResNet:
    """ResNet-34 (basic blocks 3-4-6-3, 21.8M parameters); ``weights`` as for ``resnet18``."""
    return _build(BasicBlock, [3, 4, 6, 3], weights, num_classes, **kwargs)


def resnet50(*, weights: str | os.PathLike | None = None, num_classes: int = 1000, **kwargs) -> ResNet:
    """ResNet-50 (bottlenecks 3-4-6-3, 25.6M parameters); ``weights`` as for ``resnet18``."""
    return _build(Bottleneck, [3, 4, 6, 3], weights, num_classes, **kwargs)


def resnet101(*, weights: str | os.PathLike | None = None, num_classes: int = 1000, **kwargs) -> ResNet:
    """ResNet-101 (bottlenecks 3-4-23-3); ``weights`` as for ``resnet18``."""
    return _build(Bottleneck, [3, 4, 23, 3], weights, num_classes, **kwargs)


def resnet152(*, weights: str | os.PathLike | None = None, num_classes: int = 1000, **kwargs) -> ResNet:
    """ResNet-152 (bottlenecks 3-8-36-3); ``weights`` as for ``resnet18``."""
    return _build(Bottleneck, [3, 8, 36, 3], weights, num_classes, **kwargs)


def resnext50_32x4d(*, weights: str | os.PathLike | None = None, num_classes: int = 1000, **kwargs) -> ResNet:
    """ResNeXt-50 32x4d: ResNet-50 with 32 groups of width 4 in each 3x3 conv."""
    return _build(Bottleneck, [3, 4, 6, 3], weights, num_classes, groups=32, width_per_group=4, **kwargs)


def wide_resnet50_2(*, weights: str | os.PathLike | None = None, num_classes: int = 1000, **kwargs) -> ResNet:
    """Wide ResNet-50-2: ResNet-50 with bottlenecks twice as wide."""
    return _build(Bottleneck, [3, 4, 6, 3], weights, num_classes, width_per_group=128, **kwargs)
