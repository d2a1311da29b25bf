"""MLP with deterministic random weights: a host-overhead-sensitive, GEMM-bound workload."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def build(params: dict[str, Any]) -> nn.Module:
    torch.manual_seed(0)
    width, layers = params["hidden"], params["layers"]
    blocks: list[nn.Module] = [nn.Linear(params["in_features"], width), nn.GELU()]
    for _ in range(layers - 1):
        blocks += [nn.Linear(width, width), nn.GELU()]
    blocks.append(nn.Linear(width, params["out_features"]))
    return nn.Sequential(*blocks).eval()


def example_input(batch: int, params: dict[str, Any]) -> torch.Tensor:
    generator = torch.Generator().manual_seed(1)
    return torch.randn(batch, params["in_features"], generator=generator)
