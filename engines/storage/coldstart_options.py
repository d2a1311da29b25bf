"""The cold start's options: defaults and validation with a fix for every refusal.

Its own module, torch-free and importing nothing that is not, because the console validates flags before it
spawns the worker (the GUI process never imports torch, an import-linter contract): console/cli/storage_coldstart
imports this, never engines.storage.coldstart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engines.storage.coldstart_read import MODES
from engines.storage.errors import StorageError

MAX_ROUNDS = 9


def validate(options: dict[str, Any]) -> dict[str, Any]:
    """Options with defaults; StorageError naming the bad one and the fix."""
    opts = dict(options)
    if not opts.get("file"):
        raise StorageError("no model file given", "give --file PATH (an .onnx, .pt2 or .safetensors file)")
    path = Path(opts["file"]).expanduser()
    if not path.is_file():
        raise StorageError(f"model file {path} does not exist or is not a file", "give the path of a model file")
    opts["file"] = str(path)
    modes = opts.get("modes") or list(MODES)
    if isinstance(modes, str):
        modes = [m.strip() for m in modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise StorageError(f"unknown read mode(s) {', '.join(unknown) or '(none given)'}",
                           f"choose from {','.join(MODES)} (comma-separated)")
    opts["modes"] = list(dict.fromkeys(modes))
    rounds = opts.get("rounds", 1)
    if not isinstance(rounds, int) or isinstance(rounds, bool) or not 1 <= rounds <= MAX_ROUNDS:
        raise StorageError(f"--rounds {rounds!r} is not a whole number from 1 to {MAX_ROUNDS}",
                           "give how many times each mode is measured (alternating the order), e.g. --rounds 3")
    opts["rounds"] = rounds
    opts["trust_code"] = bool(opts.get("trust_code"))
    device = str(opts.get("device") or "cpu")
    if device != "cpu" and not device.startswith("cuda"):
        raise StorageError(f"unknown device {device!r}", "give --device cpu or cuda (cuda:N)")
    opts["device"] = device
    return opts
