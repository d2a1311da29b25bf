"""Was a worker killed for memory? The kernel's OOM-kill counters, read before the run and after the death.

Why: a worker the OOM killer (or a memory cgroup's limit) ends dies of SIGKILL like one a user kills, and the
kernel log that says which is usually unreadable (dmesg needs privileges). The counters are readable: cgroup v2's
`memory.events` (`oom_kill`, counting this cgroup and its children, which the spawned worker is one of) and
`/proc/vmstat` (`oom_kill`, system-wide). A SIGKILL while one of them rose is reported as out of memory, with the
limit that applied (`memory.max` of this cgroup or the nearest ancestor that sets one, else the RAM) and the
worker's peak RSS (VmHWM, followed while it lived, since a dead process's /proc entry is gone).
"""

from __future__ import annotations

import signal
from pathlib import Path

__all__ = ["MemoryWatch", "format_bytes"]


class MemoryWatch:
    """`start()` before the worker starts, `follow(pid)` while it runs, `diagnose(exitcode)` once it died."""

    # ---- Public API
    def __init__(self, cgroup_root: str | Path = "/sys/fs/cgroup", proc_root: str | Path = "/proc"):
        self.cgroup_root, self.proc_root = Path(cgroup_root), Path(proc_root)
        self.cgroup = self._own_cgroup()  # the cgroup v2 directory, or None (cgroup v1, not Linux)
        self._before: dict[str, int] = {}
        self.peak_rss: int | None = None

    def start(self) -> None:
        self._before = self.oom_kills()

    def follow(self, pid: int | None) -> None:
        """Keep the worker's peak RSS (its high-water mark) up to date; cheap enough to call every poll."""
        if pid is None:
            return
        try:
            text = (self.proc_root / str(pid) / "status").read_text()
        except OSError:
            return
        for line in text.splitlines():
            if line.startswith("VmHWM:"):
                value = _kib(line)
                if value is not None:
                    self.peak_rss = max(self.peak_rss or 0, value)
                return

    def oom_kills(self) -> dict[str, int]:
        """{where: OOM kills so far} for this console's memory cgroup and the whole system, where readable."""
        found: dict[str, int] = {}
        if self.cgroup is not None:
            count = _counter(self.cgroup / "memory.events", "oom_kill")
            if count is not None:
                found["cgroup"] = count
        count = _counter(self.proc_root / "vmstat", "oom_kill")
        if count is not None:
            found["system"] = count
        return found

    def diagnose(self, exitcode: int | None, during: str) -> str | None:
        """The out-of-memory message for a SIGKILL'd worker when an OOM counter rose since `start()`, else None."""
        if exitcode != -signal.SIGKILL:
            return None
        after = self.oom_kills()
        rose = [where for where, count in after.items() if count > self._before.get(where, count)]
        if not rose:
            return None
        limit, where = self.memory_limit()
        peak = f"its peak RSS was {format_bytes(self.peak_rss)}" if self.peak_rss else "its peak RSS was not read"
        counter = "memory cgroup's" if "cgroup" in rose else "system's"
        return (f"worker ran out of memory during {during}: the kernel's OOM killer ended it (SIGKILL; the "
                f"{counter} oom_kill count rose from {self._before[rose[0]]} to {after[rose[0]]}). The limit is "
                f"{format_bytes(limit) if limit else 'unknown'} ({where}); {peak}. Fix: a smaller --batch or "
                "model, a lower precision, or more memory for this console (raise the limit or close other programs)")

    def ruled_out(self) -> bool:
        """True when the counters are readable and none rose: a SIGKILL then came from someone, not memory."""
        after = self.oom_kills()
        return bool(after) and all(count <= self._before.get(where, count) for where, count in after.items())

    def memory_limit(self) -> tuple[int | None, str]:
        """(bytes, where it is set): the tightest memory.max from this cgroup up to the root, else the RAM."""
        tightest: tuple[int, Path] | None = None
        directory = self.cgroup
        while directory is not None:
            try:
                text = (directory / "memory.max").read_text().strip()
            except OSError:
                text = ""
            if text.isdigit() and (tightest is None or int(text) < tightest[0]):
                tightest = (int(text), directory)
            if directory == self.cgroup_root or directory.parent == directory:
                break
            directory = directory.parent
        if tightest is not None:
            return tightest[0], f"memory.max of {tightest[1]}"
        total = _counter(self.proc_root / "meminfo", "MemTotal:")
        return (total * 1024 if total is not None else None), "this machine's RAM, no cgroup limit"

    # ---- Private API
    def _own_cgroup(self) -> Path | None:
        """/sys/fs/cgroup/<path> from the cgroup v2 line ("0::/path") of /proc/self/cgroup."""
        try:
            lines = (self.proc_root / "self" / "cgroup").read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            if line.startswith("0::"):
                directory = self.cgroup_root / line[3:].strip().lstrip("/")
                return directory if directory.is_dir() else None
        return None


def format_bytes(count: int | None) -> str:
    if count is None:
        return "unknown"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def _counter(path: Path, name: str) -> int | None:
    """The number after `name` on its line of a "key value" file (memory.events, vmstat, meminfo)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == name and parts[1].isdigit():
            return int(parts[1])
    return None


def _kib(line: str) -> int | None:
    """Bytes from a /proc status line such as "VmHWM:   123456 kB"."""
    parts = line.split()
    return int(parts[1]) * 1024 if len(parts) >= 2 and parts[1].isdigit() else None
