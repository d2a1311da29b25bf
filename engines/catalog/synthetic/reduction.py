"""A sum over the whole tensor per sample: one read of every byte, almost nothing written."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engines.catalog.synthetic.common import (
    OPTIMIZER,
    example_inputs,
    input_specs,
    seeded,
    tensor_bytes,
    training_loss,
)

__all__ = ["OPTIMIZER", "build", "example_inputs", "input_specs", "training_loss", "bytes_moved"]


class Reduction(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(1.0 + 0.01 * torch.randn(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=(1, 2)) * self.scale


def build(params: dict[str, Any]) -> nn.Module:
    seeded()
    return Reduction().eval()


def bytes_moved(batch: int, params: dict[str, Any]) -> float:
    return float(tensor_bytes(batch, params))
