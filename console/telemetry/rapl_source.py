"""CPU package and DRAM energy from Linux powercap (RAPL): ``/sys/class/powercap/<type>:<n>[:<m>]``.

What is reported, and why not more
----------------------------------
RAPL zones nest: a ``package-N`` zone holds ``core`` (PP0) and ``uncore`` (PP1) sub-zones whose energy is
*part of* the package's, while ``dram`` (a sub-zone of the package in sysfs on servers) is *not* included in the
package counter, and ``psys`` (platform, some laptops/desktops) *contains* the packages and more. To never
double-count, only ``package-*`` and ``dram`` zones are reported; ``rapl.energy``/``rapl.power`` are their sum.
The same zone can appear under two control types (``intel-rapl:0`` and ``intel-rapl-mmio:0`` both name
``package-0`` on some Intel client parts): it is read once, from the first control type in sorted order that
is not ``-mmio``. AMD Zen CPUs expose the same tree (``package-N``, ``core``; no ``dram``), handled the same way:
zones are recognised by their ``name`` file, not by vendor.

Counters, wraparound, method
----------------------------
``energy_uj`` is a hardware energy counter (µJ) that wraps at ``max_energy_range_uj``. Each read is compared with
the previous one; a smaller value is a wrap (one per interval at most: at 10 Hz a wrap needs ~200 W × 20 min of
counter range to be missed, impossible). ``rapl.<zone>.energy`` is the unwrapped energy since the source opened,
in J: a counter, use differences. ``rapl.<zone>.power`` is that counter's difference over the sample interval
divided by its length: the *exact mean power over the interval*, measured by the hardware, so its method is
``measured`` (not ``integrated``: nothing is integrated from point samples; not ``estimated``: no model).

Permissions
-----------
Since Linux 5.10 (CVE-2020-8694, "Platypus") ``energy_uj`` is readable by root only. This source then reports
itself unavailable with the fix; it never falls back to something else silently (the estimated CPU power model
is a separate source, labelled ``estimated``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from .base import MetricInfo, Sample, Source
from .metadata import Energy, MetricSpec

DEFAULT_ROOT = "/sys/class/powercap"
MEASURED = "measured"
_ZONE = re.compile(r"^(?P<ctl>[A-Za-z0-9_.-]*rapl[A-Za-z0-9_.-]*):(?P<idx>\d+(?::\d+)*)$")

Opener = Callable[[str], IO[bytes]]


def _default_opener(path: str) -> IO[bytes]:
    return open(path, "rb", buffering=0)  # kept open; re-read with seek(0): sysfs regenerates the value


def permission_fix(root: str, control_types: list[str]) -> str:
    globs = " ".join(f"{root}/{ctl}:*/energy_uj" for ctl in control_types) or f"{root}/intel-rapl:*/energy_uj"
    return ("energy_uj is readable by root only (Linux >= 5.10, CVE-2020-8694). Fix: run the console as root; "
            f"or `sudo chmod o+r {globs}` (until reboot); or make it permanent with a udev rule, e.g. "
            "/etc/udev/rules.d/99-rapl.rules: "
            'SUBSYSTEM=="powercap", ACTION=="add", RUN+="/bin/chmod o+r /sys%p/energy_uj"')


@dataclass
class _Zone:
    zone_id: str  # e.g. "intel-rapl:0:2"
    scope: str  # e.g. "package-0", "dram-0"
    path: str
    max_uj: int = 0
    file: IO[bytes] | None = None
    last_uj: int = 0
    total_uj: int = 0  # unwrapped since open
    info: list[MetricInfo] = field(default_factory=list)


class RaplSource(Source):
    """``rapl.package-N.energy``/``.power``, ``rapl.dram-N.energy``/``.power``, ``rapl.energy``/``rapl.power``.

    ``root`` and ``opener`` are injectable for tests (a fake tree in a temporary directory; an opener that
    raises PermissionError, since root ignores file modes).
    """

    name = "rapl"
    # Zones are one device group, "cpu", with the estimated model: a counter beats an estimate of the same
    # hardware. Sums (rapl.energy, rapl.power) are not energy parts: the zones would be counted twice.
    metric_specs = (
        MetricSpec(r"rapl\.(package-[\w.-]+)\.energy", "J", energy=Energy("cpu", "{0}", group_order=2)),
        MetricSpec(r"rapl\.(dram-[\w.-]+)\.energy", "J", energy=Energy("cpu", "{0}", part_order=1, group_order=2)),
        MetricSpec(r"rapl\.(package-[\w.-]+)\.power", "W", energy=Energy("cpu", "{0}", group_order=2)),
        MetricSpec(r"rapl\.(dram-[\w.-]+)\.power", "W", energy=Energy("cpu", "{0}", part_order=1, group_order=2)),
        MetricSpec(r"rapl\.energy", "J"),
        MetricSpec(r"rapl\.power", "W", "power", "CPU package + DRAM (RAPL)"),
    )

    def __init__(self, root: str | os.PathLike[str] | None = None, opener: Opener | None = None) -> None:
        self.root = os.fspath(root) if root is not None else DEFAULT_ROOT
        self._opener = opener or _default_opener
        self._zones: list[_Zone] = []
        self._why = "not opened"
        self._unavailable: dict[str, str] = {}
        self._skipped: list[str] = []
        self._last_t = 0

    # ---- Public API

    def open(self) -> None:
        self.close()
        self._unavailable, self._skipped = {}, []
        try:
            entries = sorted(os.listdir(self.root))
        except FileNotFoundError:
            self._why = (f"no {self.root}: RAPL powercap is a Linux interface (kernel driver intel_rapl_msr or "
                         "intel_rapl_common); absent here, e.g. not Linux, a VM or a container without /sys")
            return
        except OSError as exc:
            self._why = f"cannot list {self.root}: {exc}"
            return
        zones = self._select_zones(entries)
        if not zones:
            self._why = f"no RAPL package or dram zone under {self.root}" + (
                f" (only: {', '.join(self._skipped)})" if self._skipped else "")
            return
        ctls = sorted({z.zone_id.split(":")[0] for z in zones})
        fix = permission_fix(self.root, ctls)
        denied: list[str] = []
        for zone in zones:
            energy_path = os.path.join(zone.path, "energy_uj")
            try:
                with self._opener(os.path.join(zone.path, "max_energy_range_uj")) as f:
                    zone.max_uj = int(f.read().strip())
                if zone.max_uj <= 0:
                    raise ValueError(f"max_energy_range_uj is {zone.max_uj}")
            except (OSError, ValueError) as exc:
                self._zone_unavailable(zone, f"cannot read max_energy_range_uj ({exc}): without it a "
                                             "wraparound cannot be told from a reset")
                continue
            try:
                zone.file = self._opener(energy_path)
                zone.last_uj = self._read(zone)
            except PermissionError:
                denied.append(energy_path)
                self._zone_unavailable(zone, f"permission denied reading {energy_path}. {fix}")
                self._close_zone(zone)
                continue
            except (OSError, ValueError) as exc:
                self._zone_unavailable(zone, f"cannot read {energy_path}: {exc}")
                self._close_zone(zone)
                continue
            self._zones.append(zone)
        self._last_t = time.perf_counter_ns()
        if not self._zones:
            self._why = (f"permission denied reading {denied[0]}. {fix}" if denied
                         else "no RAPL zone could be read (see unavailable_metrics)")
            return
        if len(self._zones) < len(zones):
            for metric in ("rapl.energy", "rapl.power"):
                self._unavailable[metric] = ("no total: not every package/dram zone is readable, and a partial "
                                             "sum would pass for the whole")
        self._why = ""

    def available(self) -> tuple[bool, str]:
        return (self._why == ""), self._why

    def metrics(self) -> list[MetricInfo]:
        out = [info for zone in self._zones for info in zone.info]
        if self._zones and "rapl.energy" not in self._unavailable:
            parts = "+".join(z.scope for z in self._zones)
            skipped = f"; not added: {', '.join(self._skipped)}" if self._skipped else ""
            out += [MetricInfo("rapl.energy", "J", f"Sum of {parts} energy since the sampler started (counter; "
                               f"core/uncore are inside package, psys contains it{skipped})", MEASURED),
                    MetricInfo("rapl.power", "W", f"Sum of {parts} mean power over the sample interval", MEASURED)]
        return out

    def unavailable_metrics(self) -> dict[str, str]:
        return dict(self._unavailable)

    @property
    def scopes(self) -> list[str]:
        return [z.scope for z in self._zones]

    def sample(self, t_ns: int) -> list[Sample]:
        dt = (t_ns - self._last_t) / 1e9
        self._last_t = t_ns
        name = self.name
        rows: list[Sample] = []
        total_j = total_w = 0.0
        all_ok = True
        for zone in self._zones:
            raw = self._read(zone)
            delta = raw - zone.last_uj
            if delta < 0:  # the counter wrapped at max_energy_range_uj
                delta += zone.max_uj
            zone.last_uj = raw
            if delta < 0:  # not a wrap (range misreported or counter reset): this interval is unknown
                delta, ok = 0, False
                all_ok = False
            else:
                ok = True
            zone.total_uj += delta
            energy_j = zone.total_uj / 1e6
            rows.append((t_ns, name, zone.info[0].name, energy_j, "J", MEASURED))
            total_j += energy_j
            if dt > 0 and ok:
                power = delta / 1e6 / dt
                rows.append((t_ns, name, zone.info[1].name, power, "W", MEASURED))
                total_w += power
        if self._zones and "rapl.energy" not in self._unavailable:
            rows.append((t_ns, name, "rapl.energy", total_j, "J", MEASURED))
            if dt > 0 and all_ok:
                rows.append((t_ns, name, "rapl.power", total_w, "W", MEASURED))
        return rows

    def close(self) -> None:
        for zone in self._zones:
            self._close_zone(zone)
        self._zones = []

    # ---- Private API

    def _read(self, zone: _Zone) -> int:
        f = zone.file
        assert f is not None
        f.seek(0)
        return int(f.read().strip())

    @staticmethod
    def _close_zone(zone: _Zone) -> None:
        if zone.file is not None:
            try:
                zone.file.close()
            except OSError:
                pass
            zone.file = None

    def _zone_unavailable(self, zone: _Zone, why: str) -> None:
        for info in zone.info:
            self._unavailable[info.name] = why

    def _zone_name(self, path: str) -> str | None:
        try:
            with self._opener(os.path.join(path, "name")) as f:
                return f.read().decode(errors="replace").strip()
        except OSError:
            return None

    def _select_zones(self, entries: list[str]) -> list[_Zone]:
        """Package and dram zones, each scope once; records what was left out and why in ``_skipped``."""
        found: list[tuple[str, list[int], str, str]] = []  # (ctl, index path, zone name, path)
        for entry in entries:
            match = _ZONE.match(entry)
            if not match:
                continue
            path = os.path.join(self.root, entry)
            zone_name = self._zone_name(path)
            if zone_name is None:
                continue
            found.append((match.group("ctl"), [int(x) for x in match.group("idx").split(":")], zone_name, path))
        # A non-mmio control type first: "intel-rapl" before "intel-rapl-mmio" for the same scope.
        found.sort(key=lambda z: ("mmio" in z[0], z[0], z[1]))
        names = {(ctl, tuple(idx)): zname for ctl, idx, zname, _ in found}
        zones: list[_Zone] = []
        seen: dict[str, str] = {}
        for ctl, idx, zname, path in found:
            zone_id = f"{ctl}:{':'.join(map(str, idx))}"
            base = zname.split("-")[0].lower()
            if base == "package" and len(idx) == 1:
                scope = zname if "-" in zname else f"package-{idx[0]}"
            elif base == "dram":
                parent = names.get((ctl, tuple(idx[:1]))) if len(idx) > 1 else None
                number = parent.rsplit("-", 1)[-1] if parent and parent.startswith("package-") else str(idx[0])
                scope = zname if "-" in zname else f"dram-{number}"
            else:
                why = {"core": "inside its package", "uncore": "inside its package",
                       "psys": "platform: contains the packages"}.get(base, "not a package or dram domain")
                self._skipped.append(f"{zone_id} {zname} ({why})")
                continue
            if scope in seen:
                self._skipped.append(f"{zone_id} {zname} (same domain as {seen[scope]})")
                continue
            seen[scope] = zone_id
            zone = _Zone(zone_id, scope, path)
            zone.info = [
                MetricInfo(f"rapl.{scope}.energy", "J", f"RAPL {scope} energy since the sampler started "
                           f"({zone_id}/energy_uj, unwrapped; a counter: use differences)", MEASURED),
                MetricInfo(f"rapl.{scope}.power", "W", f"RAPL {scope} mean power over the sample interval "
                           "(energy counter difference / interval: measured, not integrated)", MEASURED),
            ]
            zones.append(zone)
        zones.sort(key=lambda z: (not z.scope.startswith("package"), z.scope))
        return zones

