"""Which block device holds a directory: the name /proc/diskstats counts its traffic under, and what lies below it.

Why here (engines) and not in the console: a data directory lives where the worker runs (a Ray node reads its own
disks), so the worker resolves it and puts the answer in its result; the console's verdicts and telemetry then name
the device without guessing. Linux sysfs only; elsewhere every answer says why it is not known.

The walk: ``stat(dir).st_dev`` → ``/sys/dev/block/MAJ:MIN`` → the device's sysfs directory. A partition (it has a
``partition`` file) is counted on its own line of /proc/diskstats, but its ceiling, queue and temperature are the
whole disk's, so ``disk`` is the parent. A device-mapper or md device (LVM, dm-crypt, RAID) is the device the file
system sees — its counters are the data's traffic — and ``physical`` lists the disks under it (``slaves/``). A loop
device reads a file on another device: ``backing_file`` and that file's device are given. An anonymous device (major
0: tmpfs, overlayfs, NFS, a btrfs subvolume) is looked up in /proc/self/mountinfo: a /dev source is followed, else
the answer says the data is not on a local block device (tmpfs is memory).

Standard library only; every function takes the sysfs root and mountinfo path, so tests run on captured trees.
"""

from __future__ import annotations

import os
from typing import Any

SYS = "/sys"
MOUNTINFO = "/proc/self/mountinfo"
_STACKED = ("dm-", "md")


# ---- Public API
def describe(path: str | os.PathLike[str], sys_root: str = SYS, mountinfo: str = MOUNTINFO) -> dict[str, Any]:
    """{path, dev, device, disk, kind, physical, backing_file, model, rotational, fstype, reason} for a directory.

    ``device``: the block device the file system is on (may be a partition); ``disk``: the device whose
    /proc/diskstats line carries the data's traffic and whose queue is the ceiling (the whole disk of a
    partition; the dm/md/loop device itself); ``physical``: whole disks below a stacked or loop device. None
    where not known, with ``reason`` saying why.
    """
    return _describe_stat(path, "st_dev", f"cannot stat {os.fspath(path)!r}", sys_root, mountinfo,
                          _unknown(os.fspath(path)))


def describe_dev(major: int, minor: int, sys_root: str = SYS, mountinfo: str = MOUNTINFO,
                 out: dict[str, Any] | None = None) -> dict[str, Any]:
    """As :func:`describe`, for a device number (what ``st_dev`` holds)."""
    out = out if out is not None else _unknown(None)
    out["dev"] = f"{major}:{minor}"
    mount = _mount_of(major, minor, mountinfo)
    if mount:
        out["fstype"] = mount["fstype"]
    if major == 0:
        source = (mount or {}).get("source") or ""
        if source.startswith("/dev/"):
            return _describe_stat(source, "st_rdev", f"{out['fstype']} on {source}, which cannot be stat'ed",
                                  sys_root, mountinfo, out)
        fstype = (mount or {}).get("fstype") or "an anonymous device"
        out["kind"] = fstype
        what = "memory (the page cache), not a block device" if fstype in ("tmpfs", "ramfs") else \
            f"not a local block device ({fstype}{', source ' + source if source else ''})"
        out["reason"] = f"the directory is on {what}: no disk counters, queue or temperature belong to it"
        return out
    link = os.path.join(sys_root, "dev", "block", f"{major}:{minor}")
    real = os.path.realpath(link)
    if not os.path.exists(real):
        out["reason"] = f"{link} does not exist (not Linux, or sysfs not mounted)"
        return out
    name = os.path.basename(real)
    out["device"] = name
    disk = os.path.basename(os.path.dirname(real)) if os.path.exists(os.path.join(real, "partition")) else name
    out["disk"] = disk
    block = os.path.join(sys_root, "block", disk)
    out["kind"] = _kind(disk, block)
    if disk.startswith(_STACKED):
        out["physical"] = _physical(disk, sys_root, set())
    elif disk.startswith("loop"):
        backing = read_sysfs(os.path.join(block, "loop", "backing_file"))
        out["backing_file"] = backing
        if backing:
            try:
                st_dev = os.stat(backing).st_dev
                below = describe_dev(os.major(st_dev), os.minor(st_dev), sys_root, mountinfo)
                out["physical"] = [below["disk"]] if below.get("disk") else []
            except OSError:
                pass
    out["model"] = read_sysfs(os.path.join(block, "device", "model"))
    rotational = read_sysfs(os.path.join(block, "queue", "rotational"))
    out["rotational"] = rotational == "1" if rotational in ("0", "1") else None
    return out


def label(info: dict[str, Any]) -> str:
    """A short human name: "nvme0n1 (NVMe, partition nvme0n1p2)", "dm-0 (device-mapper over nvme0n1)", ..."""
    disk = info.get("disk")
    if not disk:
        return str(info.get("reason") or "no block device known for it")
    parts = [str(info.get("kind") or "block device")]
    if info.get("model"):
        parts.append(str(info["model"]))
    if info.get("device") and info["device"] != disk:
        parts.append(f"partition {info['device']}")
    if info.get("physical"):
        parts.append("over " + ", ".join(info["physical"]))
    if info.get("backing_file"):
        parts.append(f"file {info['backing_file']}")
    return f"{disk} ({', '.join(parts)})"


# ---- Private API
def _describe_stat(target: Any, field: str, failure: str, sys_root: str, mountinfo: str,
                   out: dict[str, Any]) -> dict[str, Any]:
    """:func:`describe_dev` for the device number `os.stat(target).<field>` holds (`st_dev`: the file system a
    path is on; `st_rdev`: the device a /dev node is); `out` with `failure: why` as the reason if stat fails."""
    try:
        number = getattr(os.stat(target), field)
    except OSError as exc:
        out["reason"] = f"{failure}: {exc.strerror or exc}"
        return out
    return describe_dev(os.major(number), os.minor(number), sys_root, mountinfo, out)


def _kind(disk: str, block: str) -> str:
    if disk.startswith("nvme"):
        return "NVMe"
    if disk.startswith("dm-"):
        return "device-mapper"
    if disk.startswith("md"):
        return "md RAID"
    if disk.startswith("loop"):
        return "loop"
    if disk.startswith(("zram", "ram")):
        return "RAM disk"
    if disk.startswith("vd"):
        return "virtio disk"
    if disk.startswith(("sd", "hd")):
        return "HDD" if read_sysfs(os.path.join(block, "queue", "rotational")) == "1" else "SATA/SAS SSD"
    return "block device"


def _physical(disk: str, sys_root: str, seen: set[str]) -> list[str]:
    """Whole disks under a stacked device, depth first (dm over md over partitions)."""
    if disk in seen:
        return []
    seen.add(disk)
    slaves = os.path.join(sys_root, "block", disk, "slaves")
    try:
        names = sorted(os.listdir(slaves))
    except OSError:
        return []
    out: list[str] = []
    for name in names:
        real = os.path.realpath(os.path.join(slaves, name))
        whole = os.path.basename(os.path.dirname(real)) if os.path.exists(os.path.join(real, "partition")) else name
        found = _physical(whole, sys_root, seen) if whole.startswith(_STACKED) else [whole]
        out += [d for d in found if d not in out]
    return out


def _mount_of(major: int, minor: int, mountinfo: str) -> dict[str, str] | None:
    """The mount whose device is MAJ:MIN (proc(5) mountinfo: field 3; fstype and source after the " - ")."""
    want = f"{major}:{minor}"
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) > 4 and fields[2] == want and " - " in line:
                    after = line.split(" - ", 1)[1].split()
                    return {"mount_point": fields[4], "fstype": after[0] if after else "",
                            "source": after[1] if len(after) > 1 else ""}
    except OSError:
        return None
    return None


def _unknown(path: str | None) -> dict[str, Any]:
    """The record before anything is known: every field None (or empty), no reason yet."""
    return {"path": path, "dev": None, "device": None, "disk": None, "kind": None, "physical": [],
            "backing_file": None, "model": None, "rotational": None, "fstype": None, "reason": ""}


def read_sysfs(path: str) -> str | None:
    """A sysfs/procfs file's text, stripped; None when it is missing, unreadable or empty."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip() or None
    except OSError:
        return None
