"""Small ResNet-style CNN with deterministic random weights: a convolution-bound vision workload."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class _Residual(nn.Module):
    def __init__(self, channels_in: int, channels_out: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels_in, channels_out, 3, stride, 1, bias=False), nn.BatchNorm2d(channels_out), nn.ReLU(),
            nn.Conv2d(channels_out, channels_out, 3, 1, 1, bias=False), nn.BatchNorm2d(channels_out),
        )
        self.skip = (nn.Identity() if stride == 1 and channels_in == channels_out else
                     nn.Sequential(nn.Conv2d(channels_in, channels_out, 1, stride, bias=False),
                                   nn.BatchNorm2d(channels_out)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.skip(x))


def build(params: dict[str, Any]) -> nn.Module:
    torch.manual_seed(0)
    width = params["width"]
    stages = [width, width * 2, width * 4, width * 8]
    layers: list[nn.Module] = [nn.Conv2d(params["channels"], width, 3, 1, 1, bias=False), nn.BatchNorm2d(width),
                               nn.ReLU()]
    channels = width
    for index, out in enumerate(stages):
        layers.append(_Residual(channels, out, 1 if index == 0 else 2))
        channels = out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, params["classes"])]
    return nn.Sequential(*layers).eval()


def example_input(batch: int, params: dict[str, Any]) -> torch.Tensor:
    generator = torch.Generator().manual_seed(1)
    size = params["image_size"]
    return torch.randn(batch, params["channels"], size, size, generator=generator)
