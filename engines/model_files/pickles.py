"""Pickles (`torch.save`, `pickle.dump`) are recognised by their bytes and refused before anything reads them.

A pickle can run any code when it is loaded, and a lab machine runs files that come from anywhere, so Lab
Console never unpickles a model file. Recognising one needs only the first and last bytes: nothing is parsed.
"""

from __future__ import annotations

from pathlib import Path

from engines.model_files.common import UnsafeModelFile, read_tail

PICKLE_REFUSAL = ("is a pickled Python object (torch.save), not TorchScript; Lab Console never unpickles model "
                  "files because a pickle can run code. Fix: torch.jit.script(model).save(path) (or "
                  "torch.jit.trace(model, example).save(path)), or torch.export.save(torch.export.export(model, "
                  "example), 'model.pt2')")


def looks_like_pickle(head: bytes, tail: bytes = b"") -> bool:
    """Pickle protocol 2+ starts with PROTO (0x80) and the protocol number (torch.save's legacy format too);
    protocols 0/1 start with a MARK/EMPTY_LIST/EMPTY_DICT/GLOBAL opcode and end with STOP ('.')."""
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return True
    return head[:1] in (b"(", b"]", b"}", b"c") and tail.endswith(b".")


def refuse_if_pickle(path: Path, head: bytes) -> None:
    """Raise UnsafeModelFile when the file (whose first bytes are `head`) is a bare pickle."""
    if looks_like_pickle(head, read_tail(path)):
        raise UnsafeModelFile(f"{path} {PICKLE_REFUSAL}")

