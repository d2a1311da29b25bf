"""What the kernel says about perf events on this machine: the paranoia setting, the worker's threads and
privileges, the PMUs it lists, and the top-down events of the CPU's PMU with their encodings.

Why read the top-down events from sysfs: the kernel publishes, for the CPU model it runs on, which top-down
events the PMU has and how to encode them (/sys/bus/event_source/devices/cpu/events/topdown-*, with format/
saying which config bits each term fills). Hard-coding raw Intel codes would be right on one generation and
wrong on the next; AMD and most Arm cores list none, and then there is no breakdown (None, with why).

Every path is under `root`, so tests hand in a fake tree (tmp_path) with the same layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engines.counters.kernel import Event

DEVICES = "sys/bus/event_source/devices"
CPU_PMUS = ("cpu", "cpu_core")  # cpu_core: the performance cores of a hybrid Intel CPU
CAP_SYS_ADMIN, CAP_PERFMON = 21, 38
# Top-down level 1 on Ice Lake and later (perf metrics, "slots" leads) and level 2's memory-bound where listed.
SLOTS_EVENTS = ("slots", "topdown-retiring", "topdown-bad-spec", "topdown-fe-bound", "topdown-be-bound")
SLOTS_OPTIONAL = ("topdown-mem-bound",)
# Top-down level 1 on Skylake to Cascade Lake (generic counters, the formulas of perf stat --topdown).
LEGACY_EVENTS = ("topdown-total-slots", "topdown-slots-issued", "topdown-slots-retired", "topdown-fetch-bubbles",
                 "topdown-recovery-bubbles")


@dataclass(frozen=True)
class Topdown:
    """The top-down events this PMU lists: `style` "slots" or "legacy", the events in group order."""

    style: str
    pmu: str
    events: tuple[Event, ...]


class EncodingError(ValueError):
    """An event string uses a term the PMU's format/ does not describe."""


# ---- Public API
def paranoid(root: Path) -> int | None:
    """kernel.perf_event_paranoid, or None when the kernel has no perf events at all (no such file)."""
    try:
        return int((root / "proc/sys/kernel/perf_event_paranoid").read_text().strip())
    except (OSError, ValueError):
        return None


def privileged(root: Path) -> bool:
    """Whether this process may ignore the paranoia setting: CAP_PERFMON or CAP_SYS_ADMIN in its effective set."""
    try:
        for line in (root / "proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                caps = int(line.split()[1], 16)
                return bool(caps & (1 << CAP_PERFMON) or caps & (1 << CAP_SYS_ADMIN))
    except (OSError, ValueError, IndexError):
        pass
    return False


def threads(root: Path) -> list[int]:
    """The ids of this process's threads (torch's and ONNX Runtime's workers among them)."""
    try:
        return sorted(int(p.name) for p in (root / "proc/self/task").iterdir() if p.name.isdigit())
    except OSError:
        return []


def pmus(root: Path) -> list[str]:
    """The PMUs the kernel lists (software, tracepoint… and, where the CPU's is exposed, cpu or cpu_core)."""
    try:
        return sorted(p.name for p in (root / DEVICES).iterdir())
    except OSError:
        return []


def smt_active(root: Path) -> bool:
    try:
        return (root / "sys/devices/system/cpu/smt/active").read_text().strip() == "1"
    except OSError:
        return False


def topdown(root: Path) -> tuple[Topdown | None, str]:
    """The CPU PMU's top-down events, encoded; or None and why there are none."""
    for pmu in CPU_PMUS:
        base = root / DEVICES / pmu
        if not (base / "events").is_dir():
            continue
        listed = {p.name for p in (base / "events").iterdir()}
        if set(SLOTS_EVENTS) <= listed:
            names, style = SLOTS_EVENTS + tuple(n for n in SLOTS_OPTIONAL if n in listed), "slots"
        elif set(LEGACY_EVENTS) <= listed:
            names, style = LEGACY_EVENTS, "legacy"
        else:
            return None, f"the {pmu} PMU lists no top-down events in sysfs (AMD, Arm and Intel before Skylake " \
                         "publish none)"
        try:
            pmu_type = int((base / "type").read_text().strip())
            events = tuple(_event(base, pmu_type, name) for name in names)
        except (OSError, ValueError) as exc:
            return None, f"the {pmu} PMU's top-down events could not be encoded ({exc})"
        return Topdown(style, pmu, events), ""
    return None, "no CPU PMU in sysfs (" + (", ".join(pmus(root)) or "none listed") + ")"


def encode(terms: str, formats: dict[str, str]) -> tuple[int, int, int]:
    """(config, config1, config2) for an event string such as "event=0x00,umask=0x80" under the PMU's format/.

    A format is "config:0-7" or "config1:0-7,32-35": the value's bits fill the ranges in order, low bits first.
    A term without a value (e.g. "edge") means 1.
    """
    fields = {"config": 0, "config1": 0, "config2": 0}
    for term in filter(None, (t.strip() for t in terms.strip().split(","))):
        name, _, text = term.partition("=")
        if name not in formats:
            raise EncodingError(f"term {name!r} has no format in sysfs")
        value = int(text, 0) if text else 1
        field, _, ranges = formats[name].strip().partition(":")
        if field not in fields:
            raise EncodingError(f"term {name!r} fills {field!r}, which perf_event_attr here does not carry")
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            low_bit, high_bit = int(low), int(high or low)
            width = high_bit - low_bit + 1
            fields[field] |= (value & ((1 << width) - 1)) << low_bit
            value >>= width
    return fields["config"], fields["config1"], fields["config2"]


# ---- Private API
def _event(base: Path, pmu_type: int, name: str) -> Event:
    formats = {p.name: p.read_text() for p in (base / "format").iterdir()} if (base / "format").is_dir() else {}
    config, config1, config2 = encode((base / "events" / name).read_text(), formats)
    scale_file = base / "events" / f"{name}.scale"
    scale = float(scale_file.read_text().strip()) if scale_file.is_file() else 1.0
    return Event(name, pmu_type, config, config1, config2, scale)
