"""Run hygiene: what else the machine was doing when a run started, and the settings that move latency.

`collect()` reads, without changing anything: the CPU frequency governor and current/min/max frequency
(where /sys exposes cpufreq; many VMs and containers do not, and the result says so), the load average,
the busiest *other* processes over a short sample (psutil; this process and its children excluded, plus
any pids the caller names), and the thread-count environment variables (OMP, MKL, OpenBLAS, KMP/GOMP
affinity). `busy` is true, with a warning text, when other processes used more than 20% of a core in
total during the sample or the 1-minute load average exceeded half the usable CPUs.

Everything returned is plain data (str, int, float, bool, None, list, dict), ready for a protocol event,
JSON or the history. `root` moves /sys and /proc (tests point it at a tmp_path tree); `processes`
replaces the psutil sample (tests and callers that have one already).
"""

from __future__ import annotations

import glob
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
                    "KMP_AFFINITY", "GOMP_CPU_AFFINITY")
BUSY_CPU_PERCENT = 20.0  # other processes together above this share of one core
BUSY_LOAD_PER_CPU = 0.5  # 1-minute load average above this × usable CPUs
TOP = 5
SAMPLE_S = 0.2
SHORTEST_SAMPLE_S = 0.05  # a sample ended early still spans five clock ticks: CPU shares over less are noise
STEADY_GOVERNORS = ("performance",)


# ---- Public API
class Sampling:
    """A process sample under way: the first psutil pass is taken now; `collect(sampling=…)` waits out the rest of
    `sample_s` and takes the second. So a worker can load its model in between instead of waiting (this process and
    its children are excluded: the loading is not counted). When the work in between takes longer, the sample
    covers all of it, and the record says over how long."""

    def __init__(self, sample_s: float = SAMPLE_S, exclude_pids: Iterable[int] = (),
                 ended: threading.Event | None = None):
        self.sample_s = sample_s
        self.excluded = _family(os.getpid()) | set(exclude_pids)
        self._ended = ended or threading.Event()
        self._started = time.monotonic()
        self._watched = _first_pass(self.excluded)

    def others(self) -> tuple[list[dict[str, Any]], float]:
        """(other processes that used CPU, the seconds the sample covered). Ended early (`ended` set), it still
        covers SHORTEST_SAMPLE_S."""
        remaining = self.sample_s - (time.monotonic() - self._started)
        if remaining > 0 and self._ended.wait(remaining):
            time.sleep(max(0.0, SHORTEST_SAMPLE_S - (time.monotonic() - self._started)))
        return _second_pass(self._watched), time.monotonic() - self._started


class InBackground:
    """The hygiene record taken on its own thread, begun now: the run loads and starts while the process sample
    runs out its `sample_s`, instead of waiting for it (the warm start's first iteration came 0.2 s later for it).
    `done()` says whether the record is there; `result()` waits for it (None when taking it failed); `end()` asks
    for the second pass now (a run with no warm-up to hide it in takes it at the load's end, not on a measured
    iteration, and does not wait out the rest of `sample_s` for it: the record says how long it covered)."""

    def __init__(self, sample_s: float | None = None, exclude_pids: Iterable[int] = ()):
        sample_s = SAMPLE_S if sample_s is None else sample_s
        self._ended = threading.Event()
        self._record: dict[str, Any] | None = None
        self.failure: str | None = None
        self._thread = threading.Thread(target=self._collect, args=(sample_s, tuple(exclude_pids)), name="hygiene",
                                        daemon=True)
        self._thread.start()

    def done(self) -> bool:
        return not self._thread.is_alive()

    def end(self) -> None:
        self._ended.set()

    def result(self, timeout: float | None = None) -> dict[str, Any] | None:
        self._thread.join(timeout)
        return self._record

    def _collect(self, sample_s: float, exclude_pids: tuple[int, ...]) -> None:
        try:
            self._record = collect(sampling=Sampling(sample_s, exclude_pids, self._ended))
        except Exception as exc:  # noqa: BLE001 — psutil refused, /proc unreadable: the run goes on without it
            self.failure = f"{type(exc).__name__}: {exc}"


def collect(root: str = "/", sample_s: float = SAMPLE_S, exclude_pids: Iterable[int] = (),
            environ: dict[str, str] | None = None, cpu_count: int | None = None,
            processes: Callable[[float, set[int]], list[dict[str, Any]]] | None = None,
            sampling: Sampling | None = None) -> dict[str, Any]:
    """The hygiene record of this machine now (takes about `sample_s` seconds, for the process sample; less with a
    `sampling` begun earlier)."""
    environ = dict(os.environ) if environ is None else environ
    cpus = cpu_count or _usable_cpus()
    # The load average counts the whole machine (the console on its reserved cores too): judge it against the
    # machine's CPUs, not a partitioned worker's few (console.run.partition).
    machine_cpus = cpu_count or max(cpus, os.cpu_count() or 1)
    if sampling is not None:
        excluded = sampling.excluded
        found, sample_s = sampling.others()
        sample_s = round(sample_s, 3)
    else:
        excluded = _family(os.getpid()) | set(exclude_pids)
        found = (processes or _busiest)(sample_s, excluded)
    others = sorted((p for p in found if p["pid"] not in excluded), key=lambda p: -p["cpu_percent"])
    other_percent = round(sum(p["cpu_percent"] for p in others), 1)
    top = others[:TOP]
    load = _load_average(root)
    frequency = cpu_frequency(root)
    threads = {name: environ.get(name) for name in THREAD_VARIABLES}
    reasons: list[str] = []
    if other_percent > BUSY_CPU_PERCENT:
        names = ", ".join(f"{p['name']} (pid {p['pid']}) {p['cpu_percent']:.0f}%" for p in top[:3])
        short = (f" over only {sample_s:.2f} s (the sample ended with a quick load: a rough share)"
                 if sample_s < SAMPLE_S else "")
        reasons.append(f"other processes used {other_percent:.0f}% of a core{short}: {names}")
    if load is not None and load[0] > BUSY_LOAD_PER_CPU * machine_cpus:
        reasons.append(f"load average {load[0]:.2f} on {machine_cpus} CPU{'s' if machine_cpus != 1 else ''}")
    warnings: list[str] = []
    if reasons:
        warnings.append("the machine was busy when the run started — " + "; ".join(reasons) +
                        ". Latency may be higher and noisier than on a quiet machine: close them or rerun.")
    governors = frequency["governors"]
    unsteady = sorted(g for g in governors if g not in STEADY_GOVERNORS)
    if unsteady:
        warnings.append(f"CPU frequency governor {', '.join(unsteady)}: the clock follows the load, so short runs "
                        "and the first iterations may run slower (the performance governor holds it steady)")
    oversubscribed = _oversubscribed(threads, cpus)
    if oversubscribed:
        warnings.append(oversubscribed)
    return {
        "busy": bool(reasons),
        "warning": warnings[0] if reasons else None,
        "warnings": warnings,
        "cpus": cpus,
        "load_average": list(load) if load is not None else None,
        "other_cpu_percent": other_percent,
        "processes": top,
        "sample_s": sample_s,
        "cpu_frequency": frequency,
        "threads": threads,
        "thresholds": {"other_cpu_percent": BUSY_CPU_PERCENT, "load_per_cpu": BUSY_LOAD_PER_CPU},
        "method": f"psutil cpu_percent over {sample_s:g} s (this process and its children excluded), "
                  "/proc/loadavg, /sys/devices/system/cpu/cpu*/cpufreq, environment",
    }


def cpu_frequency(root: str = "/") -> dict[str, Any]:
    """Governor and frequency (MHz) per CPU from cpufreq; `readable` False when the machine hides them."""
    base = os.path.join(root, "sys/devices/system/cpu")
    per_cpu: dict[str, dict[str, Any]] = {}
    for directory in sorted(glob.glob(os.path.join(base, "cpu[0-9]*")), key=_cpu_index):
        cpufreq = os.path.join(directory, "cpufreq")
        if not os.path.isdir(cpufreq):
            continue
        entry = {"governor": _read(os.path.join(cpufreq, "scaling_governor")),
                 "cur_mhz": _khz_to_mhz(_read(os.path.join(cpufreq, "scaling_cur_freq"))),
                 "min_mhz": _khz_to_mhz(_read(os.path.join(cpufreq, "scaling_min_freq"))),
                 "max_mhz": _khz_to_mhz(_read(os.path.join(cpufreq, "scaling_max_freq")) or
                                        _read(os.path.join(cpufreq, "cpuinfo_max_freq")))}
        if any(value is not None for value in entry.values()):
            per_cpu[os.path.basename(directory)] = entry
    governors = sorted({e["governor"] for e in per_cpu.values() if e["governor"]})
    current = [e["cur_mhz"] for e in per_cpu.values() if e["cur_mhz"] is not None]
    return {
        "readable": bool(per_cpu),
        "governors": governors,
        "governor": governors[0] if len(governors) == 1 else ("mixed" if governors else None),
        "cur_mhz_min": min(current) if current else None,
        "cur_mhz_max": max(current) if current else None,
        "per_cpu": per_cpu,
        "note": None if per_cpu else "cpufreq is not exposed here (common in VMs and containers): the governor and "
                                     "clock cannot be read",
    }


# ---- Private API
def _busiest(sample_s: float, excluded: set[int]) -> list[dict[str, Any]]:
    """Every other process that used CPU during `sample_s` (psutil's two-call cpu_percent), busiest first."""
    watched = _first_pass(excluded)
    time.sleep(sample_s)
    return _second_pass(watched)


def _first_pass(excluded: set[int]) -> list[Any]:
    import psutil

    watched = []
    for process in psutil.process_iter(["pid", "name"]):
        if process.pid in excluded:
            continue
        try:
            process.cpu_percent(None)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        watched.append(process)
    return watched


def _second_pass(watched: list[Any]) -> list[dict[str, Any]]:
    import psutil

    found = []
    for process in watched:
        try:
            percent = process.cpu_percent(None)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if percent > 0:
            found.append({"name": str(process.info.get("name") or "?"), "pid": int(process.pid),
                          "cpu_percent": round(float(percent), 1), "command": _command(process)})
    return found


def _command(process) -> str | None:
    """The command line, cut to 120 characters ('python' alone rarely says which job it is)."""
    try:
        text = " ".join(process.cmdline())
    except Exception:  # noqa: BLE001 — access denied, gone, zombie: the name is still there
        return None
    return text[:120] or None


def _family(pid: int) -> set[int]:
    """This process and its descendants (a worker, a telemetry sampler): not 'other' processes."""
    try:
        import psutil

        return {pid} | {child.pid for child in psutil.Process(pid).children(recursive=True)}
    except Exception:  # noqa: BLE001 — psutil missing or the tree changing under us: ourselves at least
        return {pid}


def _load_average(root: str) -> tuple[float, float, float] | None:
    text = _read(os.path.join(root, "proc/loadavg"))
    if text:
        try:
            one, five, fifteen = (float(x) for x in text.split()[:3])
            return one, five, fifteen
        except ValueError:
            pass
    if root in ("/", "") and hasattr(os, "getloadavg"):
        try:
            return os.getloadavg()
        except OSError:
            return None
    return None


def _usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def _oversubscribed(threads: dict[str, str | None], cpus: int) -> str | None:
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        value = threads.get(name)
        if value and value.strip().isdigit() and int(value) > cpus:
            return (f"{name}={value} is more threads than the {cpus} usable CPUs: threads will wait for each other "
                    "(set it to the CPU count or less)")
    return None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def _khz_to_mhz(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return round(int(text) / 1000, 1)
    except ValueError:
        return None


def _cpu_index(path: str) -> int:
    digits = os.path.basename(path)[3:]
    return int(digits) if digits.isdigit() else 0
