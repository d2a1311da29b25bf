"""What every model-file format shares: the errors, the first and last bytes of a file, its sha256.

Plain standard library on purpose: a process that only names a model file (the console) can import this package
without importing torch or onnx; each format's reader imports its library when it reads.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

TORCH_SAVE_HINT = "save it with torch.jit.script(model).save(path) or torch.export.save(exported, 'model.pt2')"
_CHUNK = 1 << 20


class ModelFileError(ValueError):
    """A model file cannot be used; the message names the file, what is wrong with it and the fix."""


class UnsafeModelFile(ModelFileError):
    """The file would need unpickling (or native code) to load; it is refused, never loaded.

    Not a RuntimeError on purpose: torch.export.load swallows RuntimeError and retries an older format.
    """


def sha256(path: str | os.PathLike) -> str:
    """The file's fingerprint, read in 1 MiB blocks so a multi-gigabyte model never sits in memory at once."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def read_head(path: Path, size: int = 16) -> bytes:
    """The first bytes (the format's signature), after the checks that give a missing or empty file its own
    message rather than a parse error."""
    if not path.exists():
        raise ModelFileError(f"model file not found: {path}")
    if path.is_dir():
        raise ModelFileError(f"{path} is a directory, not a model file. Fix: give the model file inside it "
                             f"(e.g. {path / 'model.onnx'})")
    if not path.is_file():
        raise ModelFileError(f"{path} is not a regular file (a device, a pipe or a socket), not a model file. Fix: "
                             "give the path of the saved model file")
    if path.stat().st_size == 0:
        raise ModelFileError(f"{path} is empty (0 bytes): the export or copy that made it did not finish. Fix: "
                             "export or copy the model again")
    with open(path, "rb") as handle:
        return handle.read(size)


def read_tail(path: Path) -> bytes:
    """The last byte (an old-protocol pickle ends with STOP, '.')."""
    with open(path, "rb") as handle:
        handle.seek(max(0, path.stat().st_size - 1))
        return handle.read(1)


def strip_root(name: str) -> str:
    """Torch archives put everything under one top folder (named after the file); drop it."""
    head, sep, rest = name.partition("/")
    return rest if sep else name


def first_line(exc: BaseException) -> str:
    """A library's error in one line (they can run to pages), for a message that also names the fix."""
    text = str(exc).strip()
    return text.splitlines()[0][:400] if text else type(exc).__name__
