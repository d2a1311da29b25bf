"""Checkpoint throughput: torch.save a catalog model's state_dict to a directory, then load it back.

Save is timed to the end of fsync (the bytes are on storage, not only in the page cache); the file's pages
are then dropped (POSIX_FADV_DONTNEED, where the OS allows) so the load reads storage, and it is loaded with
`weights_only=True` — a checkpoint is data, never unpickled as code. The file is removed afterwards. Runs in
the worker (torch imported here, never in the console).
"""

from __future__ import annotations

import importlib
import os
import tempfile
import time
from pathlib import Path
from typing import Any


# ---- Public API
def measure(model: str, model_params: dict[str, Any] | None, directory: str | os.PathLike[str]) -> dict[str, Any]:
    """Save and load the catalog model `model`'s weights in `directory` (else the temp dir); MB/s both ways."""
    import torch

    from engines import catalog
    from engines.datafiles import can_drop_cache

    params = catalog.params_for(model, model_params)
    state = importlib.import_module(catalog.get(model).module).build(params).state_dict()
    where, note = _writable(Path(directory))
    handle, name = tempfile.mkstemp(prefix=".labconsole-checkpoint-", suffix=".pt", dir=where)
    path = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            started = time.perf_counter()
            torch.save(state, out)
            out.flush()
            os.fsync(out.fileno())
            save_s = time.perf_counter() - started
        size = path.stat().st_size
        cold, why = can_drop_cache(where)
        if cold:
            with open(path, "rb") as dropped:
                os.posix_fadvise(dropped.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        started = time.perf_counter()
        loaded = torch.load(path, map_location="cpu", weights_only=True)
        load_s = time.perf_counter() - started
    finally:
        path.unlink(missing_ok=True)
    if set(loaded) != set(state):
        raise RuntimeError(f"checkpoint of {model} loaded back with different keys; the storage at {where} "
                           "returned other bytes than were written")
    return {
        "checkpoint_bytes": size,
        "checkpoint_save_s": save_s,
        "checkpoint_save_mb_s": size / 1e6 / save_s if save_s > 0 else None,
        "checkpoint_load_s": load_s,
        "checkpoint_load_mb_s": size / 1e6 / load_s if load_s > 0 else None,
        "checkpoint_dir": str(where),
        "checkpoint_cache_state": "cold" if cold else "warm",
        "checkpoint_method": "torch.save(state_dict) to a file, timed to fsync; torch.load(weights_only=True) "
                             f"after {'dropping the file from the page cache' if cold else 'no cache drop: ' + why}"
                             + (f"; {note}" if note else ""),
    }


# ---- Private API
def _writable(directory: Path) -> tuple[Path, str]:
    """`directory` when this user can write there, else the temp dir (and a note saying so)."""
    if directory.is_dir() and os.access(directory, os.W_OK | os.X_OK):
        return directory, ""
    fallback = Path(tempfile.gettempdir())
    return fallback, f"{directory} is not writable, so the checkpoint went to {fallback} (another storage, maybe)"
