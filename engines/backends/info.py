"""What the console may know of a backend without importing it: its registration record (torch-free).

Its own module, not the package's __init__, because each backend's `*_config.py` builds one and __init__ imports
those configs to register them: a circle if the record lived in __init__.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BackendInfo:
    """What the console may know of a backend without importing it.

    precisions: per target kind ("cpu", "cuda", "mps" …) the precisions the backend can offer there; target
        discovery narrows them to what the device really has.
    distributions: package names whose installed version About and `--version` show (first found wins).
    probe: "module:function" that says which targets the backend can use here and why not
        (engines.backends.probe); empty: the `probe` function of `module`. Discovery calls it in a worker.
    preload: the engine's own libraries, imported before a worker's sandbox closes (an import may write caches).
    """

    name: str
    label: str
    module: str
    options: type
    precisions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    trains: bool = False
    file_types: tuple[str, ...] = ()
    distributions: tuple[str, ...] = ()
    install: str = ""
    probe: str = ""
    preload: tuple[str, ...] = ()

    def default_options(self) -> Any:
        return self.options()
