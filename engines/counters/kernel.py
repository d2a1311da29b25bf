"""The perf_event_open system call through ctypes, and the binary layouts it speaks.

Why ctypes and not the `perf` tool or a package: the worker needs counters for itself around a block of Python
code; `perf stat -p` would be another process to start, parse and trust, and no wheel for this exists on every
platform the bundle ships to. One syscall, three ioctls and a read are all it takes.

`Kernel` is the seam tests replace: `LinuxKernel` makes the real calls, a fake (tests/unit/test_counters.py)
answers with canned counts and errors.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from dataclasses import dataclass
from typing import Protocol

# perf_event_attr.type
TYPE_HARDWARE, TYPE_SOFTWARE = 0, 1
# PERF_TYPE_HARDWARE configs (linux/perf_event.h)
HW_CPU_CYCLES, HW_INSTRUCTIONS, HW_CACHE_REFERENCES, HW_CACHE_MISSES = 0, 1, 2, 3
# read_format: TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | GROUP → nr, enabled, running, value × nr
READ_FORMAT = 1 | 2 | 8
# ioctls (_IO('$', n)) and their flag to act on the whole group
IOC_ENABLE, IOC_DISABLE, IOC_RESET, IOC_FLAG_GROUP = 0x2400, 0x2401, 0x2403, 1
ATTR_SIZE = 112  # PERF_ATTR_SIZE_VER5: every kernel since 4.1 takes it
_FLAG_DISABLED, _FLAG_INHERIT, _FLAG_EXCLUDE_KERNEL, _FLAG_EXCLUDE_HV = 1 << 0, 1 << 1, 1 << 5, 1 << 6
# perf_event_open's number per machine (the generic table for arm64, riscv64 and loongarch64)
SYSCALL_NUMBERS = {"x86_64": 298, "amd64": 298, "i386": 336, "i686": 336, "aarch64": 241, "arm64": 241,
                   "armv7l": 364, "armv6l": 364, "ppc64le": 319, "ppc64": 319, "s390x": 331, "riscv64": 241,
                   "loongarch64": 241}


@dataclass(frozen=True)
class Event:
    """One counter: its name in the result, and what perf_event_attr needs to open it."""

    name: str
    type: int
    config: int
    config1: int = 0
    config2: int = 0
    scale: float = 1.0  # the kernel's sysfs `.scale` for the event (top-down slots on some CPUs)


@dataclass(frozen=True)
class GroupRead:
    """One group's read: the values of its events in opening order, and how long it was enabled / counting."""

    enabled_ns: int
    running_ns: int
    values: tuple[int, ...]


class Kernel(Protocol):
    """The calls a session makes. Each raises OSError (with errno) the way the real call fails."""

    def open(self, attr: bytes, pid: int, cpu: int, group_fd: int) -> int: ...

    def ioctl(self, fd: int, request: int, arg: int) -> None: ...

    def read(self, fd: int, size: int) -> bytes: ...

    def close(self, fd: int) -> None: ...


# ---- Public API
def attr(event: Event, leader: bool, exclude_kernel: bool) -> bytes:
    """perf_event_attr for a counting (not sampling) event, inherited by threads started while it counts.

    The leader starts disabled and the members follow it, so one ioctl on the leader starts the whole group.
    """
    flags = _FLAG_INHERIT | _FLAG_EXCLUDE_HV | (_FLAG_DISABLED if leader else 0) | \
        (_FLAG_EXCLUDE_KERNEL if exclude_kernel else 0)
    data = bytearray(ATTR_SIZE)
    struct.pack_into("=IIQQQQQ", data, 0, event.type, ATTR_SIZE, event.config, 0, 0, READ_FORMAT, flags)
    struct.pack_into("=QQ", data, 56, event.config1, event.config2)
    return bytes(data)


def parse_attr(data: bytes) -> dict[str, int | bool]:
    """The fields `attr` sets, read back (for fakes and tests)."""
    type_, size, config, _, _, read_format, flags = struct.unpack_from("=IIQQQQQ", data, 0)
    config1, config2 = struct.unpack_from("=QQ", data, 56)
    return {"type": type_, "size": size, "config": config, "config1": config1, "config2": config2,
            "read_format": read_format, "disabled": bool(flags & _FLAG_DISABLED),
            "inherit": bool(flags & _FLAG_INHERIT), "exclude_kernel": bool(flags & _FLAG_EXCLUDE_KERNEL)}


def read_size(members: int) -> int:
    return 8 * (3 + members)


def pack_group(read: GroupRead) -> bytes:
    """The bytes a group read returns (the inverse of `parse_group`, for fakes)."""
    return struct.pack(f"=QQQ{len(read.values)}Q", len(read.values), read.enabled_ns, read.running_ns, *read.values)


def parse_group(data: bytes, members: int) -> GroupRead:
    if len(data) < read_size(members):
        raise OSError(errno.EIO, f"short read of a perf event group: {len(data)} bytes for {members} events")
    nr, enabled, running = struct.unpack_from("=QQQ", data, 0)
    if nr != members:
        raise OSError(errno.EIO, f"a perf event group read {nr} values, {members} were opened")
    return GroupRead(enabled, running, struct.unpack_from(f"={nr}Q", data, 24))


class LinuxKernel:
    """The real calls: the syscall through libc's `syscall()`, the rest through os and fcntl."""

    def __init__(self, number: int):
        libc = ctypes.CDLL(None, use_errno=True)
        self._syscall = libc.syscall
        self._syscall.restype = ctypes.c_long
        self._syscall.argtypes = [ctypes.c_long, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_ulong]
        self._number = number

    @classmethod
    def for_this_machine(cls) -> LinuxKernel:
        """The kernel of this machine; OSError(ENOSYS) naming the architecture when the call is unknown here."""
        machine = platform.machine().lower()
        if machine not in SYSCALL_NUMBERS:
            raise OSError(errno.ENOSYS, f"no perf_event_open number known for {machine}")
        return cls(SYSCALL_NUMBERS[machine])

    def open(self, attr: bytes, pid: int, cpu: int, group_fd: int) -> int:
        fd = self._syscall(self._number, attr, pid, cpu, group_fd, 0)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return int(fd)

    def ioctl(self, fd: int, request: int, arg: int) -> None:
        import fcntl

        fcntl.ioctl(fd, request, arg)

    def read(self, fd: int, size: int) -> bytes:
        return os.read(fd, size)

    def close(self, fd: int) -> None:
        os.close(fd)
