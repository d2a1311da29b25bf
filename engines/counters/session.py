"""Counter groups opened on every thread of this process, started and stopped together, read and summed.

Why per thread: perf counts a task, and `pid=0` would be the calling thread only, while the work runs on the
engines' thread pools, which exist before the profile starts. So each group is opened on each thread listed in
/proc/self/task, with `inherit` for threads started during the block (their counts fold into their parent's).

Why groups: the events of a group count over exactly the same intervals, so IPC and miss rates are ratios of
like with like even when the kernel multiplexes (then each group's counts are scaled by enabled ÷ running time,
and the session reports the fraction of time it really counted).
"""

from __future__ import annotations

import errno
from dataclasses import dataclass, field

from engines.counters import kernel as k
from engines.counters.kernel import Event, Kernel


@dataclass(frozen=True)
class Group:
    name: str
    events: tuple[Event, ...]


@dataclass
class Counts:
    """What a session counted: summed (and scaled) values by event name, and what it could not count."""

    values: dict[str, float] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # group name → why it was not counted
    counted_fraction: dict[str, float] = field(default_factory=dict)  # group → running ÷ enabled time
    threads: int = 0


class OpenError(Exception):
    """The first group could not be opened at all: nothing to count. Carries the OSError that said why."""

    def __init__(self, group: str, error: OSError):
        super().__init__(f"{group}: {error}")
        self.group, self.error = group, error


class Session:
    """Open with `open()`, then `start()` and `stop()` around the work; `stop()` returns the Counts.

    The first group is required (OpenError if it cannot be opened on any thread); later groups that fail are
    recorded in Counts.missing, so a PMU that lacks some events still gives the others.
    """

    def __init__(self, kernel: Kernel, groups: list[Group], tids: list[int], exclude_kernel: bool):
        self._kernel, self._groups, self._tids, self._exclude_kernel = kernel, groups, tids, exclude_kernel
        self._leaders: dict[str, list[int]] = {}
        self._fds: list[int] = []
        self._missing: dict[str, str] = {}

    # ---- Public API
    def open(self) -> None:
        for index, group in enumerate(self._groups):
            try:
                self._leaders[group.name] = self._open_group(group)
            except OSError as exc:
                if index == 0:
                    self.close()
                    raise OpenError(group.name, exc) from exc
                self._missing[group.name] = describe(exc)

    def start(self) -> None:
        for leaders in self._leaders.values():
            for fd in leaders:
                self._kernel.ioctl(fd, k.IOC_RESET, k.IOC_FLAG_GROUP)
                self._kernel.ioctl(fd, k.IOC_ENABLE, k.IOC_FLAG_GROUP)

    def stop(self) -> Counts:
        """Stop every group, read it, and close everything (the session is spent)."""
        try:
            for leaders in self._leaders.values():
                for fd in leaders:
                    self._kernel.ioctl(fd, k.IOC_DISABLE, k.IOC_FLAG_GROUP)
            counts = Counts(missing=dict(self._missing), threads=len(self._tids))
            for group in self._groups:
                if group.name in self._leaders:
                    self._read_group(group, self._leaders[group.name], counts)
            return counts
        finally:
            self.close()

    def close(self) -> None:
        for fd in self._fds:
            try:
                self._kernel.close(fd)
            except OSError:
                pass
        self._fds.clear()
        self._leaders.clear()

    # ---- Private API
    def _open_group(self, group: Group) -> list[int]:
        """The group on every thread; a thread that ended meanwhile (ESRCH) is skipped. Any other failure closes
        what this group opened and raises."""
        opened: list[int] = []
        leaders: list[int] = []
        try:
            for tid in self._tids:
                try:
                    leader = self._kernel.open(k.attr(group.events[0], True, self._exclude_kernel), tid, -1, -1)
                except OSError as exc:
                    if exc.errno == errno.ESRCH:
                        continue
                    raise
                opened.append(leader)
                for event in group.events[1:]:
                    opened.append(self._kernel.open(k.attr(event, False, self._exclude_kernel), tid, -1, leader))
                leaders.append(leader)
        except OSError:
            for fd in opened:
                try:
                    self._kernel.close(fd)
                except OSError:
                    pass
            raise
        if not leaders:
            raise OSError(errno.ESRCH, "every thread of the process ended before its counters were opened")
        self._fds.extend(opened)
        return leaders

    def _read_group(self, group: Group, leaders: list[int], counts: Counts) -> None:
        members = len(group.events)
        totals = [0.0] * members
        enabled = running = 0
        for fd in leaders:
            try:
                read = k.parse_group(self._kernel.read(fd, k.read_size(members)), members)
            except OSError as exc:
                counts.missing[group.name] = f"read failed ({describe(exc)})"
                return
            enabled += read.enabled_ns
            running += read.running_ns
            if read.running_ns:  # scaled for the time the group waited its turn on the counters
                factor = read.enabled_ns / read.running_ns
                for i, value in enumerate(read.values):
                    totals[i] += value * factor
        if not running:
            counts.missing[group.name] = ("never counted: the PMU had no room for this group while the work ran "
                                          "(other counters in use, e.g. the NMI watchdog)" if enabled else
                                          "never counted: no thread ran while the counters were enabled")
            return
        counts.counted_fraction[group.name] = running / enabled if enabled else 1.0
        for event, total in zip(group.events, totals, strict=True):
            counts.values[event.name] = total * event.scale


def describe(error: OSError) -> str:
    """errno's name and text, e.g. "ENOENT: No such file or directory"."""
    name = errno.errorcode.get(error.errno or 0, "error")
    return f"{name}: {error.strerror or error}"
