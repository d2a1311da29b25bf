"""Elementwise passes over one tensor: a scale, then alternating bias adds and gains (one read + one write each).

The first pass allocates the output; the others work in place in inference, so the graph streams the same
tensor `passes` times and never pays for a fresh allocation (page faults would otherwise dominate). In training
(grad enabled) every pass is out of place, as autograd needs.
"""

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


class Elementwise(nn.Module):
    def __init__(self, features: int, passes: int):
        super().__init__()
        self.passes = passes
        self.scale = nn.Parameter(1.0 + 0.01 * torch.randn(features))
        self.bias = nn.Parameter(0.01 * torch.randn(features))
        self.gain = nn.Parameter(1.0 + 0.01 * torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * self.scale
        in_place = not torch.is_grad_enabled()
        for i in range(1, self.passes):
            if i % 2:
                y = y.add_(self.bias) if in_place else y + self.bias
            else:
                y = y.mul_(self.gain) if in_place else y * self.gain
        return y


def build(params: dict[str, Any]) -> nn.Module:
    seeded()
    return Elementwise(params["features"], params["passes"]).eval()


def bytes_moved(batch: int, params: dict[str, Any]) -> float:
    """One read and one write of the tensor per pass (the [features] parameters are negligible)."""
    return 2.0 * tensor_bytes(batch, params) * params["passes"]
