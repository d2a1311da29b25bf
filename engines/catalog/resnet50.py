"""ResNet-50 layout (bottleneck blocks [3, 4, 6, 3]) with deterministic random weights: a convolution-bound vision workload."""

from __future__ import annotations

from typing import Any

from torch import nn

from engines.catalog.resnet import Bottleneck, build_resnet, example_inputs, specs_for, training_loss

__all__ = ["OPTIMIZER", "build", "example_inputs", "input_specs", "training_loss"]
OPTIMIZER = "sgd"


def build(params: dict[str, Any]) -> nn.Module:
    return build_resnet(params, Bottleneck, [3, 4, 6, 3])


def input_specs(params: dict[str, Any], spec_generation: Any = None) -> list[dict[str, Any]]:
    return specs_for("resnet50", params, spec_generation)
