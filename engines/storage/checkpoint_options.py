"""The checkpoint card's options: defaults, the sizes it knows, and validation with a fix for every refusal.

Its own module, torch-free and importing nothing that is not, because the console validates flags before it
spawns the worker (the GUI process never imports torch, an import-linter contract): console/cli/storage_checkpoint
imports this, never engines.storage.checkpoint.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from engines.storage.errors import StorageError, choice_list, whole_number
from engines.storage.young import DEFAULT_MTBF_HOURS

FORMAT_NAMES = ("torch", "safetensors", "dcp")
MAX_RANKS = 64
DEFAULT_RANKS = 2
MAX_ROUNDS = 9
DEFAULT_SHARD_GB = 1.0  # what this benchmark writes per rank unless told otherwise: fits small disks and CI
BYTES_PER_PARAM = 14.0
BYTES_PER_PARAM_NOTE = ("14 bytes per parameter: bf16 weights (2) + fp32 master weights (4) + Adam's two fp32 "
                        "moments (8); gradients are not checkpointed")
# name: (parameters, the ranks the job is assumed to shard its checkpoint over, what the count is from)
SIZES = {
    "1b": (1.24e9, 8, "Llama 3.2 1B (1.24 B parameters)"),
    "8b": (8.03e9, 8, "Llama 3.1 8B (8.03 B parameters)"),
    "70b": (70.6e9, 64, "Llama 3.1 70B (70.6 B parameters)"),
}


def validate(options: dict[str, Any]) -> dict[str, Any]:
    """Options with defaults filled in; StorageError naming the bad one and the fix."""
    opts = dict(options)
    if opts.get("model") and opts.get("size"):
        raise StorageError("both a catalog model and a synthetic size were given",
                           "give either --model NAME or --size 1b|8b|70b")
    if not opts.get("model"):
        opts["size"] = str(opts.get("size") or "1b").lower()
        if opts["size"] not in SIZES:
            raise StorageError(f"unknown size {opts['size']!r}", f"choose one of {', '.join(SIZES)}")
        shard = opts.get("shard_gb")
        opts["shard_gb"] = positive(DEFAULT_SHARD_GB if shard is None else shard, "--shard-gb")
    elif opts.get("shard_gb"):
        raise StorageError("--shard-gb sizes a synthetic shard; a catalog model's state is the size it is",
                           "drop --shard-gb, or use --size 1b|8b|70b instead of --model")
    opts["formats"] = choice_list(opts.get("formats"), FORMAT_NAMES, "format(s)")
    opts["ranks"] = whole_number(opts.get("ranks", DEFAULT_RANKS), "--ranks", 1, MAX_RANKS,
                                 "give the number of local processes DCP saves with, e.g. --ranks 2")
    opts["rounds"] = whole_number(opts.get("rounds", 1), "--rounds", 1, MAX_ROUNDS,
                                  "give how many times each format is measured (alternating the order), e.g. --rounds 3")
    mtbf = opts.get("mtbf_hours")
    opts["mtbf_hours"] = positive(DEFAULT_MTBF_HOURS if mtbf is None else mtbf, "--mtbf-hours")
    if opts.get("bytes_per_param") is not None:
        opts["bytes_per_param"] = positive(opts["bytes_per_param"], "--bytes-per-param")
    if opts.get("job_ranks") is not None:
        job_ranks = opts["job_ranks"]
        if not isinstance(job_ranks, int) or isinstance(job_ranks, bool) or job_ranks < 1:
            raise StorageError(f"--job-ranks {job_ranks!r} is not a whole number of at least 1",
                               "give the ranks the training job shards its checkpoint over, e.g. --job-ranks 8")
    directory = Path(opts.get("directory") or tempfile.gettempdir()).expanduser()
    if not directory.is_dir():
        raise StorageError(f"checkpoint directory {directory} does not exist or is not a folder",
                           "give an existing folder on the storage to measure with --dir")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise StorageError(f"checkpoint directory {directory} is not writable by this user",
                           f"choose a folder you can write, or give write permission (chmod u+wx {directory})")
    opts["directory"] = str(directory)
    return opts


def positive(value: Any, flag: str) -> float:
    """`value` as a finite number above 0, else a StorageError naming `flag`."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not number > 0 or number == float("inf"):
        raise StorageError(f"{flag} {value!r} is not a positive number", f"give {flag} a number above 0")
    return number
