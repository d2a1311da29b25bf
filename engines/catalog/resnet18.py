"""ResNet-18 layout (basic blocks [2, 2, 2, 2]) with deterministic random weights: a convolution-bound vision workload."""

from __future__ import annotations

from typing import Any

from torch import nn

from engines.catalog.resnet import BasicBlock, build_resnet, example_inputs, specs_for, training_loss

__all__ = ["OPTIMIZER", "build", "example_inputs", "input_specs", "training_loss"]
OPTIMIZER = "sgd"


def build(params: dict[str, Any]) -> nn.Module:
    return build_resnet(params, BasicBlock, [2, 2, 2, 2])


def input_specs(params: dict[str, Any], spec_generation: Any = None) -> list[dict[str, Any]]:
    return specs_for("resnet18", params, spec_generation)
