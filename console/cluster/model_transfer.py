"""A model file sent to a lab node by content hash, only when the user asks (`--send-model`).

A run does not carry its model file by default: a node runs the file at the same path on its own disk, or refuses
the spec. With `--send-model` the console puts the file's bytes in Ray's object store under its sha256; the node
keeps them in its data directory at `received-models/<sha256>/<name>`, so a file it already holds is not sent
again, and checks length and hash before the file is used. The bytes are data: the node's worker opens the copy
with the same checks as any model file (format by content, pickles and native code refused, TorchScript only when
trusted) — nothing is executed on receipt. Size-limited: the whole file passes through memory on both sides.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from console.cluster import ClusterError
from engines.model_files.common import sha256

SEND_LIMIT_BYTES = 2 << 30  # whole-file transfer through the object store: bigger files belong on the node's disk
_FOLDER = "received-models"


# ---- Public API
def offer(ray: Any, path: str | os.PathLike, limit_bytes: int = SEND_LIMIT_BYTES) -> dict[str, Any]:
    """The console's side: {"name", "size", "sha256", "ref"} for the task; ClusterError naming the fix when the
    file cannot be sent (missing, a directory, over the limit)."""
    source = Path(path)
    if not source.is_file():
        raise ClusterError(f"--send-model: {source} is not a file here, so it cannot be sent")
    size = source.stat().st_size
    if size > limit_bytes:
        raise ClusterError(f"--send-model: {source.name} is {size / 2**30:.2f} GiB, over the {limit_bytes / 2**30:g} "
                           "GiB a run may send; copy it to the node at the same path instead")
    data = source.read_bytes()
    if len(data) != size:
        raise ClusterError(f"--send-model: {source} changed while it was read; try again")
    return {"name": source.name, "size": size, "sha256": hashlib.sha256(data).hexdigest(), "ref": ray.put(data)}


def receive(ray: Any, offered: dict[str, Any], data_dir: str | os.PathLike,
            limit_bytes: int = SEND_LIMIT_BYTES) -> Path:
    """The node's side: the path of the received copy (fetched only when not already held), after checking its
    size and sha256; ValueError with the reason otherwise."""
    digest, size = str(offered.get("sha256") or ""), int(offered.get("size") or -1)
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError("the offered model file has no valid sha256")
    if not 0 <= size <= limit_bytes:
        raise ValueError(f"the offered model file's size ({size} bytes) is outside 0–{limit_bytes} bytes")
    name = Path(str(offered.get("name") or "model")).name or "model"  # a name, never a path
    folder = Path(data_dir) / _FOLDER / digest
    target = folder / name
    if target.is_file() and target.stat().st_size == size and sha256(target) == digest:
        return target
    data = ray.get(offered["ref"])
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        raise ValueError("the model file arrived damaged (its size or sha256 differs from what was sent)")
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{name}.partial-{os.getpid()}"
    partial.write_bytes(data)
    partial.chmod(0o444)  # data, not a program
    os.replace(partial, target)
    return target

