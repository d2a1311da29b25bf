"""Reading a sys/proc tree under a root: the live machine ("/") or a captured fixture, with optional recording.

Every topology reader goes through one `Tree`, so a fixture tree and the live machine are read the same way, and a
recording `Tree` captures exactly the files discovery read (engines.topology.capture writes them as a fixture).
Symlinks are resolved inside the root (a fixture's links are relative, like the kernel's), never outside it.
"""

from __future__ import annotations

import os

from engines.machine import caches


class Tree:
    """Read-only access to `<root>/<rel>`; with `record=True` it keeps what it read (files, links, listings)."""

    def __init__(self, root: str = "/", *, record: bool = False) -> None:
        if not os.path.isdir(root):
            raise NotADirectoryError(f"topology root {root!r} is not a directory: pass a folder holding sys/ and proc/")
        self.root = os.path.abspath(root)
        self.recording = record
        self.files: dict[str, str] = {}
        self.links: dict[str, str] = {}
        self.dirs: dict[str, list[str]] = {}

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel.strip("/"))

    def read(self, rel: str) -> str | None:
        """The file's text, stripped; None when it is missing or unreadable (a driver that refuses the read)."""
        try:
            with open(self.path(rel), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            return None
        if self.recording:
            self.files[self.real(rel)] = text
        return text.strip()

    def read_int(self, rel: str, base: int = 10) -> int | None:
        text = self.read(rel)
        try:
            return int(text, base) if text not in (None, "") else None
        except ValueError:
            return None

    def listdir(self, rel: str) -> list[str]:
        try:
            names = sorted(os.listdir(self.path(rel)))
        except OSError:
            return []
        if self.recording:
            self.dirs[self.real(rel)] = names
        return names

    def exists(self, rel: str) -> bool:
        return os.path.exists(self.path(rel))

    def link_name(self, rel: str) -> str | None:
        """The last component of a symlink's target (a driver's name), None when it is not a link."""
        full = self.path(rel)
        if not os.path.islink(full):
            return None
        if self.recording:  # keyed by the link's real folder, as real() keys the links it meets
            self.links[f"{self.real(os.path.dirname(rel.strip('/')))}/{os.path.basename(rel)}"] = os.readlink(full)
        return os.path.basename(os.readlink(full).rstrip("/"))

    def real(self, rel: str) -> str:
        """`rel` with every symlink resolved, relative to the root (links met on the way are recorded)."""
        parts = [p for p in rel.strip("/").split("/") if p]
        done: list[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            candidate = "/".join(done + [part])
            full = os.path.join(self.root, candidate)
            if os.path.islink(full):
                hops += 1
                if hops > 40:
                    raise OSError(f"too many symlinks resolving {rel!r} under {self.root}")
                target = os.readlink(full)
                if self.recording:
                    self.links[candidate] = target
                if target.startswith("/"):
                    done = []
                    target = target.lstrip("/")
                parts = [p for p in target.split("/") if p] + parts
                continue
            done.append(part)
        return "/".join(done)


def parse_cpulist(text: str | None) -> list[int]:
    """'0-3,8,10-11' → [0, 1, 2, 3, 8, 10, 11] (the kernel's cpulist format); '' → []; ValueError names a bad
    piece."""
    cpus: list[int] = []
    for piece in filter(None, (part.strip() for part in (text or "").replace("\n", ",").split(","))):
        low, _, high = piece.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise ValueError(f"bad CPU list piece {piece!r} in {text!r}: expected numbers like 0-3,8") from None
        if last < first:
            raise ValueError(f"bad CPU list piece {piece!r} in {text!r}: range runs backwards")
        cpus.extend(range(first, last + 1))
    return sorted(set(cpus))


def format_cpulist(cpus: list[int]) -> str:
    """[0, 1, 2, 3, 8] → '0-3,8' (the kernel's own form)."""
    out: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def parse_size(text: str | None) -> int | None:
    """A sysfs cache size ('32K', '1024K', '32M') in bytes (engines.machine.caches.parse_size); None when it does
    not parse."""
    try:
        return caches.parse_size(text or "")
    except ValueError:
        return None
