"""A transformer-style MLP block: GEMM up, GELU, GEMM down, residual add, LayerNorm (mostly compute)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engines.catalog.synthetic.common import OPTIMIZER, example_inputs, input_specs, seeded, training_loss

__all__ = ["OPTIMIZER", "build", "example_inputs", "input_specs", "training_loss"]


class MixedBlock(nn.Module):
    def __init__(self, features: int, hidden: int):
        super().__init__()
        self.up = nn.Linear(features, hidden)
        self.down = nn.Linear(hidden, features)
        self.norm = nn.LayerNorm(features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.down(torch.nn.functional.gelu(self.up(x))))


def build(params: dict[str, Any]) -> nn.Module:
    seeded()
    return MixedBlock(params["features"], params["hidden"]).eval()
