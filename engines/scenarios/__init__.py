"""Measurement scenarios, by name. A scenario module defines `run(model, spec, emit, cancelled)`.

Adding one = one module + one line here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

MODULES: dict[str, str] = {
    "single-stream": "engines.scenarios.single_stream",
    "generate": "engines.scenarios.generate",
    "offline": "engines.scenarios.offline",
    "server": "engines.scenarios.server",
    "multi-stream": "engines.scenarios.multi_stream",
}


def names() -> list[str]:
    return list(MODULES)


def module(name: str) -> ModuleType:
    return importlib.import_module(MODULES[name])
