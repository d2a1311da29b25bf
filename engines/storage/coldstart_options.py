"""The cold start's options: defaults and validation with a fix for every refusal.

Its own module, torch-free and importing nothing that is not, because the console validates flags before it
spawns the worker (the GUI process never imports torch, an import-linter contract): console/cli/storage_coldstart
imports this, never engines.storage.coldstart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engines.storage.coldstart_read import MODES
from engines.storage.errors import StorageError, choice_list, whole_number

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
    opts["modes"] = choice_list(opts.get("modes"), MODES, "read mode(s)")
    opts["rounds"] = whole_number(opts.get("rounds", 1), "--rounds", 1, MAX_ROUNDS,
                                  "give how many times each mode is measured (alternating the order), e.g. --rounds 3")
    opts["trust_code"] = bool(opts.get("trust_code"))
    device = str(opts.get("device") or "cpu")
    if device != "cpu" and not device.startswith("cuda"):
        raise StorageError(f"unknown device {device!r}", "give --device cpu or cuda (cuda:N)")
    opts["device"] = device
    return opts
