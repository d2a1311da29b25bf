"""ResNet-50 layout (bottleneck blocks [3, 4, 6, 3]) with deterministic random weights: a convolution-bound vision workload."""

from __future__ import annotations

from engines.catalog.resnet import OPTIMIZER, Bottleneck, example_inputs, layout, training_loss

__all__ = ["OPTIMIZER", "build", "example_inputs", "input_specs", "training_loss"]
build, input_specs = layout("resnet50", Bottleneck, [3, 4, 6, 3])
