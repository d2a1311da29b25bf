"""Which format a model file really is, decided by its content, never by its extension.

A zip is told apart by its members (a .pt2 has `archive_format` or `models/*.json`, TorchScript has `code/`,
a torch.save zip only `data.pkl`: refused); a bare pickle by its first and last bytes (refused); anything else
must parse as ONNX. A mismatch (an ONNX file named `.pt`) is an error that says what the file really is. A zip's
declared sizes are checked before anything reads it (`archives`), and no error quotes the file's own bytes.
"""

from __future__ import annotations

import os
from pathlib import Path

from engines.model_files.archives import open_archive
from engines.model_files.common import TORCH_SAVE_HINT, ModelFileError, UnsafeModelFile, read_head, strip_root
from engines.model_files.onnx_model import parse_onnx
from engines.model_files.pickles import PICKLE_REFUSAL, refuse_if_pickle


def detect_format(path: str | os.PathLike) -> str:
    """'onnx' | 'torchscript' | 'pt2' from the file's content; anything else is a ModelFileError."""
    path = Path(path)
    head = read_head(path)
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return _zip_format(path)
    refuse_if_pickle(path, head)
    parse_onnx(path)  # raises with a message fitting the extension when it is not ONNX either
    return "onnx"


# ---- Private API
def _zip_format(path: Path) -> str:
    with open_archive(path) as archive:  # sizes checked before anything reads a member
        names = archive.namelist()
    members = {strip_root(name) for name in names}
    if "archive_format" in members or any(m.startswith("models/") and m.endswith(".json") for m in members) \
            or "serialized_exported_program.json" in members:
        return "pt2"
    if any(m.startswith("code/") for m in members) or "constants.pkl" in members:
        return "torchscript"
    if "data.pkl" in members:
        raise UnsafeModelFile(f"{path} {PICKLE_REFUSAL}")
    raise ModelFileError(f"{path} is a zip archive but neither TorchScript nor a torch.export program (no code/ "
                         f"folder, no archive_format or models/*.json among its {len(members)} members). Fix: "
                         f"{TORCH_SAVE_HINT}")
