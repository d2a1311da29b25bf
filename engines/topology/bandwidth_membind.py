"""Placing a buffer's pages on one NUMA node and checking where they landed, for the host-memory bandwidth matrix.

Why syscalls through ctypes: Python has no binding for set_mempolicy/move_pages and libnuma may not be installed;
the kernel's calls are stable and small. The buffer is allocated and first touched by a helper thread that is
pinned to the node's CPUs (os.sched_setaffinity) and, where the kernel allows, runs under set_mempolicy(MPOL_BIND)
to that node — a thread's memory policy dies with it, so the caller's own policy never changes. Where
set_mempolicy is refused (no NUMA support, seccomp), first touch from the pinned thread is what places the pages,
and `how` says so. Either way `pages_on_node` asks the kernel (move_pages with no target nodes: a query) where a
sample of the pages actually is, so the entry states a checked placement, not an intended one.

Linux only; elsewhere every function reports why it cannot.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform
import threading
from typing import Any

MPOL_DEFAULT, MPOL_BIND = 0, 2
_SYSCALLS = {  # (set_mempolicy, move_pages) per architecture: asm/unistd_64.h and asm-generic/unistd.h
    "x86_64": (238, 279),
    "aarch64": (237, 239),
    "ppc64le": (261, 301),
}
SAMPLE_PAGES = 64


# ---- Public API
def allocate_on_node(size: int, node: int, cpus: list[int]) -> tuple[mmap.mmap, str]:
    """An anonymous mapping of `size` bytes whose pages were first touched on `node`: (buffer, how).

    Anonymous mmap gives fresh pages (malloc could hand back pages already touched elsewhere)."""
    result: dict[str, Any] = {}

    def place() -> None:
        try:
            pinned = pin_thread(cpus)
            bound, why = set_thread_policy(MPOL_BIND, node)
            buffer = mmap.mmap(-1, size)
            page = mmap.PAGESIZE
            for offset in range(0, size, page):  # first touch, one byte per page, on this thread
                buffer[offset] = 1
            result["buffer"] = buffer
            parts = [f"first touch from a thread pinned to node {node}'s CPUs" if pinned else
                     "first touch (could not pin the allocating thread)"]
            parts.append(f"set_mempolicy(MPOL_BIND, node {node})" if bound else f"no set_mempolicy ({why})")
            result["how"] = ", ".join(parts)
        except BaseException as exc:  # noqa: BLE001 — re-raised on the caller's thread
            result["error"] = exc

    helper = threading.Thread(target=place, name=f"labconsole-membind-{node}")
    helper.start()
    helper.join()
    if "error" in result:
        raise result["error"]
    return result["buffer"], result["how"]


def set_thread_policy(mode: int, node: int | None) -> tuple[bool, str]:
    """set_mempolicy for the calling thread: (done, why not)."""
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        return False, f"no syscall numbers known for {platform.machine()}"
    libc = _libc()
    if libc is None:
        return False, "libc not found"
    if node is None:
        mask, maxnode = None, 0
    else:
        mask = (ctypes.c_ulong * (node // 64 + 1))()
        mask[node // 64] = 1 << (node % 64)
        maxnode = (node // 64 + 1) * 64 + 1
    rc = libc.syscall(ctypes.c_long(numbers[0]), ctypes.c_int(mode), mask, ctypes.c_ulong(maxnode))
    if rc != 0:
        err = ctypes.get_errno()
        return False, f"set_mempolicy refused: {os.strerror(err)}"
    return True, ""


def pages_on_node(buffer: mmap.mmap, node: int, sample: int = SAMPLE_PAGES) -> tuple[float | None, str]:
    """The share of `sample` evenly spaced pages of `buffer` the kernel reports on `node`: (share, why None)."""
    numbers = _SYSCALLS.get(platform.machine())
    libc = _libc()
    if numbers is None or libc is None:
        return None, f"cannot ask the kernel where pages are on {platform.machine()} (no move_pages)"
    page = mmap.PAGESIZE
    pages = max(1, len(buffer) // page)
    count = min(sample, pages)
    base = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    step = max(1, pages // count)
    addresses = (ctypes.c_void_p * count)(*[base + i * step * page for i in range(count)])
    status = (ctypes.c_int * count)()
    rc = libc.syscall(ctypes.c_long(numbers[1]), ctypes.c_int(0), ctypes.c_ulong(count), addresses, None, status,
                      ctypes.c_int(0))
    if rc != 0:
        return None, f"move_pages query refused: {os.strerror(ctypes.get_errno())}"
    placed = [value for value in status if value >= 0]
    if not placed:
        return None, "move_pages reported no page as present"
    return sum(1 for value in placed if value == node) / len(placed), ""


def pin_thread(cpus: list[int]) -> bool:
    """Pin the calling thread to `cpus`; False when the OS cannot."""
    setter = getattr(os, "sched_setaffinity", None)
    if setter is None or not cpus:
        return False
    try:
        setter(0, cpus)  # pid 0 = the calling thread on Linux
    except OSError:
        return False
    return True


# ---- Private API
_LIBC: list[Any] = []


def _libc() -> Any:
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        except OSError:
            _LIBC.append(None)
        else:
            _LIBC[0].syscall.restype = ctypes.c_long
    return _LIBC[0]
