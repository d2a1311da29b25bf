"""Deterministic storage for the storage tests: a loop device with ext4 whose reads are throttled by a cgroup,
and tmpfs (/dev/shm) as the fast end.

Why: CI has one slow virtual disk whose speed nobody controls. A loop device limited to a known read rate lets a
test assert "a device at 50 MB/s feeds k accelerators" against the arithmetic. The limit is the cgroup's: v2
`io.max` (rbps) when the kernel's io controller is enabled in the unified hierarchy, else v1
`blkio.throttle.read_bps_device`. Only processes in that cgroup are limited, so the benchmark runs in a child
process that moves itself into the cgroup before it starts (its spawned readers inherit it).

Every fixture says exactly why it cannot run (not root, no loop device, no throttle) through `Unavailable`, which
the tests turn into a skip with that reason.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

V1_BLKIO = Path("/sys/fs/cgroup/blkio")
V2_ROOTS = (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))


class Unavailable(RuntimeError):
    """This machine cannot provide the fixture; the message is the skip reason."""


@dataclass
class ThrottledDevice:
    mount: Path  # an ext4 file system on the loop device
    device: str  # /dev/loopN
    major_minor: str  # "7:0"
    read_bps: int
    procs_file: Path  # write a pid here to throttle that process (and the children it starts afterwards)
    controller: str  # "cgroup v2 io.max" | "cgroup v1 blkio.throttle.read_bps_device"


# ---- Public API
@contextlib.contextmanager
def throttled_loop_device(size_mb: int, read_bps: int) -> Iterator[ThrottledDevice]:
    """A fresh ext4 loop device of `size_mb` MB, mounted, with reads limited to `read_bps` for one cgroup."""
    _require_root_tools()
    work = Path(tempfile.mkdtemp(prefix="labconsole-loop-"))
    image, mount = work / "disk.img", work / "mnt"
    device = None
    mounted = False
    cgroup = None
    try:
        with open(image, "wb") as handle:
            handle.truncate(size_mb * 1024 * 1024)
        device = _run(["losetup", "--find", "--show", str(image)], "no free loop device").strip()
        _run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", device], "mkfs.ext4 failed")
        mount.mkdir()
        _run(["mount", device, str(mount)], "mount of the loop device failed")
        mounted = True
        major_minor = Path(f"/sys/block/{Path(device).name}/dev").read_text().strip()
        cgroup, procs, controller = _throttle_cgroup(major_minor, read_bps)
        yield ThrottledDevice(mount, device, major_minor, read_bps, procs, controller)
    finally:
        if mounted:
            subprocess.run(["umount", str(mount)], check=False, capture_output=True)
        if device:
            subprocess.run(["losetup", "-d", device], check=False, capture_output=True)
        if cgroup is not None:
            with contextlib.suppress(OSError):
                cgroup.rmdir()
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def tmpfs_dir() -> Iterator[Path]:
    """A fresh directory on tmpfs (/dev/shm): files in memory, the fast end."""
    base = Path("/dev/shm")
    if not base.is_dir() or not os.access(base, os.W_OK):
        raise Unavailable("/dev/shm is not a writable tmpfs here")
    path = Path(tempfile.mkdtemp(prefix="labconsole-tmpfs-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def join_cgroup_code(procs_file: Path) -> str:
    """Python source a child process runs first to move itself into the throttled cgroup."""
    return f"import os; open({str(procs_file)!r}, 'w').write(str(os.getpid()))\n"


# ---- Private API
def _require_root_tools() -> None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        raise Unavailable("not root: a loop device and a cgroup read limit need root")
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} is not installed")
    if not Path("/dev/loop-control").exists():
        raise Unavailable("no loop devices (/dev/loop-control is missing)")


def _throttle_cgroup(major_minor: str, read_bps: int) -> tuple[Path, Path, str]:
    """A new cgroup limiting reads from `major_minor`: v2 io.max where the io controller is on, else v1 blkio."""
    name = f"labconsole-feed-{uuid.uuid4().hex[:8]}"
    for root in V2_ROOTS:
        controllers = root / "cgroup.controllers"
        if controllers.exists() and "io" in controllers.read_text().split():
            subtree = (root / "cgroup.subtree_control").read_text().split()
            if "io" not in subtree:
                continue  # enabling it would change the whole machine's hierarchy: leave it alone
            cgroup = root / name
            cgroup.mkdir()
            (cgroup / "io.max").write_text(f"{major_minor} rbps={read_bps}\n")
            return cgroup, cgroup / "cgroup.procs", "cgroup v2 io.max"
    limit = V1_BLKIO / "blkio.throttle.read_bps_device"
    if limit.exists():
        cgroup = V1_BLKIO / name
        cgroup.mkdir()
        (cgroup / "blkio.throttle.read_bps_device").write_text(f"{major_minor} {read_bps}\n")
        return cgroup, cgroup / "cgroup.procs", "cgroup v1 blkio.throttle.read_bps_device"
    raise Unavailable("no cgroup read throttle: neither the v2 io controller (enabled in cgroup.subtree_control) "
                      "nor v1 blkio.throttle.read_bps_device is available")


def _run(command: list[str], problem: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise Unavailable(f"{problem}: {' '.join(command)} → {done.stderr.strip() or done.returncode}")
    return done.stdout
