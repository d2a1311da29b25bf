"""What on this machine adds noise to a measurement, each with its reading and its fix (`labconsole doctor`).

pyperf's `system show` is the model: name each setting that moves timings, say what it is now and how to change
it. Here every check reads /proc and /sys (and asks `systemd-detect-virt` / `powerprofilesctl` when installed);
nothing is ever written, so the doctor is safe to run anywhere, in a worker or on a lab node. A check whose source
this machine does not expose is "not_available" with the reason — never a guessed reading.

Checks that need a rate (steal time, per-CPU busy time for SMT siblings, swapping, throttle counters, other
processes' CPU) read their counters twice, `sample_s` apart. `root` moves /proc and /sys (tests point it at a
tmp_path tree); `wait` replaces the sleep between the two readings (tests rewrite the tree there), `processes`
replaces the psutil sample of other processes, and `run_command` the helper programs.

Statuses: "ok", "warn" (adds noise; worth fixing before comparing small differences), "bad" (noisy enough to
move results by more than a typical run-to-run spread), "not_available" (the reason is the reading).
"""

from __future__ import annotations

import glob
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from engines import doctor_readings as readings
from engines import hygiene
from engines.block_device import read_sysfs

SCHEMA = "labconsole.doctor/1"
OK, WARN, BAD, NOT_AVAILABLE = "ok", "warn", "bad", "not_available"
RANK = {BAD: 3, WARN: 2, OK: 1, NOT_AVAILABLE: 0}
SAMPLE_S = 1.0
STEAL_WARN, STEAL_BAD = 0.5, 5.0  # % of all CPU time stolen by the hypervisor during the sample
OTHERS_WARN, OTHERS_BAD = hygiene.BUSY_CPU_PERCENT, 100.0  # % of one core used by other processes
SIBLING_BUSY = 50.0  # % busy for a hyperthread to count as competing with its sibling
TRIP_MARGIN_C = 5.0  # a thermal zone this close to a passive/hot/critical trip point is a warning
LOW_MEMORY = 0.10  # MemAvailable below this share of MemTotal, with swap in use: a warning
VM_VENDORS = ("qemu", "kvm", "vmware", "xen", "virtualbox", "innotek", "bochs", "parallels", "amazon ec2",
              "google compute engine", "openstack", "microsoft corporation virtual", "hyper-v", "cloud hypervisor",
              "bhyve", "digitalocean", "hetzner vserver")
CONTAINERS = ("docker", "podman", "lxc", "lxc-libvirt", "systemd-nspawn", "openvz", "rkt", "wsl", "proot",
              "container-other")

Command = Callable[[list[str]], "str | None"]


# ---- Public API
def diagnose(root: str = "/", sample_s: float = SAMPLE_S, wait: Callable[[float], object] | None = None,
             processes: Callable[[], list[dict[str, Any]]] | None = None,
             run_command: Command | None = None) -> dict[str, Any]:
    """Every check, in a plain-data report: {"schema", "host", "measured_at", "sample_s", "worst", "counts",
    "checks": [{"id", "label", "status", "reading", "fix", "data"}]}. Takes about `sample_s` seconds."""
    live = os.path.abspath(root) == "/"
    command = run_command or (readings.run_command if live else readings.no_command)
    sampling = None
    if processes is None and live:
        try:
            sampling = hygiene.Sampling(sample_s)
        except ImportError:
            sampling = None
    before = readings.snapshot(root)
    (wait or time.sleep)(sample_s)
    after = readings.snapshot(root)
    if processes is not None:
        others: list[dict[str, Any]] | None = list(processes())
        why_no_others = None
    elif sampling is not None:
        others, _ = sampling.others()
        why_no_others = None
    else:
        others = None
        why_no_others = ("psutil is not installed (pip install psutil)" if live else
                         "other processes are sampled only on the live machine (this reading is of a copied tree)")
    checks = [
        governor(root),
        turbo(root),
        smt(root, before, after),
        virtualization(root, command),
        steal(before, after),
        other_processes(others, why_no_others),
        swap(root, before, after),
        thermal(root, before, after),
        power_profile(root, command),
    ]
    counts = {status: sum(c["status"] == status for c in checks) for status in (BAD, WARN, OK, NOT_AVAILABLE)}
    worst = max((c["status"] for c in checks), key=RANK.__getitem__)
    return {"schema": SCHEMA, "host": socket.gethostname(), "measured_at": _utc_now(), "sample_s": sample_s,
            "worst": worst, "counts": counts, "checks": checks}


def summary_line(report: dict[str, Any]) -> str:
    """"2 bad, 1 to improve, 4 ok, 2 not available" — the report in one line."""
    counts = report.get("counts") or {}
    parts = [f"{counts.get(BAD, 0)} bad", f"{counts.get(WARN, 0)} to improve", f"{counts.get(OK, 0)} ok"]
    if counts.get(NOT_AVAILABLE):
        parts.append(f"{counts[NOT_AVAILABLE]} not available")
    return ", ".join(parts)


def bad_checks(report: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The checks that are badly off (what the window warns about before a run)."""
    return [c for c in (report or {}).get("checks") or [] if c.get("status") == BAD]


# ---- The checks (each returns one check record; public so a caller can run one alone)
def governor(root: str) -> dict[str, Any]:
    found = hygiene.cpu_frequency(root)
    if not found["readable"]:
        return _unavailable("governor", "CPU frequency governor", found["note"])
    governors = found["governors"]
    unsteady = [g for g in governors if g not in hygiene.STEADY_GOVERNORS]
    clock = ""
    if found["cur_mhz_min"] is not None:
        clock = f"; clock now {found['cur_mhz_min']:g}–{found['cur_mhz_max']:g} MHz"
    reading = f"{', '.join(governors) or 'unknown'} on {len(found['per_cpu'])} CPUs{clock}"
    data = {"governors": governors, "cur_mhz_min": found["cur_mhz_min"], "cur_mhz_max": found["cur_mhz_max"]}
    if not governors:
        return _check("governor", "CPU frequency governor", NOT_AVAILABLE,
                      "not available (cpufreq shows frequencies but no scaling_governor)", None, data)
    if unsteady:
        return _check("governor", "CPU frequency governor", WARN, reading,
                      "the clock follows the load, so the first iterations and short runs are slower: "
                      "sudo cpupower frequency-set -g performance (pyperf system tune does the same)", data)
    return _check("governor", "CPU frequency governor", OK, reading, None, data)


def turbo(root: str) -> dict[str, Any]:
    label = "Turbo / boost"
    cpu = os.path.join(root, "sys/devices/system/cpu")
    no_turbo = read_sysfs(os.path.join(cpu, "intel_pstate/no_turbo"))
    if no_turbo in ("0", "1"):
        on = no_turbo == "0"
        data = {"source": "intel_pstate/no_turbo", "enabled": on}
        if on:
            return _check("turbo", label, WARN, "Intel Turbo Boost on (intel_pstate/no_turbo = 0)",
                          "the clock rises above base while the chip is cool and other cores idle, so it changes "
                          "during a run: echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo", data)
        return _check("turbo", label, OK, "Intel Turbo Boost off (intel_pstate/no_turbo = 1)", None, data)
    boosts = {path: read_sysfs(path) for path in [os.path.join(cpu, "cpufreq/boost")] +
              sorted(glob.glob(os.path.join(cpu, "cpufreq/policy*/boost")))}
    boosts = {path: value for path, value in boosts.items() if value in ("0", "1")}
    if boosts:
        on = sorted(os.path.relpath(p, cpu) for p, v in boosts.items() if v == "1")
        data = {"source": sorted(os.path.relpath(p, cpu) for p in boosts), "enabled": bool(on)}
        if on:
            return _check("turbo", label, WARN, f"boost on ({', '.join(on)} = 1)",
                          "the clock rises above base while the chip is cool, so it changes during a run: "
                          "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost", data)
        return _check("turbo", label, OK, "boost off (cpufreq boost = 0)", None, data)
    return _unavailable("turbo", label, "neither intel_pstate/no_turbo nor cpufreq boost is exposed (common in VMs "
                                        "and containers: the host decides the clock)")


def smt(root: str, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    label = "SMT siblings"
    cpu = os.path.join(root, "sys/devices/system/cpu")
    active = read_sysfs(os.path.join(cpu, "smt/active"))
    groups: set[tuple[int, ...]] = set()
    for path in glob.glob(os.path.join(cpu, "cpu[0-9]*/topology/thread_siblings_list")):
        members = readings.cpu_list(read_sysfs(path))
        if members:
            groups.add(tuple(members))
    if not groups and active is None:
        return _unavailable("smt", label, "the CPU topology is not exposed (/sys/devices/system/cpu/*/topology "
                                          "and smt/active are missing)")
    shared = sorted(g for g in groups if len(g) > 1)
    busy = readings.cpu_busy(before.get("stat"), after.get("stat"))
    threads = max((len(g) for g in groups), default=1)
    data = {"active": active == "1" if active is not None else bool(shared), "threads_per_core": threads,
            "sibling_groups": [list(g) for g in shared], "busy_percent": busy}
    if not shared:
        return _check("smt", label, OK, "SMT off: one hardware thread per core" if active != "1" else
                      "SMT on, but no core here has two threads in use", None, data)
    if busy is None:
        return _check("smt", label, NOT_AVAILABLE,
                      f"not available (SMT on, {threads} threads per core, but per-CPU busy time could not be read "
                      "from /proc/stat)", None, data)
    competing = [(g, [busy.get(c) for c in g]) for g in shared
                 if sum((busy.get(c) or 0.0) > SIBLING_BUSY for c in g) >= 2]
    if competing:
        text = "; ".join(f"cpu{'+cpu'.join(str(c) for c in g)} ({', '.join(_pct(b) for b in values)} busy)"
                         for g, values in competing[:4])
        return _check("smt", label, WARN, f"SMT on, {threads} threads per core; siblings busy together: {text}",
                      "two busy threads on one core take turns in its units: stop the other load, give the run one "
                      "thread per physical core, or turn SMT off (echo off | sudo tee "
                      "/sys/devices/system/cpu/smt/control)", data)
    return _check("smt", label, OK, f"SMT on, {threads} threads per core; no sibling pair was busy together "
                  f"(keep threads ≤ {len(groups)} physical cores for a latency run)", None, data)


def virtualization(root: str, run_command: Command) -> dict[str, Any]:
    label = "Virtual machine"
    evidence: list[str] = []
    container = None
    detected = run_command(["systemd-detect-virt"])
    if detected:
        detected = detected.strip()
        if detected in CONTAINERS:
            container = detected
        elif detected != "none":
            evidence.append(f"systemd-detect-virt: {detected}")
    cpuinfo = read_sysfs(os.path.join(root, "proc/cpuinfo"))
    flags_seen = False
    if cpuinfo:
        for line in cpuinfo.splitlines():
            if line.startswith("flags"):
                flags_seen = True
                if "hypervisor" in line.split(":", 1)[-1].split():
                    evidence.append("the CPU reports the hypervisor flag")
                break
    dmi = {name: read_sysfs(os.path.join(root, f"sys/class/dmi/id/{name}"))
           for name in ("sys_vendor", "product_name", "board_vendor")}
    dmi_text = " ".join(v for v in dmi.values() if v).strip()
    if dmi_text and any(vendor in dmi_text.lower() for vendor in VM_VENDORS):
        evidence.append(f"DMI: {dmi_text}")
    data = {"systemd_detect_virt": detected, "hypervisor_flag": any("hypervisor" in e for e in evidence),
            "dmi": {k: v for k, v in dmi.items() if v}, "container": container}
    if evidence:
        return _check("vm", label, WARN, "virtual machine — " + "; ".join(evidence),
                      "a VM shares its host: neighbours' load reaches it as steal time and jitter. For ceilings and "
                      "small differences measure on bare metal or dedicated (pinned) vCPUs; compare only runs from "
                      "the same VM", data)
    if container:
        return _check("vm", label, OK, f"container ({container}) on the host's kernel; no hypervisor seen", None,
                      data)
    if flags_seen or dmi_text or detected == "none":
        return _check("vm", label, OK, "bare metal (no hypervisor flag" + (f"; DMI: {dmi_text}" if dmi_text else "")
                      + ")", None, data)
    return _unavailable("vm", label, "no CPU flags in /proc/cpuinfo, no /sys/class/dmi and no systemd-detect-virt")


def steal(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    label = "Steal time"
    first, second = (before.get("stat") or {}).get("cpu"), (after.get("stat") or {}).get("cpu")
    if not first or not second:
        return _unavailable("steal", label, "/proc/stat is not readable")
    if len(first) < 8 or len(second) < 8:
        return _unavailable("steal", label, "this kernel's /proc/stat has no steal column")
    total = sum(second) - sum(first)
    since_boot = 100.0 * first[7] / sum(first) if sum(first) else None
    if total <= 0:
        return _unavailable("steal", label, "/proc/stat did not advance during the sample")
    percent = 100.0 * (second[7] - first[7]) / total
    data = {"percent": round(percent, 2), "since_boot_percent": round(since_boot, 2) if since_boot is not None
            else None}
    reading = f"{percent:.1f}% of CPU time taken by the hypervisor during the sample" + (
        f" ({since_boot:.1f}% since boot)" if since_boot is not None else "")
    fix = ("the host gave this VM's CPUs to other guests: ask for dedicated vCPUs, move to a quieter host or "
           "bare metal, and rerun when the neighbours are idle")
    if percent >= STEAL_BAD:
        return _check("steal", label, BAD, reading, fix, data)
    if percent > STEAL_WARN:
        return _check("steal", label, WARN, reading, fix, data)
    return _check("steal", label, OK, reading, None, data)


def other_processes(found: list[dict[str, Any]] | None, why_not: str | None) -> dict[str, Any]:
    label = "Other processes' CPU"
    if found is None:
        return _unavailable("others", label, why_not or "not sampled")
    others = sorted(found, key=lambda p: -float(p.get("cpu_percent") or 0.0))
    total = round(sum(float(p.get("cpu_percent") or 0.0) for p in others), 1)
    top = others[:hygiene.TOP]
    data = {"cpu_percent": total, "processes": top}
    names = ", ".join(f"{p.get('name')} (pid {p.get('pid')}) {float(p.get('cpu_percent') or 0):.0f}%" for p in top[:3])
    reading = f"{total:.0f}% of one core" + (f": {names}" if names else "")
    fix = "close or pause them (or wait until they finish) before measuring; each competes with the run for cores"
    if total >= OTHERS_BAD:
        return _check("others", label, BAD, reading, fix, data)
    if total > OTHERS_WARN:
        return _check("others", label, WARN, reading, fix, data)
    return _check("others", label, OK, reading, None, data)


def swap(root: str, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    label = "Swap"
    meminfo = readings.meminfo(root)
    if not meminfo or "SwapTotal" not in meminfo:
        return _unavailable("swap", label, "/proc/meminfo is not readable")
    total, free = meminfo["SwapTotal"], meminfo.get("SwapFree", 0)
    used = total - free
    first, second = before.get("vmstat") or {}, after.get("vmstat") or {}
    moved = None
    if all(k in first and k in second for k in ("pswpin", "pswpout")):
        moved = (second["pswpin"] - first["pswpin"]) + (second["pswpout"] - first["pswpout"])
    data = {"total_bytes": total, "used_bytes": used, "pages_swapped_during_sample": moved,
            "mem_available_bytes": meminfo.get("MemAvailable"), "mem_total_bytes": meminfo.get("MemTotal")}
    if total == 0:
        return _check("swap", label, OK, "no swap configured", None, data)
    reading = f"{_mib(used)} of {_mib(total)} in use"
    reading += ("; swapping during the sample not readable (/proc/vmstat)" if moved is None else
                f"; {moved} pages swapped in or out during the sample")
    if moved:
        return _check("swap", label, BAD, reading, "the machine is short of memory and pages move to and from "
                      "disk while it runs: close memory-hungry programs or use a smaller model/batch", data)
    available, mem_total = meminfo.get("MemAvailable"), meminfo.get("MemTotal")
    if used > 0 and available is not None and mem_total and available < LOW_MEMORY * mem_total:
        return _check("swap", label, WARN, reading + f"; only {_mib(available)} of memory available",
                      "little free memory and swap in use: a run that needs more will swap; free memory first",
                      data)
    return _check("swap", label, OK, reading, None, data)


def thermal(root: str, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    label = "Thermal state"
    zones = readings.thermal_zones(root)
    first, second = before.get("throttle") or {}, after.get("throttle") or {}
    if not zones and not first:
        return _unavailable("thermal", label, "no thermal zones (/sys/class/thermal) and no throttle counters "
                                              "(cpu*/thermal_throttle) are exposed (common in VMs)")
    rose = {name: second[name] - first[name] for name in first if name in second and second[name] > first[name]}
    since_boot = sum(first.values())
    hot = [z for z in zones if z["trip_c"] is not None and z["temp_c"] >= z["trip_c"] - TRIP_MARGIN_C]
    hottest = max(zones, key=lambda z: z["temp_c"]) if zones else None
    parts = []
    if hottest is not None:
        parts.append(f"hottest zone {hottest['type']} {hottest['temp_c']:.0f} °C" +
                     (f" (trip {hottest['trip_c']:.0f} °C)" if hottest["trip_c"] is not None else ""))
    if first:
        parts.append(f"throttled {since_boot} times since boot" + (f", {sum(rose.values())} during the sample"
                                                                  if rose else ""))
    reading = "; ".join(parts)
    data = {"zones": zones, "throttle_since_boot": since_boot, "throttle_during_sample": sum(rose.values())}
    if rose:
        return _check("thermal", label, BAD, reading, "the CPU is lowering its clock to cool down: improve cooling "
                      "(airflow, fan curve, a cooler room), let it cool, and rerun", data)
    if hot:
        names = ", ".join(f"{z['type']} {z['temp_c']:.0f} °C (trip {z['trip_c']:.0f} °C)" for z in hot[:3])
        return _check("thermal", label, WARN, f"near a trip point: {names}",
                      "close to throttling: let the machine cool before measuring and check its cooling", data)
    return _check("thermal", label, OK, reading, None, data)


def power_profile(root: str, run_command: Command) -> dict[str, Any]:
    label = "Power profile"
    profile = read_sysfs(os.path.join(root, "sys/firmware/acpi/platform_profile"))
    choices = (read_sysfs(os.path.join(root, "sys/firmware/acpi/platform_profile_choices")) or "").split()
    source = "ACPI platform_profile"
    fix = "echo performance | sudo tee /sys/firmware/acpi/platform_profile"
    if profile is None:
        daemon = run_command(["powerprofilesctl", "get"])
        if daemon:
            profile, source, fix = daemon.strip(), "power-profiles-daemon", "powerprofilesctl set performance"
    if profile is None:
        return _unavailable("power", label, "no ACPI platform profile (/sys/firmware/acpi/platform_profile) and no "
                                            "power-profiles-daemon (powerprofilesctl)")
    data = {"profile": profile, "source": source, "choices": choices}
    reading = f"{profile} ({source})"
    if profile == "performance":
        return _check("power", label, OK, reading, None, data)
    if choices and "performance" not in choices:
        return _check("power", label, WARN, reading + f"; choices: {', '.join(choices)}",
                      f"this platform offers no performance profile; use the fastest of {', '.join(choices)} and "
                      "keep it the same for runs you compare", data)
    return _check("power", label, WARN, reading, "a power-saving or balanced profile caps the clock and power: "
                  f"{fix}", data)


# ---- Private API
def _check(key: str, label: str, status: str, reading: str, fix: str | None, data: dict[str, Any]) -> dict[str, Any]:
    return {"id": key, "label": label, "status": status, "reading": reading, "fix": fix, "data": data}


def _unavailable(key: str, label: str, why: str) -> dict[str, Any]:
    return _check(key, label, NOT_AVAILABLE, f"not available ({why})", None, {})


def _pct(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}%"


def _mib(size: int) -> str:
    return f"{size / 1024 ** 2:,.0f} MiB"


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
