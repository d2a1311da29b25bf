"""MLP with deterministic random weights: a host-overhead-sensitive, GEMM-bound workload."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from engines import catalog
from engines.catalog import _common

OPTIMIZER = "sgd"


class Mlp(nn.Sequential):
    """A Sequential whose forward names its input as input_specs does (exporters match inputs by name)."""

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return super().forward(features)


def build(params: dict[str, Any]) -> nn.Module:
    torch.manual_seed(0)
    width, layers = params["hidden"], params["layers"]
    blocks: list[nn.Module] = [nn.Linear(params["in_features"], width), nn.GELU()]
    for _ in range(layers - 1):
        blocks += [nn.Linear(width, width), nn.GELU()]
    blocks.append(nn.Linear(width, params["out_features"]))
    return Mlp(*blocks).eval()


def example_inputs(batch: int, params: dict[str, Any], spec_generation: Any = None) -> tuple[torch.Tensor, ...]:
    return (torch.randn(batch, params["in_features"], generator=_common.generator()),)


def input_specs(params: dict[str, Any], spec_generation: Any = None) -> list[dict[str, Any]]:
    return catalog.input_specs("mlp", params, spec_generation)


def training_loss(params: dict[str, Any], inputs: tuple[torch.Tensor, ...]) -> Callable[[Any], torch.Tensor]:
    return _common.classification_loss(inputs[0].shape[0], params["out_features"])
