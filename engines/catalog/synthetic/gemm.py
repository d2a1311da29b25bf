"""A chain of large GEMMs (no bias, no activation): every op is a matrix multiply above the ridge."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engines.catalog.synthetic.common import OPTIMIZER, example_inputs, input_specs, seeded, training_loss

__all__ = ["OPTIMIZER", "build", "example_inputs", "input_specs", "training_loss", "flops"]


class GemmChain(nn.Module):
    def __init__(self, features: int, layers: int):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(features, features, bias=False) for _ in range(layers))
        for layer in self.layers:  # keep activations of unit scale through the chain
            nn.init.normal_(layer.weight, std=features ** -0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def build(params: dict[str, Any]) -> nn.Module:
    seeded()
    return GemmChain(params["features"], params["layers"]).eval()


def flops(batch: int, params: dict[str, Any]) -> float:
    """2 × rows × features² per layer per sample: what an intervention on rows or layers scales."""
    return 2.0 * batch * params["rows"] * params["features"] ** 2 * params["layers"]
