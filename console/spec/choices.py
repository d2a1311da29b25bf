"""What the run form may offer: engines, precisions and modes usable for a model on a target, and why not.

Qt-free so the rules are tested without a window; the window only turns these tuples into combo items.
Each choice is (value, label, enabled, tooltip); a disabled one carries the reason in its tooltip.
"""

from __future__ import annotations

import os
from typing import Any

from engines import backends, scenarios
from engines.spec import MODES, is_model_path

Choice = tuple[str, str, bool, str]


def model_choices(catalog_entries: list[dict[str, Any]], files: list[str]) -> list[Choice]:
    items = [(m["name"], f"{m['name']} — {m['description']}", True, f"inputs: {_inputs_text(m)}")
             for m in catalog_entries]
    items += [(path, f"{os.path.basename(path)} (file)", os.path.isfile(path),
               path if os.path.isfile(path) else f"{path}: file not found") for path in files]
    return items


def target_choices(targets: list[dict[str, Any]]) -> list[Choice]:
    return [(t["id"], f"{t['id']} — {t['name']}", bool(t["available"]), t.get("reason") or t.get("note", ""))
            for t in targets]


def engine_choices(engines: list[str], model: str | None, target: dict[str, Any] | None) -> list[Choice]:
    wanted = _file_engine(model)
    items = []
    for engine in engines:
        label = engine_label(engine)
        if wanted and engine != wanted:
            items.append((engine, label, False, f"a {_extension(model)} file runs on {engine_label(wanted)}"))
            continue
        detail = _engine_detail(target, engine)
        if detail is None:
            items.append((engine, label, True, "targets not discovered yet"))
        else:
            items.append((engine, label, bool(detail.get("available")),
                          _version_tip(detail) if detail.get("available") else detail.get("reason", "")))
    return items


def precision_choices(engine: str | None, target: dict[str, Any] | None) -> list[Choice]:
    detail = _engine_detail(target, engine)
    offered = None if detail is None else detail.get("precisions") or []
    notes = {} if detail is None else detail.get("notes") or {}
    items = []
    for precision in backends.precisions():
        if offered is None:
            items.append((precision, precision, precision == "fp32", "targets not discovered yet"))
        elif precision in offered:
            items.append((precision, precision + (" (emulated)" if notes.get(precision) else ""), True,
                          notes.get(precision, "")))
        else:
            where = target["id"] if target else "this target"
            items.append((precision, precision, False,
                          f"{engine_label(engine or '')} offers no {precision} on {where}"))
    return items


def mode_choices(engine: str | None, model: str | None) -> list[Choice]:
    items = []
    trains = engine in backends.names() and backends.info(engine).trains
    trainers = " or ".join(i.label for i in backends.infos() if i.trains) or "an engine that trains"
    for mode in MODES:
        if mode == "training" and (not trains or is_model_path(model or "")):
            items.append((mode, mode, False, f"training runs need {trainers} and a catalog model"))
        else:
            items.append((mode, mode, True, "forward, backward and optimizer step" if mode == "training" else ""))
    return items


def scenario_choices(model: str | None) -> list[Choice]:
    """Every registered scenario; generate needs a decoder model (a catalog model that declares generation)."""
    items = []
    for info in scenarios.infos():
        usable, tip = True, info.summary
        if info.name == "generate" and not _generates(model):
            usable, tip = False, "generate needs a decoder model from the catalog (e.g. gpt)"
        items.append((info.name, info.label, usable, tip))
    return items


def engine_label(engine: str) -> str:
    return backends.info(engine).label if engine in backends.names() else engine


# ---- Private API
def _generates(model: str | None) -> bool:
    from engines import catalog

    if not model or is_model_path(model) or model not in catalog.names():
        return False
    return catalog.get(model).decoder


def _extension(model: str | None) -> str:
    return os.path.splitext(model or "")[1].lower()


def _file_engine(model: str | None) -> str | None:
    return backends.file_engines().get(_extension(model)) if model and is_model_path(model) else None


def _engine_detail(target: dict[str, Any] | None, engine: str | None) -> dict[str, Any] | None:
    if not target or "engine_details" not in target or not target["engine_details"]:
        return None if not target or target.get("available", True) else {"available": False,
                                                                          "reason": target.get("reason", "")}
    return target["engine_details"].get(engine) or {
        "available": False, "reason": f"{engine_label(engine or '')} was not found on {target.get('id', 'this target')} "
                                      "when targets were discovered (Run ▸ Refresh targets rediscovers)"}


def _version_tip(detail: dict[str, Any]) -> str:
    parts = [f"version {detail['version']}"] if detail.get("version") else []
    if detail.get("providers"):
        parts.append("providers: " + ", ".join(detail["providers"]))
    return "; ".join(parts)


def _inputs_text(entry: dict[str, Any]) -> str:
    inputs = entry.get("inputs")
    if isinstance(inputs, list):
        return ", ".join(f"{i['name']} {i.get('dtype', '')} {i.get('shape', '')}" for i in inputs)
    return str(entry.get("input", ""))
