"""What every synthetic model shares: its one input, its loss and its seeded weights (the package docstring says why the suite exists)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from engines.catalog import _common

OPTIMIZER = "sgd"
SEED = 0


def input_specs(params: dict[str, Any], spec_generation: Any = None) -> list[dict[str, Any]]:
    """The one input every synthetic model takes (the same as catalog.input_specs gives for its entries)."""
    return [{"name": "x", "dtype": "float32", "shape": ["batch", params["rows"], params["features"]],
             "dynamic": ["batch", None, None]}]


def example_inputs(batch: int, params: dict[str, Any], spec_generation: Any = None) -> tuple[torch.Tensor, ...]:
    return (torch.randn(batch, params["rows"], params["features"], generator=_common.generator()),)


def training_loss(params: dict[str, Any], inputs: tuple[torch.Tensor, ...]) -> Callable[[Any], torch.Tensor]:
    """Mean square of the output: deterministic, and every synthetic output is a float tensor."""
    return lambda output: output.float().pow(2).mean()


def seeded() -> None:
    torch.manual_seed(SEED)


def tensor_bytes(batch: int, params: dict[str, Any]) -> int:
    """Bytes of one [batch, rows, features] float32 tensor: what the suite sizes against the cache."""
    return 4 * batch * int(params["rows"]) * int(params["features"])
