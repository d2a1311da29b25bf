"""Zip archives (.pt2, TorchScript) opened with limits: declared sizes checked before any member is read.

Why: a zip says in its directory how large each member becomes, and a reader (ours, or torch's C++ one, which
allocates what a member declares) trusts it. A 12 MB file can declare 12 GiB; expanding it would take the
memory or disk of the lab machine. So before anything reads a member, every member's declared size is held to
a compression ratio torch never needs (torch.jit.save and torch.export.save store members uncompressed, 1:1),
and the total to what this machine could hold. Python's zipfile never reads past a member's declared size, so
the declared sizes bound what is read. Error messages give member numbers and sizes, never member names (they are
the file's own text).
"""

from __future__ import annotations

import contextlib
import zipfile
from collections.abc import Iterator
from pathlib import Path

from engines.host_memory import available_bytes
from engines.model_files.common import TORCH_SAVE_HINT, ModelFileError, UnsafeModelFile

MAX_RATIO = 200  # declared size / stored size of one member
RATIO_FLOOR = 1 << 20  # a member that expands to under 1 MiB is harmless however well it compresses
_GIB = 1024 ** 3
_FIX = "Fix: save the model again with torch.jit.save or torch.export.save (they store members uncompressed)"


# ---- Public API
@contextlib.contextmanager
def open_archive(path: Path) -> Iterator[zipfile.ZipFile]:
    """The archive, open, after `check_limits`; a damaged zip is a ModelFileError that says so."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ModelFileError(f"{path} is a damaged or truncated archive ({exc}); copy or save it again "
                             f"({TORCH_SAVE_HINT})") from exc
    with archive:
        check_limits(path, archive)
        yield archive


def check_limits(path: Path, archive: zipfile.ZipFile) -> None:
    """Refuse the archive when a member declares an absurd expansion or all of them more than fits here."""
    total = 0
    for number, info in enumerate(archive.infolist(), start=1):
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            ratio = info.file_size / max(info.compress_size, 1)
            raise UnsafeModelFile(f"{path}: member {number} of the archive declares {_size(info.file_size)} from "
                                  f"{_size(info.compress_size)} stored (ratio {ratio:,.0f}:1, the limit is "
                                  f"{MAX_RATIO}:1); refused before anything was expanded (a zip bomb or a damaged "
                                  f"archive). {_FIX}")
        total += info.file_size
    budget = max(2 * path.stat().st_size, available_bytes())
    if total > budget:
        raise UnsafeModelFile(f"{path}: its members declare {_size(total)} in all, more than this machine can hold "
                              f"(limit {_size(budget)}: the larger of twice the file's size and the memory "
                              f"available now); refused before anything was expanded. {_FIX}")


# ---- Private API
def _size(count: int) -> str:
    return f"{count / _GIB:.1f} GiB" if count >= _GIB else f"{count / 1024 ** 2:.1f} MiB" if count >= 1 << 20 \
        else f"{count:,} bytes"
