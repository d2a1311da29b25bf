"""Thousands of elementwise ops on a few numbers: each op's work is nothing next to its dispatch."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engines.catalog.synthetic.common import OPTIMIZER, example_inputs, input_specs, seeded, training_loss

__all__ = ["OPTIMIZER", "build", "example_inputs", "input_specs", "training_loss"]


class TinyOps(nn.Module):
    """`ops` ops in all: a gain, then tanh and a constant add in turn (values stay bounded)."""

    def __init__(self, features: int, ops: int):
        super().__init__()
        self.ops = ops
        self.gain = nn.Parameter(1.0 + 0.01 * torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * self.gain
        for i in range(1, self.ops):
            y = torch.tanh(y) if i % 2 else y + 0.01
        return y


def build(params: dict[str, Any]) -> nn.Module:
    seeded()
    return TinyOps(params["features"], params["ops"]).eval()
