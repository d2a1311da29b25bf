"""Deterministic sample files for the input-pipeline scenario: one sample of a model's first input per file.

The same (layout, count, format, seed) always writes the same bytes (engines.inputs.make_array, seeded per
sample), so two lab machines measuring "the same data" really read the same files. Each file is fsynced: a
dirty page cannot be dropped from the page cache, and a cold read of data still being written would be warm.

A request is checked before anything is allocated or created (`check_request`): a non-numeric dtype (object,
text, void …) has no sample data, one sample must fit the memory available to build it, and all the files must
fit the free space under the target directory. A 100000x100000x100000 shape is a 3.6 PiB refusal naming the
size and the fix, not numpy's allocation error after the directory was made. A write that fails part-way (the
disk filled anyway) removes the file it was writing, so no truncated sample is left for a run to read.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engines.datafiles import InputLayout
from engines.inputs import make_array

FORMATS = ("npy", "f32", "bin")
# Numpy dtype kinds make_array can fill: float, signed and unsigned int, bool (bfloat16 is held as float32).
NUMERIC_KINDS = "fiub"
ALLOWED_DTYPES = ("float16, float32, float64, bfloat16, int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
                  "bool")
# Working memory per element while one sample is built: make_array draws float64 (bools) or float32 values, and
# each astype copies once more (host dtype, then the file's byte order).
_DRAW_BYTES = 8
MAX_DIMS = 64  # numpy's limit on an array's dims (NPY_MAXDIMS)


class SampleRequestError(ValueError):
    """A make-data request refused before anything was written; the message gives the size or dtype and the fix."""


@dataclass(frozen=True)
class SamplePlan:
    """What a checked request will write: one file's bytes, all files' bytes, the memory to build one sample."""

    dtype: np.dtype  # what each file holds (little-endian)
    file_bytes: int
    total_bytes: int
    build_bytes: int


# ---- Public API
def sample_name(index: int, fmt: str) -> str:
    return f"sample-{index:06d}.{fmt}"


def sample_dtype(layout: InputLayout) -> np.dtype:
    """The numpy dtype `layout`'s samples are built in (bfloat16 → float32); SampleRequestError unless numeric."""
    name = str(layout.dtype)
    shown = repr(name) if len(name) <= 40 else repr(name[:40]) + "…"
    try:
        dtype = layout.host_dtype
    except (TypeError, ValueError, UnicodeError, SyntaxError):
        raise SampleRequestError(f"--dtype {shown}: not a numpy dtype; use one of {ALLOWED_DTYPES}") from None
    if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise SampleRequestError(f"--dtype {shown}: {dtype} is not numeric, so there is no sample data to make "
                                 f"(object, text, bytes, void, complex and date dtypes are refused); use one of "
                                 f"{ALLOWED_DTYPES}")
    return dtype


def check_request(directory: str | os.PathLike[str], layout: InputLayout, count: int, fmt: str = "npy",
                  available_memory: int | None = None, free_disk: int | None = None) -> SamplePlan:
    """Refuse what cannot be written — before any allocation or directory: see the module docstring.

    `available_memory` and `free_disk` default to what the machine says now (0 or None: not known, not checked).
    """
    if fmt not in FORMATS:
        raise SampleRequestError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if count < 1:
        raise SampleRequestError(f"count must be ≥ 1, got {count}")
    if "\0" in os.fspath(directory):
        raise SampleRequestError(f"directory {os.fspath(directory)!r} has a NUL character, which no path can hold; "
                                 "give a directory path without it")
    host = sample_dtype(layout)
    if len(layout.sample_shape) > MAX_DIMS:
        raise SampleRequestError(f"a sample of {len(layout.sample_shape)} dims: numpy arrays have at most {MAX_DIMS}; "
                                 "give a --shape with fewer dims")
    dtype = np.dtype("<f4") if fmt == "f32" else host.newbyteorder("<")
    elements = math.prod(layout.sample_shape)
    data_bytes = elements * dtype.itemsize
    file_bytes = data_bytes + (_npy_header_bytes(layout.sample_shape, dtype) if fmt == "npy" else 0)
    plan = SamplePlan(dtype, file_bytes, file_bytes * count, elements * (_DRAW_BYTES + host.itemsize + dtype.itemsize))
    shape = "x".join(map(str, layout.sample_shape)) or "scalar"
    if available_memory is None:
        from engines.host_memory import available_bytes

        available_memory = available_bytes()
    if available_memory and plan.build_bytes > available_memory:
        raise SampleRequestError(f"one {shape} {dtype.name} sample is {human_size(data_bytes)} and building it "
                                 f"takes about {human_size(plan.build_bytes)} of memory, but this machine has "
                                 f"{human_size(available_memory)} available; choose a smaller --shape (one sample, "
                                 "batch excluded)")
    if free_disk is None:
        free_disk = _free_space(Path(directory).expanduser())
    if free_disk is not None:
        free_disk += _reused_bytes(Path(directory).expanduser(), count, fmt)
        if plan.total_bytes > free_disk:
            raise SampleRequestError(f"{count:,} {fmt} files of {human_size(file_bytes)} are "
                                     f"{human_size(plan.total_bytes)}, but {directory} has "
                                     f"{human_size(free_disk)} free; lower --count, choose a smaller --shape, or "
                                     "give a --dir on a disk with room")
    return plan


def human_size(count: int) -> str:
    """Bytes in binary units up to PiB (a refused shape can be petabytes)."""
    for unit, size in (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:,.1f} {unit}"
    return f"{count:,} bytes"


def write_samples(directory: str | os.PathLike[str], layout: InputLayout, count: int, fmt: str = "npy",
                  seed: int = 0) -> dict[str, Any]:
    """Write `count` samples into `directory` (created when missing); what was written, as plain data.

    SampleRequestError (a ValueError) before anything is created when the request cannot be written."""
    plan = check_request(directory, layout, count, fmt)
    dtype = plan.dtype
    path = Path(directory).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    total = 0
    for index in range(count):
        sample = make_array(f"{layout.name}-{index}", layout.sample_shape, layout.host_dtype, seed).astype(dtype)
        target = path / sample_name(index, fmt)
        try:
            with open(target, "wb") as out:
                if fmt == "npy":
                    np.save(out, sample, allow_pickle=False)
                else:
                    out.write(sample.tobytes())
                out.flush()
                os.fsync(out.fileno())
        except BaseException:
            with contextlib.suppress(OSError):  # a truncated sample would fail a run later, far from the cause
                target.unlink()
            raise
        total += target.stat().st_size
    return {"dir": str(path), "files": count, "bytes": total, "format": fmt, "seed": seed,
            "input": {"name": layout.name, "sample_shape": list(layout.sample_shape), "dtype": dtype.name}}


# ---- Private API
def _npy_header_bytes(shape: tuple[int, ...], dtype: np.dtype) -> int:
    """The .npy header numpy.save writes for this shape and dtype (built from a zero-stride view, no allocation)."""
    view = np.broadcast_to(np.zeros((), dtype), shape)
    header = np.lib.format.header_data_from_array_1_0(view)
    buffer = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(buffer, header)
    except ValueError:  # a header over 64 KiB: numpy.save writes version 2.0
        buffer = io.BytesIO()
        np.lib.format.write_array_header_2_0(buffer, header)
    return len(buffer.getvalue())


def _free_space(directory: Path) -> int | None:
    """Free bytes on the disk that will hold `directory` (its nearest existing parent); None when unknown (a path
    the OS refuses, such as a name too long, is for the write to report; a pseudo filesystem has no size)."""
    try:
        probe = directory.absolute()
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        usage = shutil.disk_usage(probe)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    return usage.free if usage.total else None


def _reused_bytes(directory: Path, count: int, fmt: str) -> int:
    """Bytes of sample files already in `directory` that this request overwrites (a rerun needs no new room)."""
    reused = 0
    with contextlib.suppress(OSError, ValueError):
        with os.scandir(directory) as entries:
            for entry in entries:
                name = entry.name
                if (name.startswith("sample-") and name.endswith(f".{fmt}") and name[7:-len(fmt) - 1].isascii()
                        and name[7:-len(fmt) - 1].isdigit()
                        and int(name[7:-len(fmt) - 1]) < count and entry.is_file(follow_symlinks=False)):
                    reused += entry.stat(follow_symlinks=False).st_size
    return reused
