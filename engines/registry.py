"""A registry of plug-in descriptions by name: what backends and scenarios share.

The description (a frozen dataclass with `name` and `module`) is torch-free; `module(name)` imports the
implementation, which only a worker should do for an engine.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Generic, TypeVar

Info = TypeVar("Info")


class Registry(Generic[Info]):
    def __init__(self) -> None:
        self._items: dict[str, Any] = {}

    def register(self, info: Info) -> Info:
        self._items[info.name] = info  # type: ignore[attr-defined]
        return info

    def unregister(self, name: str) -> None:
        self._items.pop(name, None)

    def names(self) -> list[str]:
        return list(self._items)

    def infos(self) -> list[Info]:
        return list(self._items.values())

    def info(self, name: str) -> Info:
        return self._items[name]

    def module(self, name: str) -> ModuleType:
        return importlib.import_module(self._items[name].module)
