"""Measurement scenarios, by name. A scenario module defines its options class, an `INFO` (ScenarioInfo)
and `run(model, spec, emit, cancelled)`.

Scenario modules are light (standard library only), so the console reads their options, forms and figures
without importing an engine. Adding one = one module + one registration line below.
"""

from __future__ import annotations

import dataclasses

from engines.figures import Figures
from engines.registry import Registry
from engines.scenarios.base import ScenarioInfo

_REGISTRY: Registry[ScenarioInfo] = Registry()

# ---- Public API
register, unregister, names, infos, info, module = (_REGISTRY.register, _REGISTRY.unregister, _REGISTRY.names,
                                                     _REGISTRY.infos, _REGISTRY.info, _REGISTRY.module)


def declared(name: str | None) -> ScenarioInfo | None:
    """The registration of the scenario `name`; None for a name no scenario has (a run stored by one since
    removed, or a summary without a spec): its readers fall back to what any scenario reports."""
    return info(name) if name in names() else None


def figures_of(name: str | None) -> Figures:
    """What the scenario `name` declares it reports (engines.figures); nothing declared for an unknown name, so
    its every plain value is listed under its own key."""
    found = declared(name)
    return found.figures if found is not None else Figures()


def takers(option_name: str) -> list[str]:
    """The scenarios whose options include `option_name` (for an error that says where it applies)."""
    return [i.name for i in infos() if option_name in {f.name for f in dataclasses.fields(i.options)}]


# ---- Registrations: one line a scenario
from engines.scenarios import generate, input_pipeline, multi_stream, offline, server, single_stream  # noqa: E402

register(single_stream.INFO)
register(generate.INFO)
register(offline.INFO)
register(server.INFO)
register(multi_stream.INFO)
register(input_pipeline.INFO)
