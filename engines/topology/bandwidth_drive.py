"""A drive to host memory: sequential O_DIRECT reads of a test file, and which topology node the drive is.

The reads are the I/O sweep's own reader (engines/storage/ioreader: its TestFile, its O_DIRECT check, one point of
`ReaderPool(1).measure`: QUEUE_DEPTH threads taking consecutive BLOCK-byte blocks from one cursor, page-aligned
buffers, for a fixed time), so the bandwidth matrix and `labconsole storage` read a drive the same way. O_DIRECT
bypasses the page cache, so no drop is needed and none can fail. Where the file system refuses O_DIRECT (tmpfs,
some network and overlay file systems) the entry is not available, with that reason: a buffered read would be the
page cache's figure, not the drive's.

The drive's node: engines.block_device says which disk holds the directory (the disks under a dm/md device); the
disk's sysfs device path names the PCI function it hangs off (an NVMe controller, or a virtio/SATA/RAID function),
and that is the topology node "pci:<bdf>" when discovery listed it.
"""

from __future__ import annotations

import os
import re

from engines import block_device
from engines.machine.errors import Unavailable
from engines.storage import ioreader

MIB = 1024 ** 2
BLOCK = 4 * MIB
QUEUE_DEPTH = 4
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


class DriveRead:
    """A test file in `directory`; `once()` reads it with O_DIRECT for about `repeat_s` seconds, in GB/s.

    Use as a context manager: the file is removed on the way out whatever happened."""

    def __init__(self, directory: str, size: int, repeat_s: float):
        self.repeat_s = repeat_s
        self._file = ioreader.TestFile(directory, size)
        self._pool: ioreader.ReaderPool | None = None

    def __enter__(self) -> DriveRead:
        self._file.__enter__()
        ok, why = ioreader.direct_supported(self._file.path)
        if not ok:
            self._file.__exit__(None, None, None)
            raise Unavailable(f"{why} in {self._file.directory}: a buffered read would measure the page cache, "
                              "not the drive (choose a directory on a local disk with --storage DIR)")
        self._pool = ioreader.ReaderPool(1)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._pool is not None:
            self._pool.close()
        self._file.__exit__(*exc_info)

    @property
    def size(self) -> int:
        return self._file.size

    def once(self) -> float:
        point = self._pool.measure(self._file.path, self._file.size, "read", "seq", BLOCK, QUEUE_DEPTH, 1,
                                   self.repeat_s, True)
        return point["bytes"] / point["seconds"] / 1e9


def drive_node(directory: str, nodes: dict[str, dict], sys_root: str = block_device.SYS,
               mountinfo: str = block_device.MOUNTINFO) -> tuple[str | None, str | None, str]:
    """(topology node id of the drive holding `directory` or None, the disk's description — None when the
    directory is on no block device at all (tmpfs, NFS): there is no drive to read —, why the node is None)."""
    info = block_device.describe(directory, sys_root, mountinfo)
    if not info.get("disk"):
        return None, None, info.get("reason") or "no block device found for the directory"
    disks = info.get("physical") or [info["disk"]]
    for disk in disks:
        for node in nodes.values():
            if (node.get("attrs") or {}).get("block") == disk:
                return node["id"], block_device.label(info), ""
        device = os.path.realpath(os.path.join(sys_root, "block", disk, "device"))
        functions = [part for part in device.split(os.sep) if _BDF.match(part)]
        if functions and f"pci:{functions[-1]}" in nodes:
            return f"pci:{functions[-1]}", block_device.label(info), ""
        if functions:
            reason = f"{disk} hangs off PCI function {functions[-1]}, which the topology does not list"
        else:
            reason = f"{disk} has no PCI function in its sysfs path ({device})"
    return None, block_device.label(info), reason

