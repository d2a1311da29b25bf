"""Deterministic sample files for the input-pipeline scenario: one sample of a model's first input per file.

The same (layout, count, format, seed) always writes the same bytes (engines.inputs.make_array, seeded per
sample), so two lab machines measuring "the same data" really read the same files. Each file is fsynced: a
dirty page cannot be dropped from the page cache, and a cold read of data still being written would be warm.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from engines.datafiles import InputLayout
from engines.inputs import make_array

FORMATS = ("npy", "f32", "bin")


# ---- Public API
def sample_name(index: int, fmt: str) -> str:
    return f"sample-{index:06d}.{fmt}"


def write_samples(directory: str | os.PathLike[str], layout: InputLayout, count: int, fmt: str = "npy",
                  seed: int = 0) -> dict[str, Any]:
    """Write `count` samples into `directory` (created when missing); what was written, as plain data."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if count < 1:
        raise ValueError(f"count must be ≥ 1, got {count}")
    path = Path(directory).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    dtype = np.dtype("<f4") if fmt == "f32" else layout.host_dtype.newbyteorder("<")
    total = 0
    for index in range(count):
        sample = make_array(f"{layout.name}-{index}", layout.sample_shape, layout.host_dtype, seed).astype(dtype)
        target = path / sample_name(index, fmt)
        with open(target, "wb") as out:
            if fmt == "npy":
                np.save(out, sample, allow_pickle=False)
            else:
                out.write(sample.tobytes())
            out.flush()
            os.fsync(out.fileno())
        total += target.stat().st_size
    return {"dir": str(path), "files": count, "bytes": total, "format": fmt, "seed": seed,
            "input": {"name": layout.name, "sample_shape": list(layout.sample_shape), "dtype": dtype.name}}
