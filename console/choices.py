"""What the run form may offer: engines, precisions and modes usable for a model on a target, and why not.

Qt-free so the rules are tested without a window; the window only turns these tuples into combo items.
Each choice is (value, label, enabled, tooltip); a disabled one carries the reason in its tooltip.
"""

from __future__ import annotations

import os
from typing import Any

from engines.spec import MODEL_FILE_ENGINES, MODES, PRECISIONS, is_model_path

Choice = tuple[str, str, bool, str]
ENGINE_LABELS = {"torch": "PyTorch", "onnxruntime": "ONNX Runtime"}


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
        label = ENGINE_LABELS.get(engine, engine)
        if wanted and engine != wanted:
            items.append((engine, label, False, f"a {_extension(model)} file runs on {ENGINE_LABELS[wanted]}"))
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
    for precision in PRECISIONS:
        if offered is None:
            items.append((precision, precision, precision == "fp32", "targets not discovered yet"))
        elif precision in offered:
            items.append((precision, precision + (" (emulated)" if notes.get(precision) else ""), True,
                          notes.get(precision, "")))
        else:
            where = target["id"] if target else "this target"
            items.append((precision, precision, False,
                          f"{ENGINE_LABELS.get(engine, engine)} offers no {precision} on {where}"))
    return items


def mode_choices(engine: str | None, model: str | None) -> list[Choice]:
    items = []
    for mode in MODES:
        if mode == "training" and (engine != "torch" or is_model_path(model or "")):
            items.append((mode, mode, False, "training runs need PyTorch and a catalog model"))
        else:
            items.append((mode, mode, True, "forward, backward and optimizer step" if mode == "training" else ""))
    return items


# ---- Private API
def _extension(model: str | None) -> str:
    return os.path.splitext(model or "")[1].lower()


def _file_engine(model: str | None) -> str | None:
    return MODEL_FILE_ENGINES.get(_extension(model)) if model and is_model_path(model) else None


def _engine_detail(target: dict[str, Any] | None, engine: str | None) -> dict[str, Any] | None:
    if not target or "engine_details" not in target or not target["engine_details"]:
        return None if not target or target.get("available", True) else {"available": False,
                                                                          "reason": target.get("reason", "")}
    return target["engine_details"].get(engine) or {"available": False, "reason": f"{engine} not found"}


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
