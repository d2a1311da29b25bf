"""Whether a link runs below its maximum, and whether that holds under load (the only case that is flagged).

Idle PCIe links train down to save power (ASPM, GPU power states: hwloc issue #653), so a link read below its max at
rest is "below-max-idle" and not a finding. `check_links_under_load` re-reads those links while a load drives them:
still low → "low-under-load" (FLAGGED); back at max → "recovered-under-load". NVMe links get a real load (O_DIRECT
reads of the drive, read-only); GPU and NIC links say why they were not checked.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from typing import Any

from engines.topology.pcie import describe, gbs, read_current
from engines.topology.sysfs import Tree


class LoadUnavailable(Exception):
    """Raised by a load factory when it cannot drive a link; the message says why."""


def classify(link: dict[str, Any]) -> None:
    """Set state from current vs max: at-max, below-max-idle, or unknown (kept when either side is missing)."""
    cur, top = link.get("current"), link.get("max")
    if not cur or not top or None in (cur.get("speed_gts"), cur.get("width"), top.get("speed_gts"), top.get("width")):
        link["state"] = "unknown"
        return
    if cur["speed_gts"] >= top["speed_gts"] and cur["width"] >= top["width"]:
        link["state"] = "at-max"
        return
    link["state"] = "below-max-idle"
    _add_note(link, f"idle reading {describe(cur)} of {describe(top)}: idle links train down to save power "
                    "(hwloc #653), so this is not flagged unless it stays low under load (--check-links)")


def check_links_under_load(topology: dict[str, Any], load: Callable[[dict], ContextManager] | None, *,
                           root: str = "/", hold_s: float = 1.0, poll_s: float = 0.1) -> dict[str, Any]:
    """Re-read each below-max PCIe link's current speed/width while `load(link)` runs; sets the state in place.

    `load(link)` returns a context manager that drives the link while open, or raises LoadUnavailable(why). The
    link's best reading over `hold_s` counts (training up takes a few ms). Without a load nothing changes.
    """
    if load is None:
        return topology
    tree = Tree(root)
    for link in topology.get("links", []):
        if link.get("kind") != "pcie" or link.get("state") not in ("below-max-idle", "low-under-load",
                                                                     "recovered-under-load"):
            continue
        bdf = link["id"].split(":", 1)[1]
        try:
            ctx = load(link)
        except LoadUnavailable as exc:
            _add_note(link, f"not checked under load ({exc})")
            continue
        best = None
        try:
            with ctx as handle:
                deadline = time.monotonic() + hold_s
                while True:
                    now = read_current(tree, bdf)
                    if best is None or _rank(now) > _rank(best):
                        best = now
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(poll_s)
        except LoadUnavailable as exc:
            _add_note(link, f"not checked under load ({exc})")
            continue
        top = link["max"]
        link["under_load"] = best
        if isinstance(handle, dict) and handle.get("path"):
            seconds = max(time.monotonic() - handle["started"], 1e-9)
            _add_note(link, f"load: O_DIRECT reads of {handle['path']}, {handle['bytes'] / seconds / 1e6:.0f} MB/s "
                            f"over {seconds:.1f} s")
        if best is None or best["speed_gts"] is None or best["width"] is None:
            link["state"] = "unknown"  # unreadable is not slow: never flagged on a reading that was not there
            _add_note(link, "under load its current speed or width could not be read from sysfs")
        elif best["speed_gts"] >= top["speed_gts"] and best["width"] >= top["width"]:
            link["state"] = "recovered-under-load"
            _add_note(link, f"under load it trained to {describe(best)}: the idle reading was power saving")
        else:
            link["state"] = "low-under-load"
            link["current"] = best
            link["current_gbs"] = gbs(best["speed_gts"], best["width"])
            _add_note(link, f"FLAGGED: still {describe(best)} of {describe(top)} under load; reseat the card, check "
                            "the slot's wiring (an x8 slot in x16 form), risers and BIOS link settings")
    return topology


def default_load(topology: dict[str, Any], *, root: str = "/") -> Callable[[dict], ContextManager]:
    """The real loads: NVMe links are read with O_DIRECT; GPU and NIC links are not driven from here (why given)."""
    nodes = {n["id"]: n for n in topology.get("nodes", [])}
    children: dict[str, list[str]] = {}
    for node in nodes.values():
        if node.get("parent"):
            children.setdefault(node["parent"], []).append(node["id"])

    def below(node_id: str) -> list[dict]:
        out, stack = [], [node_id]
        while stack:
            current = stack.pop()
            out.append(nodes[current])
            stack.extend(children.get(current, []))
        return out

    def load(link: dict) -> ContextManager:
        endpoints = below(link["b"]) if link["b"] in nodes else []
        drives = [n for n in endpoints if n["kind"] == "nvme" and n["attrs"].get("block")]
        if drives:
            return nvme_read_load(drive_read_path(drives[0]["attrs"]["block"], root=root))
        kinds = {n["kind"] for n in endpoints}
        if "gpu" in kinds:
            raise LoadUnavailable("a GPU link needs device copies; the console process does not import torch — the "
                                  "bandwidth matrix's h2d/d2h copies drive it")
        if "nic" in kinds:
            raise LoadUnavailable("a NIC link needs traffic to a peer; none is started from here")
        raise LoadUnavailable("no NVMe drive below this link to read from")

    return load


def drive_read_path(block: str, *, root: str = "/", min_bytes: int = 64 << 20, max_entries: int = 5000) -> str:
    """What to read from drive `block`: its device node when it opens with O_DIRECT, else a file of at least
    `min_bytes` on a filesystem mounted from it or its partitions (read-only either way). Raises LoadUnavailable."""
    device = os.path.join(root, "dev", block)
    try:
        os.close(os.open(device, os.O_RDONLY | getattr(os, "O_DIRECT", 0)))
        return device
    except OSError as exc:
        refused = f"{device}: {exc.strerror or exc}"
    tree = Tree(root)
    numbers = {tree.read(f"sys/class/block/{block}/dev")}
    numbers |= {tree.read(f"sys/class/block/{block}/{part}/dev") for part in tree.listdir(f"sys/class/block/{block}")
                if part.startswith(block)}
    numbers.discard(None)
    mounts = []
    for line in (tree.read("proc/self/mountinfo") or "").splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[2] in numbers:
            mounts.append(os.path.join(root, fields[4].lstrip("/")))
    best: tuple[int, str] | None = None
    seen = 0
    for mount in mounts:
        try:
            dev = os.stat(mount).st_dev
        except OSError:
            continue
        stack = [mount]
        while stack and seen < max_entries:
            try:
                entries = list(os.scandir(stack.pop()))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if info.st_dev != dev:
                    continue  # another filesystem mounted below: not this drive
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False) and info.st_size >= min_bytes and \
                        (best is None or info.st_size > best[0]) and os.access(entry.path, os.R_OK):
                    best = (info.st_size, entry.path)
            if best is not None:
                return best[1]
    raise LoadUnavailable(f"cannot read the drive: {refused}, and no readable file of {min_bytes >> 20} MiB or more "
                          f"was found on a filesystem mounted from it (looked at {seen} entries)")


@contextlib.contextmanager
def nvme_read_load(path: str, *, chunk: int = 1 << 20, span: int = 1 << 30):
    """Read `path` (a block device or a file on the drive) with O_DIRECT in a thread while the context is open.

    Read-only: opened O_RDONLY. Sequential 1 MiB reads over the first `span` bytes, wrapping around; O_DIRECT so the
    page cache cannot answer instead of the drive. Yields a dict whose "bytes" grows while reading.
    """
    flags = os.O_RDONLY | getattr(os, "O_DIRECT", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise LoadUnavailable(f"cannot open {path} with O_DIRECT for reading: {exc.strerror or exc}") from exc
    stats: dict[str, Any] = {"bytes": 0, "error": None, "path": path, "started": time.monotonic()}
    stop = threading.Event()
    buf = mmap.mmap(-1, chunk)  # page-aligned, as O_DIRECT requires

    def run() -> None:
        offset = 0
        try:
            while not stop.is_set():
                got = os.preadv(fd, [buf], offset)
                if got <= 0:
                    if offset == 0:
                        break
                    offset = 0
                    continue
                stats["bytes"] += got
                offset = 0 if offset + got >= span else offset + got
        except OSError as exc:
            stats["error"] = exc.strerror or str(exc)

    try:
        worker = threading.Thread(target=run, name="topology-nvme-load", daemon=True)
        worker.start()
        time.sleep(0.05)
        if stats["error"]:
            raise LoadUnavailable(f"O_DIRECT reads of {path} failed: {stats['error']}")
        try:
            yield stats
        finally:
            stop.set()
            worker.join(timeout=5)
    finally:
        os.close(fd)
        buf.close()


def _rank(reading: dict[str, Any]) -> tuple[float, int]:
    return (reading.get("speed_gts") or 0.0, reading.get("width") or 0)


def _add_note(link: dict[str, Any], text: str) -> None:
    link["note"] = f"{link['note']}; {text}" if link.get("note") else text
