"""Engine backends, by name: each registers a `BackendInfo` that owns its options and capabilities.

Why two parts: the info (options dataclass, precisions per target kind, training, file types) is torch-free,
so the console builds its flags, form and checks from it without importing an engine; the implementation
module (`load(spec) -> LoadedModel`, see engines.backends.base) imports the engine and is only ever imported
in a worker. Adding a backend = a `<name>_config.py` with its INFO, its implementation module (`load` and
`probe`), one line below; docs/architecture.md, "Adding a backend".
"""

from __future__ import annotations

from engines.backends.info import BackendInfo
from engines.registry import Registry

_REGISTRY: Registry[BackendInfo] = Registry()

# ---- Public API (`module(name)` imports the engine: call it in a worker only)
register, unregister, names, infos, info, module = (_REGISTRY.register, _REGISTRY.unregister, _REGISTRY.names,
                                                     _REGISTRY.infos, _REGISTRY.info, _REGISTRY.module)


def precisions() -> tuple[str, ...]:
    """Every precision some backend offers somewhere, in a stable order (fp32 first)."""
    order = ("fp32", "fp16", "bf16", "int8")
    offered = {p for i in infos() for kind in i.precisions.values() for p in kind}
    return tuple([p for p in order if p in offered] + sorted(offered - set(order)))


def file_engines() -> dict[str, str]:
    """Model file extension → the backend that reads it."""
    return {ext: i.name for i in infos() for ext in i.file_types}


# ---- Registrations: one line a backend
from engines.backends import onnxruntime_config, torch_config  # noqa: E402 — registered once the helpers above exist

register(torch_config.INFO)
register(onnxruntime_config.INFO)
