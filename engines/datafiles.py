"""Sample files on disk → arrays that fit a model's input: listing, reading (cold or warm) and decoding.

Files are data, never code: a `.npy` file's header is read first, without numpy.load, so a refusal says what
the file is — not an .npy file at all (no NPY magic: text, a zip, a pickle), an .npy with a header that does not
parse, an object array (which only unpickling could rebuild), or fewer bytes than its header promises — and only
then is it read with `numpy.load(allow_pickle=False)`. `.f32` is raw little-endian float32 and `.bin` raw
little-endian in the input's own dtype. One file holds one sample of the model's first input (its shape without the batch dim);
`.npy` files may also carry a leading 1. Every refusal is a `DataError` naming the file and the fix, so an
input-pipeline run fails with a cause the user can act on.

Numpy only (no torch): the console's `make-data` command and the worker share these rules.
"""

from __future__ import annotations

import io
import math
import os
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SUFFIXES = (".npy", ".f32", ".bin")
MAKE_DATA_HINT = "make one with: labconsole make-data --dir {dir} --model MODEL --count N"
# Input dtypes numpy has no type for: raw `.bin` files hold them as float32 (the engine casts when feeding).
_HOST_DTYPES = {"bfloat16": "float32"}
_MEMORY_FILESYSTEMS = {"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"}


class DataError(ValueError):
    """A data directory or sample file cannot feed the model; the message names the path and the fix."""


@dataclass(frozen=True)
class InputLayout:
    """What one sample file must decode to: the model's first input, per sample (batch dim removed)."""

    name: str
    sample_shape: tuple[int, ...]
    dtype: str  # the engine's dtype name (may be bfloat16, which numpy lacks)

    @property
    def host_dtype(self) -> np.dtype:
        """The numpy dtype samples are batched in (and raw `.bin` files are read as)."""
        return np.dtype(_HOST_DTYPES.get(self.dtype, self.dtype))

    @property
    def elements(self) -> int:
        return math.prod(self.sample_shape)

    def describe(self) -> str:
        return f"input {self.name!r} ({'x'.join(map(str, self.sample_shape)) or 'scalar'} per sample, {self.dtype})"


# ---- Public API
def layout_from_details(details: Mapping[str, Any]) -> InputLayout:
    """The first input from a loaded model's details (`inputs`: [{name, shape, dtype}], batch first)."""
    inputs = details.get("inputs") or []
    if not inputs:
        raise DataError("the engine did not report the model's inputs, so files cannot be matched to them; "
                        "run a catalog model or a model file whose inputs the engine declares")
    first = inputs[0]
    shape = [int(d) for d in first["shape"]]
    if not shape:
        raise DataError(f"input {first['name']!r} is a scalar: it has no batch dim for sample files to fill; "
                        "the input-pipeline scenario feeds models whose first input is batched")
    return InputLayout(str(first["name"]), tuple(shape[1:]), str(first["dtype"]))


def layout_for_catalog(model: str, params: Mapping[str, Any] | None = None) -> InputLayout:
    """The first input of a catalog model, per sample (for make-data, without building the model)."""
    from engines import catalog

    if model not in catalog.names():
        raise DataError(f"unknown catalog model {model!r}; choose one of {', '.join(catalog.names())}")
    spec = catalog.input_specs(model, dict(params or {}))[0]
    return InputLayout(spec["name"], tuple(int(d) for d in spec["shape"][1:]), spec["dtype"])


def list_files(directory: str | os.PathLike[str], suffixes: Sequence[str] = SUFFIXES) -> list[Path]:
    """The sample files of `directory`, sorted by name (a deterministic order); refuse what cannot feed a run."""
    path = Path(directory).expanduser()
    hint = MAKE_DATA_HINT.format(dir=path)
    if not path.exists():
        raise DataError(f"data directory {path} does not exist; give an existing --data-dir, or {hint}")
    if not path.is_dir():
        raise DataError(f"--data-dir {path} is a file, not a directory; give the directory that holds the "
                        f"samples, or {hint}")
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except PermissionError as exc:
        raise DataError(f"data directory {path} cannot be read ({exc.strerror}); give this user read and "
                        f"execute permission on it (chmod u+rx {path}) or choose another --data-dir") from exc
    files = [Path(e.path) for e in entries if e.name.endswith(tuple(suffixes)) and e.is_file()]
    if not files:
        others = sum(1 for e in entries if e.is_file())
        found = f"{others} other file(s), none" if others else "no files"
        raise DataError(f"data directory {path} has {found} ending in {', '.join(suffixes)}; put samples there "
                        f"(.npy written by numpy.save, or raw little-endian .f32/.bin), or {hint}")
    for file in files:
        if not os.access(file, os.R_OK):
            raise DataError(f"sample file {file} is not readable by this user; fix its permissions "
                            f"(chmod u+r {file}) or remove it from {path}")
    return files


def can_drop_cache(directory: str | os.PathLike[str]) -> tuple[bool, str]:
    """Whether reads from `directory` can be made cold (its pages dropped first), and why not when they cannot."""
    if not hasattr(os, "posix_fadvise"):
        return False, "this OS has no posix_fadvise, so the page cache cannot be dropped per file"
    kind = filesystem_type(directory)
    if kind in _MEMORY_FILESYSTEMS:
        return False, f"{directory} is on {kind}: the files live in memory, there is no slower storage beneath"
    return True, "each file's cached pages dropped (POSIX_FADV_DONTNEED) before it is read"


def filesystem_type(directory: str | os.PathLike[str]) -> str | None:
    """The filesystem type holding `directory` (Linux /proc/self/mounts, longest mount point); None elsewhere."""
    target = os.path.realpath(directory)
    best, kind = "", None
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                parts = line.split()
                if len(parts) < 3:
                    continue
                point = parts[1].replace("\\040", " ")
                inside = target == point or target.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, parts[2]
    except OSError:
        return None
    return kind


def read_file(path: Path, cold: bool) -> bytearray:
    """The whole file in one buffer; with `cold`, its cached pages are dropped first so the read hits storage."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise DataError(f"sample file {path} cannot be opened ({exc.strerror}); check it still exists and is "
                        "readable") from exc
    try:
        if cold:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        size = os.fstat(fd).st_size
        buffer = bytearray(size)
        view = memoryview(buffer)
        done = 0
        with open(fd, "rb", buffering=0, closefd=False) as handle:
            while done < size:
                got = handle.readinto(view[done:])
                if not got:
                    break
                done += got
        view.release()
        del buffer[done:]  # a file that shrank while being read
        return buffer
    except OSError as exc:
        raise DataError(f"sample file {path} cannot be read ({exc.strerror}); check the storage and the "
                        "file") from exc
    finally:
        os.close(fd)


def decode(path: Path, data: bytes | bytearray, layout: InputLayout) -> np.ndarray:
    """One sample file's bytes → an array of `layout.sample_shape`, or a DataError naming the file and the fix."""
    suffix = path.suffix.lower()
    if not data:
        raise DataError(f"sample file {path} is empty; regenerate it (labconsole make-data) or remove it")
    if suffix == ".npy":
        _check_npy(path, data)
        try:
            array = np.load(io.BytesIO(data), allow_pickle=False)
        except ValueError as exc:
            raise DataError(f"sample file {path} does not decode as .npy: {exc}; write numeric arrays with "
                            "numpy.save, or regenerate it with labconsole make-data") from exc
        except (OSError, EOFError) as exc:
            raise DataError(f"sample file {path} does not decode as .npy ({exc}); it is not a numpy.save file — "
                            "write it with numpy.save, or name raw float32 files .f32") from exc
        if array.shape[:1] == (1,) and array.shape[1:] == layout.sample_shape:
            array = array[0]
    elif suffix in (".f32", ".bin"):
        dtype = np.dtype("<f4") if suffix == ".f32" else layout.host_dtype.newbyteorder("<")
        if len(data) % dtype.itemsize:
            raise DataError(f"sample file {path} has {len(data)} bytes, not a whole number of {dtype.itemsize}-byte "
                            f"{dtype.name} values; it is truncated or not raw {dtype.name} — regenerate it")
        array = np.frombuffer(data, dtype=dtype)
        if array.size != layout.elements:
            raise DataError(f"sample file {path} holds {array.size} {dtype.name} values but {layout.describe()} "
                            f"takes {layout.elements}; write samples of that shape (labconsole make-data --model "
                            "with this model) or run the model the files were made for")
        array = array.reshape(layout.sample_shape)
    else:
        raise DataError(f"sample file {path}: unknown type {suffix!r}; use {', '.join(SUFFIXES)}")
    _check_fits(path, array, layout)
    return array


def batch_files(files: Sequence[Path], index: int, batch: int) -> list[Path]:
    """The files of batch number `index`: consecutive samples, wrapping round the directory (epochs)."""
    count = len(files)
    return [files[(index * batch + i) % count] for i in range(batch)]


# ---- Private API
_NPY_MAGIC = b"\x93NUMPY"
_NPY_VERSIONS = {(1, 0), (2, 0), (3, 0)}  # what numpy.save writes; 3.0 only differs in its header's text encoding
_NPY_FIX = "write numeric arrays with numpy.save, or regenerate it with labconsole make-data"


def _check_npy(path: Path, data: bytes | bytearray) -> None:
    """Refuse an .npy file by what its first bytes show, before numpy.load reads it (see the module docstring)."""
    if not bytes(data[:6]) == _NPY_MAGIC:
        raise DataError(f"sample file {path} is not an .npy file: it does not start with the NPY magic "
                        f"(\\x93NUMPY) that numpy.save writes — it looks like {_looks_like(data)}; {_NPY_FIX}, or "
                        "give raw little-endian samples a .f32 or .bin name")
    version = (data[6], data[7]) if len(data) >= 8 else None
    if version not in _NPY_VERSIONS:
        shown = f"{version[0]}.{version[1]}" if version else "missing"
        raise DataError(f"sample file {path} has a bad .npy header: format version {shown}, numpy.save writes "
                        f"1.0, 2.0 or 3.0; {_NPY_FIX}")
    stream = io.BytesIO(data)
    stream.seek(8)
    reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    try:
        shape, _, dtype = reader(stream)
    except (ValueError, SyntaxError, TypeError, tokenize.TokenError) as exc:  # literal_eval of the file's text
        why = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise DataError(f"sample file {path} has a bad .npy header ({why}); it is damaged or was not written by "
                        f"numpy.save — {_NPY_FIX}") from None
    if dtype.hasobject:
        raise DataError(f"sample file {path} holds Python objects (an object array), which only unpickling could "
                        f"rebuild (refused); {_NPY_FIX}")
    wanted = math.prod(shape) * dtype.itemsize
    if len(data) - stream.tell() < wanted:
        raise DataError(f"sample file {path} is truncated: its header says {'x'.join(map(str, shape)) or 'scalar'} "
                        f"{dtype} ({wanted:,} bytes of data) but {len(data) - stream.tell():,} follow; regenerate it "
                        "(labconsole make-data) or remove it")


def _looks_like(data: bytes | bytearray) -> str:
    """What a file that is not .npy seems to be, from its first bytes (for the refusal's message)."""
    head = bytes(data[:64])
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive (an .npz from numpy.savez? save each sample with numpy.save)"
    if head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
        return "a Python pickle"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not merely a character cut at the 64-byte mark
            return "binary data of another kind"
        text = head[:exc.start].decode("utf-8")
    return "text" if all(char.isprintable() or char in "\t\n\r" for char in text) else "binary data of another kind"


def _check_fits(path: Path, array: np.ndarray, layout: InputLayout) -> None:
    if tuple(array.shape) != layout.sample_shape:
        shown = "x".join(map(str, array.shape)) or "scalar"
        raise DataError(f"sample file {path} holds shape {shown} but {layout.describe()} takes "
                        f"{'x'.join(map(str, layout.sample_shape))}; write samples of that shape (labconsole "
                        "make-data --model with this model) or run the model the files were made for")
    wanted = layout.host_dtype
    kind = array.dtype.kind
    fits = (kind in "iub" if wanted.kind in "iu" else kind in "fiu" if wanted.kind == "f" else
            kind == wanted.kind)
    if not fits:
        raise DataError(f"sample file {path} holds {array.dtype} values but {layout.describe()} takes "
                        f"{layout.dtype}; write {wanted.name} samples (floats cannot become token ids)")
