"""ResNet-style CNNs with the real stage layouts (torchvision's v1.5: stride on the 3×3 convolution).

`resnet18` and `resnet50` are thin modules over this one (`layout`): the same stem, stages and head, with
basic blocks [2, 2, 2, 2] or bottleneck blocks [3, 4, 6, 3]. Width, image size, channels and classes are
parameters, so tests can build a tiny network with the real depth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from engines import catalog
from engines.catalog import _common

OPTIMIZER = "sgd"


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, channels_in: int, width: int, stride: int):
        super().__init__()
        out = width * self.expansion
        self.conv1 = nn.Conv2d(channels_in, width, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _downsample(channels_in, out, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, channels_in: int, width: int, stride: int):
        super().__init__()
        out = width * self.expansion
        self.conv1 = nn.Conv2d(channels_in, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _downsample(channels_in, out, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + identity)


class ResNet(nn.Module):
    def __init__(self, block: type[BasicBlock] | type[Bottleneck], layers: list[int], params: dict[str, Any]):
        super().__init__()
        width = params["width"]
        self.conv1 = nn.Conv2d(params["channels"], width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages = []
        channels = width
        for index, count in enumerate(layers):
            stage_width = width * 2 ** index
            blocks = []
            for position in range(count):
                stride = 2 if index > 0 and position == 0 else 1
                blocks.append(block(channels, stage_width, stride))
                channels = stage_width * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, params["classes"])
        for module in self.modules():
            if isinstance(module, nn.Conv2d):  # torchvision's initialisation; activations stay well inside fp16
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(pixels))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def layout(name: str, block: type[BasicBlock] | type[Bottleneck], layers: list[int]) -> tuple[
        Callable[[dict[str, Any]], nn.Module], Callable[..., list[dict[str, Any]]]]:
    """`build` and `input_specs` of the catalog model `name`: this network with `layers` `block`s per stage."""

    def build(params: dict[str, Any]) -> nn.Module:
        torch.manual_seed(0)
        return ResNet(block, layers, params).eval()

    def input_specs(params: dict[str, Any], spec_generation: Any = None) -> list[dict[str, Any]]:
        return catalog.input_specs(name, params, spec_generation)

    return build, input_specs


def example_inputs(batch: int, params: dict[str, Any], spec_generation: Any = None) -> tuple[torch.Tensor, ...]:
    size = params["image_size"]
    return (torch.randn(batch, params["channels"], size, size, generator=_common.generator()),)


def training_loss(params: dict[str, Any], inputs: tuple[torch.Tensor, ...]) -> Callable[[Any], torch.Tensor]:
    return _common.classification_loss(inputs[0].shape[0], params["classes"])


def _downsample(channels_in: int, channels_out: int, stride: int) -> nn.Module:
    if stride == 1 and channels_in == channels_out:
        return nn.Identity()
    return nn.Sequential(nn.Conv2d(channels_in, channels_out, 1, stride, bias=False), nn.BatchNorm2d(channels_out))
