"""`labconsole storage coldstart`: the cold start decomposition's flags, their validation, and its human summary
(the engine side is engines/storage/coldstart.py). Qt-free and torch-free; console/cli/storage_cmd.py adds
--json, --db, --tag and runs the kind in a spawned worker.
"""

from __future__ import annotations

import argparse
from typing import Any

_STAGES = (("read_s", "read"), ("deserialize_s", "deserialize"), ("to_device_s", "to device"),
           ("first_inference_s", "first inference"))


# ---- Public API
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--file", required=True, metavar="PATH", help="the model file: .onnx, .pt2 or .safetensors")
    parser.add_argument("--modes", default="mmap,buffered,direct", metavar="LIST",
                        help="how to read it: mmap, buffered, direct (O_DIRECT) — default all three")
    parser.add_argument("--rounds", type=int, default=1, metavar="N",
                        help="measure each mode N times, alternating the order (default 1); the median round is "
                             "reported with every round's seconds")
    parser.add_argument("--device", default="cpu", help="where the weights go: cpu (default) or cuda[:N]")
    parser.add_argument("--trust-code", action="store_true",
                        help="load a TorchScript file (code, not data) in a sandboxed worker; never needed for "
                             "ONNX, .pt2 or safetensors")


def options_from(args: argparse.Namespace) -> dict[str, Any]:
    """The cold start options from parsed flags, validated (engines.storage.coldstart.validate)."""
    from engines.storage.coldstart_options import validate

    return validate({"file": args.file, "modes": args.modes, "device": args.device, "trust_code": args.trust_code,
                     "rounds": args.rounds})


def text_lines(result: dict[str, Any]) -> list[str]:
    """One row per read mode: seconds per stage and the total, then what each stage did or why it is absent."""
    lines = [result.get("label", "cold start"), ""]
    lines.append(f"{'mode':<10} " + " ".join(f"{title:>16}" for _, title in _STAGES) + f" {'total':>10}  cache")
    notes: list[str] = []
    for stage in result.get("stages") or []:
        cells = " ".join(f"{_ms(stage.get(key)):>16}" for key, _ in _STAGES)
        used = stage["mode"] if stage["used"] == stage["mode"] else f"{stage['mode']}→{stage['used']}"
        lines.append(f"{used:<10} {cells} {_ms(stage['total_s']):>10}  {stage['cache_state']}")
        for key, note in (("to_device_s", "to_device_note"), ("first_inference_s", "first_inference_note")):
            text = f"{note.removesuffix('_note').replace('_', ' ')}: {stage.get(note, '')}"
            if stage.get(key) is None and text not in notes:
                notes.append(text)
        if stage["used"] != stage["mode"]:
            notes.append(f"{stage['mode']}: {stage['read_note']}")
    for stage in result.get("stages") or []:
        if stage.get("rounds"):
            totals = " / ".join(_ms(r["total_s"]) for r in stage["rounds"])
            notes.append(f"{stage['mode']}: median of {len(stage['rounds'])} rounds (order alternated); totals {totals}")
    lines += [""] + notes
    if result.get("warmup_s") is not None:
        lines.append(f"warm-up pass (libraries' one-time set-up, not counted): {_ms(result['warmup_s'])}")
    if result.get("status_reason"):
        lines.append(result["status_reason"])
    lines += ["", f"method: {result.get('method', '')}"]
    return lines


# ---- Private API
def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds * 1000:,.1f} ms" if seconds < 10 else f"{seconds:,.2f} s"
