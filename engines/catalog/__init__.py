"""Model catalog: models built in code with deterministic random weights (nothing is downloaded).

This module is torch-free so the console can list models without importing torch; each entry names
the module that builds it, imported only inside a worker. Adding a model = one module + one line here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    module: str  # engines.catalog.<module> defines build(params) -> nn.Module and example_input(batch, params)
    description: str
    task: str
    params: dict[str, Any] = field(default_factory=dict)
    input_desc: str = ""


ENTRIES: dict[str, CatalogEntry] = {
    e.name: e
    for e in (
        CatalogEntry("mlp", "engines.catalog.mlp", "Multi-layer perceptron (3 hidden layers, GELU)", "tabular",
                     {"in_features": 512, "hidden": 1024, "layers": 3, "out_features": 10},
                     "float32 [batch, 512]"),
        CatalogEntry("cnn", "engines.catalog.cnn", "Small ResNet-style CNN (4 stages, residual blocks)", "vision",
                     {"image_size": 64, "channels": 3, "width": 32, "classes": 100},
                     "float32 [batch, 3, 64, 64]"),
    )
}


def names() -> list[str]:
    return list(ENTRIES)


def get(name: str) -> CatalogEntry:
    return ENTRIES[name]


def describe() -> list[dict[str, Any]]:
    """Plain data for `labconsole models` and the window's model picker."""
    return [
        {"name": e.name, "description": e.description, "task": e.task, "params": dict(e.params),
         "input": e.input_desc}
        for e in ENTRIES.values()
    ]
