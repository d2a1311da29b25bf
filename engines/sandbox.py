"""Confine a worker that loads a user's model file: it may write only in its own temporary folder, and open no TCP.

Why: a model file can be code (a TorchScript module's `forward` or `__setstate__` can call
`torch.from_file(path, shared=True, size=N)`, which creates and writes files), and refusing what looks dangerous
is never complete. So the worker gives up, before it opens the file, the right to change the filesystem anywhere
but its own folder and to use TCP. On Linux this is Landlock (kernel ≥ 5.13), applied by raw syscalls through
ctypes: no privileges needed, irrevocable, inherited by every thread and process started after it.

Covered (Landlock ABI): creating, writing, truncating (ABI ≥ 3), renaming and linking (ABI ≥ 2), removing files,
folders, devices, pipes, sockets and symlinks outside the folder and the device files a GPU needs (written to, never
created); TCP bind and connect (ABI ≥ 4); abstract Unix sockets and signals to processes outside the sandbox
(ABI ≥ 6). Not covered: reading (the model may read whatever the user can), UDP and other non-TCP sockets,
connecting to a Unix socket file, descriptors opened before (the console's pipe, stdout), ioctls on devices,
threads that already ran before `confine` (the state says how many), and CPU, memory or disk used inside the
folder. Where the OS offers no Landlock (macOS, Windows, an old or locked-down kernel), nothing is applied and the
state says why. Standard library only: the console imports `available` to word its question.
"""

from __future__ import annotations

import ctypes
import errno
import glob
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

# Syscall numbers: the same on every architecture that has them (added after the unified syscall table).
_SYSCALLS = {"create_ruleset": 444, "add_rule": 445, "restrict_self": 446}
_ARCHES = ("x86_64", "amd64", "aarch64", "arm64", "riscv64", "ppc64le", "s390x", "loongarch64")
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights (include/uapi/linux/landlock.h). Reading and executing are never handled, so stay allowed.
_WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE, _MAKE_CHAR, _MAKE_DIR = 1 << 1, 1 << 4, 1 << 5, 1 << 6, 1 << 7
_MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_CHANGES = (_WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR | _MAKE_DIR | _MAKE_REG | _MAKE_SOCK | _MAKE_FIFO
            | _MAKE_BLOCK | _MAKE_SYM)
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

# Device files a worker writes to without creating them: the bit bucket, and GPUs (CUDA opens /dev/nvidia*
# read-write; ROCm /dev/kfd and /dev/dri/*).
DEVICE_PATTERNS = ("/dev/null", "/dev/zero", "/dev/full", "/dev/nvidia*", "/dev/nvidia-caps", "/dev/kfd",
                   "/dev/dri")
WORK_PREFIX = "labconsole-worker-"
DENIED = "stopped by the sandbox"


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


# ---- Public API
def available() -> tuple[int | None, str]:
    """(Landlock ABI version, "") where this process could be confined; (None, why not) elsewhere."""
    if not sys.platform.startswith("linux"):
        return None, f"no Landlock on {sys.platform}"
    if platform.machine().lower() not in _ARCHES:
        return None, f"Landlock syscall numbers not known for {platform.machine()}"
    try:
        libc = _libc()
    except OSError as exc:
        return None, f"libc not loadable ({exc})"
    abi = libc.syscall(ctypes.c_long(_SYSCALLS["create_ruleset"]), None, ctypes.c_size_t(0),
                       ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if abi < 0:
        code = ctypes.get_errno()
        why = {errno.ENOSYS: "the kernel has no Landlock (Linux ≥ 5.13 with CONFIG_SECURITY_LANDLOCK)",
               errno.EOPNOTSUPP: "Landlock is built in but disabled (add landlock to the lsm= boot parameter)"}
        return None, why.get(code, f"landlock_create_ruleset failed: {os.strerror(code)}")
    return int(abi), ""


def work_dir() -> Path:
    """A fresh folder for the worker's own files, made the default temporary folder of this process (and of
    torch.compile's caches), so profile traces and anything else that asks for a temp file land inside it."""
    folder = Path(tempfile.mkdtemp(prefix=WORK_PREFIX))
    tempfile.tempdir = str(folder)
    os.environ.update({"TMPDIR": str(folder), "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"),
                       "TRITON_CACHE_DIR": str(folder / "triton")})
    return folder


def confine(folder: Path, also_writable: list[Path] | tuple[Path, ...] = ()) -> dict[str, Any]:
    """Apply the sandbox to this process: filesystem changes only under `folder` (and `also_writable`), the GPU
    device files written to, no TCP. Returns the state stored with the run: {active, summary, dir, abi}."""
    state: dict[str, Any] = {"active": False, "dir": str(folder), "abi": None}
    abi, why = available()
    if abi is None:
        return {**state, "summary": f"not available ({why})"}
    libc = _libc()
    handled = _CHANGES | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    attr = _RulesetAttr(handled, (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0,
                        (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = libc.syscall(ctypes.c_long(_SYSCALLS["create_ruleset"]), ctypes.byref(attr), ctypes.c_size_t(size),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        return {**state, "summary": f"not available (landlock_create_ruleset: {os.strerror(ctypes.get_errno())})"}
    try:
        for path in (folder, *also_writable):
            _allow(libc, ruleset, Path(path), handled)
        for pattern in DEVICE_PATTERNS:
            for device in glob.glob(pattern):
                try:
                    _allow(libc, ruleset, Path(device), handled & (_WRITE_FILE | _TRUNCATE))
                except OSError:
                    continue  # a device that vanished or refuses a rule stays unwritable: safe, maybe unusable
        threads = _threads()
        zero = ctypes.c_ulong(0)
        if libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), zero, zero, zero) != 0:
            return {**state, "summary": f"not applied (no_new_privs: {os.strerror(ctypes.get_errno())})"}
        if libc.syscall(ctypes.c_long(_SYSCALLS["restrict_self"]), ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            return {**state, "summary": f"not applied (landlock_restrict_self: {os.strerror(ctypes.get_errno())})"}
    except OSError as exc:
        return {**state, "summary": f"not applied ({exc})"}
    finally:
        os.close(ruleset)
    parts = [f"landlock ABI {abi}: writes only under {folder}" + (f" and {', '.join(map(str, also_writable))}"
                                                                   if also_writable else "")]
    parts.append("TCP denied" if abi >= 4 else "TCP allowed (Landlock ABI < 4 has no network rules)")
    if threads > 1:
        parts.append(f"{threads - 1} thread(s) started before it are not confined")
    return {**state, "active": True, "abi": abi, "summary": ", ".join(parts)}


def explain_denial(exc: BaseException, state: dict[str, Any] | None) -> str:
    """For an error inside an active sandbox that was a denial: what the model tried and why it failed (the
    library's line that says "Permission denied"); "" for any other error."""
    if not (state or {}).get("active") or any(_unreadable(e) for e in _chain(exc)):
        return ""  # the sandbox never blocks reading: a file this user cannot read is not its doing
    text = "\n".join(str(e) for e in _chain(exc))
    lines = [line.strip() for line in text.splitlines()
             if "Permission denied" in line or "Operation not permitted" in line]
    if not lines and not any(isinstance(e, PermissionError) for e in _chain(exc)):
        return ""
    what = lines[0][:300] if lines else f"{type(exc).__name__}"
    return (f"{DENIED}: it tried to write outside the worker's own folder {state['dir']} or to open a network "
            f"connection, which a model file may not do ({what}); the write was refused. Fix: run only models that "
            "compute; a model that must write files or use the network cannot be measured here")


def remove_work_dir(state: dict[str, Any] | None) -> None:
    """Delete a finished worker's folder (called by the process that started it, once the worker is gone)."""
    folder = Path((state or {}).get("dir") or "")
    made_by_work_dir = folder.name.startswith(WORK_PREFIX) and folder.parent == Path(tempfile.gettempdir())
    if made_by_work_dir and folder.is_dir() and not folder.is_symlink():
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


# ---- Private API
def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _allow(libc, ruleset: int, path: Path, access: int) -> None:
    """Grant `access` beneath `path` (a folder) or on it (a file: only rights that apply to files)."""
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not path.is_dir():
            access &= _WRITE_FILE | _TRUNCATE
        rule = _PathBeneathAttr(access, fd)
        if libc.syscall(ctypes.c_long(_SYSCALLS["add_rule"]), ctypes.c_int(ruleset),
                        ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)


def _unreadable(exc: BaseException) -> bool:
    name = getattr(exc, "filename", None) if isinstance(exc, PermissionError) else None
    return bool(name) and os.path.exists(name) and not os.access(name, os.R_OK)


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _chain(exc: BaseException):
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__
