"""Data sets shaped like a feed workload: N files of `samples_per_file` samples of the workload's sample size.

Why: the feed benchmark's answer depends on the bytes per file and per sample (read sizes, files opened per step),
so the data must be shaped like the workload it emulates. Each file is an .npy of uint8 with shape
(samples_per_file, sample_bytes) — or the same bytes raw (.bin) — filled with seeded pseudo-random bytes, so
neither compression nor deduplication shrinks it, and fsynced, so a dirty page never makes a "cold" read warm.

`scale` shrinks each sample (0 < scale ≤ 1) for small disks: the file count and samples per file stay, and the
feed result notes that its samples are smaller than the workload's.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from engines.storage.errors import StorageError
from engines.storage.workloads import Workload

CHUNK = 8 * 1024 * 1024
MAX_FILES = 10_000_000


# ---- Public API
def plan(workload: Workload, files: int, scale: float = 1.0) -> dict[str, Any]:
    """What `write` would write: sample bytes (scaled), file bytes (with the .npy header), total bytes."""
    if not 0 < scale <= 1:
        raise StorageError(f"--scale {scale:g} is outside (0, 1]", "give a fraction such as 0.01 to shrink samples")
    if not 1 <= files <= MAX_FILES:
        raise StorageError(f"--files {files}", f"give 1 to {MAX_FILES:,} files")
    sample = max(1, int(round(workload.sample_bytes * scale)))
    data = sample * workload.samples_per_file
    header = len(_npy_header((workload.samples_per_file, sample)))
    return {"sample_bytes": sample, "samples_per_file": workload.samples_per_file, "file_bytes": data + header,
            "raw_file_bytes": data, "total_bytes": (data + header) * files, "files": files, "scale": scale}


def write(directory: str | os.PathLike[str], workload: Workload, files: int, scale: float = 1.0, fmt: str = "npy",
          seed: int = 0, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Write the data set; refuse before writing when it cannot fit on the disk."""
    if fmt not in ("npy", "bin"):
        raise StorageError(f"format {fmt!r}", "choose npy or bin")
    shape = plan(workload, files, scale)
    path = Path(directory).expanduser()
    per_file = shape["file_bytes"] if fmt == "npy" else shape["raw_file_bytes"]
    existing = next(p for p in (path.absolute(), *path.absolute().parents) if p.exists())
    free = shutil.disk_usage(existing).free
    if per_file * files > free:
        raise StorageError(f"{files:,} {workload.name} files of {per_file / 1e6:,.1f} MB need "
                           f"{per_file * files / 1e9:,.2f} GB but {path} has {free / 1e9:,.2f} GB free",
                           "lower --files, shrink samples with --scale, or choose a --dir on a bigger disk")
    path.mkdir(parents=True, exist_ok=True)
    header = _npy_header((workload.samples_per_file, shape["sample_bytes"])) if fmt == "npy" else b""
    for index in range(files):
        target = path / f"{workload.name}-{index:06d}.{fmt}"
        _write_one(target, header, shape["raw_file_bytes"], np.random.default_rng([seed, index]))
        if progress:
            progress(index + 1)
    return {**shape, "dir": str(path.resolve()), "format": fmt, "bytes": per_file * files,
            "workload": workload.name, "source": workload.source}


# ---- Private API
def _npy_header(shape: tuple[int, int]) -> bytes:
    import io

    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, {"descr": "|u1", "fortran_order": False, "shape": shape})
    return stream.getvalue()


def _write_one(target: Path, header: bytes, data_bytes: int, rng: np.random.Generator) -> None:
    partial = target.with_name(target.name + ".partial")
    try:
        with open(partial, "wb") as out:
            out.write(header)
            left = data_bytes
            while left:
                piece = min(CHUNK, left)
                out.write(rng.bytes(piece))
                left -= piece
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
