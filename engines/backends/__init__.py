"""Engine backends, by name. Torch-free: the module holding a backend is imported only in a worker.

A backend module defines `load(spec) -> LoadedModel` (see engines.backends.base). Adding one = one
module + one line here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

MODULES: dict[str, str] = {
    "torch": "engines.backends.torch_backend",
    "onnxruntime": "engines.backends.onnxruntime_backend",
}


def names() -> list[str]:
    return list(MODULES)


def module(name: str) -> ModuleType:
    return importlib.import_module(MODULES[name])
