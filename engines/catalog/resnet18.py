"""ResNet-18 layout (basic blocks [2, 2, 2, 2]) with deterministic random weights: a convolution-bound vision workload."""

from __future__ import annotations

from engines.catalog.resnet import OPTIMIZER, BasicBlock, example_inputs, layout, training_loss

__all__ = ["OPTIMIZER", "build", "example_inputs", "input_specs", "training_loss"]
build, input_specs = layout("resnet18", BasicBlock, [2, 2, 2, 2])
