"""RAPL powercap source against fake /sys/class/powercap trees in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.telemetry.catalog import undeclared
from console.telemetry.rapl_source import RaplSource

MS = 1_000_000
MAX_UJ = 262_143_328_850  # a typical max_energy_range_uj


def make_tree(root: Path, zones: dict[str, tuple[str, int]], max_uj: int = MAX_UJ) -> Path:
    """zones: entry name -> (zone name, energy_uj). A flat listing, as /sys/class/powercap shows it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "intel-rapl").mkdir(exist_ok=True)  # the control-type directory itself: not a zone
    for entry, (name, energy) in zones.items():
        d = root / entry
        d.mkdir()
        (d / "name").write_text(name + "\n")
        (d / "energy_uj").write_text(f"{energy}\n")
        (d / "max_energy_range_uj").write_text(f"{max_uj}\n")
        (d / "enabled").write_text("1\n")
    return root


def set_energy(root: Path, entry: str, uj: int) -> None:
    (root / entry / "energy_uj").write_text(f"{uj}\n")


SERVER = {
    "intel-rapl:0": ("package-0", 1_000_000),
    "intel-rapl:0:0": ("core", 500_000),
    "intel-rapl:0:1": ("uncore", 100_000),
    "intel-rapl:0:2": ("dram", 300_000),
    "intel-rapl:1": ("package-1", 2_000_000),
    "intel-rapl:1:0": ("dram", 400_000),
    "intel-rapl:2": ("psys", 9_000_000),
    "intel-rapl-mmio:0": ("package-0", 1_000_000),
}


def by_metric(rows):
    return {r[2]: r for r in rows}


def test_nested_domains_are_never_double_counted(tmp_path):
    root = make_tree(tmp_path / "powercap", SERVER)
    src = RaplSource(root=root)
    src.open()
    assert src.available() == (True, "")
    assert src.scopes == ["package-0", "package-1", "dram-0", "dram-1"]
    names = {m.name for m in src.metrics()}
    assert names == {f"rapl.{s}.{k}" for s in src.scopes for k in ("energy", "power")} | {"rapl.energy",
                                                                                         "rapl.power"}
    total = next(m for m in src.metrics() if m.name == "rapl.energy")
    assert "package-0+package-1+dram-0+dram-1" in total.description and "psys" in total.description
    assert all(m.method == "measured" for m in src.metrics())
    assert undeclared(RaplSource, src.metrics()) == []  # every metric has its metadata

    # 100 ms later: package-0 +10 J, package-1 +20 J, dram-0 +3 J, dram-1 +4 J; core/psys/mmio ignored
    t0 = src._last_t
    set_energy(root, "intel-rapl:0", 11_000_000)
    set_energy(root, "intel-rapl:1", 22_000_000)
    set_energy(root, "intel-rapl:0:2", 3_300_000)
    set_energy(root, "intel-rapl:1:0", 4_400_000)
    set_energy(root, "intel-rapl:0:0", 99_000_000)
    set_energy(root, "intel-rapl:2", 999_000_000)
    set_energy(root, "intel-rapl-mmio:0", 555_000_000)
    got = by_metric(src.sample(t0 + 100 * MS))
    assert got["rapl.package-0.energy"][3] == pytest.approx(10.0)
    assert got["rapl.package-0.power"][3] == pytest.approx(100.0)
    assert got["rapl.package-1.power"][3] == pytest.approx(200.0)
    assert got["rapl.dram-0.power"][3] == pytest.approx(30.0)
    assert got["rapl.energy"][3] == pytest.approx(37.0)
    assert got["rapl.power"][3] == pytest.approx(370.0)
    assert all(r[1] == "rapl" and r[5] == "measured" for r in got.values())
    assert got["rapl.energy"][4] == "J" and got["rapl.power"][4] == "W"
    src.close()


def test_wraparound(tmp_path):
    root = make_tree(tmp_path / "pc", {"intel-rapl:0": ("package-0", MAX_UJ - 2_000_000)})
    src = RaplSource(root=root)
    src.open()
    t = src._last_t
    set_energy(root, "intel-rapl:0", 3_000_000)  # wrapped: 2 J before the top + 3 J after
    got = by_metric(src.sample(t + 100 * MS))
    assert got["rapl.package-0.energy"][3] == pytest.approx(5.0)
    assert got["rapl.package-0.power"][3] == pytest.approx(50.0)
    set_energy(root, "intel-rapl:0", 4_000_000)
    got = by_metric(src.sample(t + 200 * MS))
    assert got["rapl.package-0.energy"][3] == pytest.approx(6.0)  # keeps counting after the wrap
    assert got["rapl.package-0.power"][3] == pytest.approx(10.0)


def _denying(paths_denied):
    def opener(path):
        if any(path.endswith(p) for p in paths_denied):
            raise PermissionError(13, "Permission denied", path)
        return open(path, "rb", buffering=0)
    return opener


def test_permission_denied_reports_the_fix(tmp_path):
    root = make_tree(tmp_path / "pc", SERVER)
    src = RaplSource(root=root, opener=_denying(["energy_uj"]))
    src.open()
    ok, why = src.available()
    assert not ok
    assert "permission denied" in why and "energy_uj" in why
    assert f"sudo chmod o+r {root}/intel-rapl:*/energy_uj" in why
    assert "root" in why and "udev" in why
    assert src.metrics() == []  # never falls back silently to anything


def test_one_zone_denied_no_partial_total(tmp_path):
    root = make_tree(tmp_path / "pc", SERVER)
    src = RaplSource(root=root, opener=_denying(["intel-rapl:0:2/energy_uj"]))
    src.open()
    assert src.available() == (True, "")
    missing = src.unavailable_metrics()
    assert "chmod" in missing["rapl.dram-0.energy"]
    assert "rapl.energy" in missing and "partial" in missing["rapl.energy"]
    got = by_metric(src.sample(src._last_t + 100 * MS))
    assert "rapl.energy" not in got and "rapl.package-0.energy" in got


def test_amd_tree_package_only(tmp_path):
    root = make_tree(tmp_path / "pc", {"intel-rapl:0": ("package-0", 5), "intel-rapl:0:0": ("core", 3)})
    src = RaplSource(root=root)
    src.open()
    assert src.scopes == ["package-0"]
    assert "rapl.dram-0.energy" not in {m.name for m in src.metrics()}


def test_no_powercap(tmp_path):
    src = RaplSource(root=tmp_path / "absent")
    src.open()
    ok, why = src.available()
    assert not ok and "powercap" in why


def test_powercap_without_rapl_zones(tmp_path):
    root = make_tree(tmp_path / "pc", {"intel-rapl:0": ("psys", 1)})
    src = RaplSource(root=root)
    src.open()
    ok, why = src.available()
    assert not ok and "psys" in why


def test_unreadable_range_is_unavailable_not_guessed(tmp_path):
    root = make_tree(tmp_path / "pc", {"intel-rapl:0": ("package-0", 1)})
    (root / "intel-rapl:0" / "max_energy_range_uj").write_text("garbage\n")
    src = RaplSource(root=root)
    src.open()
    assert not src.available()[0]
    assert "wraparound" in src.unavailable_metrics()["rapl.package-0.energy"]


def test_source_rows_feed_the_energy_counter_method(tmp_path):
    """The source unwraps its counter, so the energy module sees a monotonic J counter across a wrap."""
    from console.analysis.energy import energy_summary

    root = make_tree(tmp_path / "pc", {"intel-rapl:0": ("package-0", MAX_UJ - 15_000_000)})
    src = RaplSource(root=root)
    src.open()
    t = src._last_t
    rows, uj = [], MAX_UJ - 15_000_000
    for k in range(1, 31):  # 3 s at 10 Hz, 100 W: 10 J per tick, wrapping after 1.5 ticks
        uj = (uj + 10_000_000) % MAX_UJ
        set_energy(root, "intel-rapl:0", uj)
        rows += src.sample(t + k * 100 * MS)
    e = energy_summary(rows, t + 500 * MS, t + 2500 * MS, inferences=4)
    assert e["method"] == "counter" and e["scope"] == "package-0" and e["source"] == "rapl"
    assert e["joules"] == pytest.approx(200.0) and e["joules_per_inference"] == pytest.approx(50.0)
