"""Energy-to-train from RAPL counters (engines.ttt.energy) on a fake powercap tree: which zones count, wraparound,
the bracketing window, and "not available (why)" instead of a number when there is no counter."""

import pytest

from engines.ttt.energy import RaplMeter, find_zones


def zone(root, entry, name, energy_uj, max_uj=1_000_000):
    folder = root / entry
    folder.mkdir()
    (folder / "name").write_text(f"{name}\n")
    (folder / "energy_uj").write_text(f"{energy_uj}\n")
    (folder / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return folder


@pytest.fixture
def tree(tmp_path):
    zone(tmp_path, "intel-rapl:0", "package-0", 900_000)
    zone(tmp_path, "intel-rapl:0:0", "core", 5)  # part of the package: never added
    zone(tmp_path, "intel-rapl:0:1", "dram", 100)
    zone(tmp_path, "intel-rapl:1", "package-1", 0)
    zone(tmp_path, "intel-rapl:1:1", "dram", 0)  # the second socket's dram has the same name: still counted
    zone(tmp_path, "intel-rapl-mmio:0", "package-0", 12)  # the same package again through MMIO: read once
    zone(tmp_path, "intel-rapl:0:2", "psys", 0)  # contains the packages: never added
    (tmp_path / "not-a-zone").mkdir()
    return tmp_path


def test_only_package_and_dram_zones_each_once(tree):
    zones, why = find_zones(str(tree))
    assert why is None
    assert [z["zone"] for z in zones] == ["intel-rapl:0", "intel-rapl:0:1", "intel-rapl:1", "intel-rapl:1:1"]


def test_a_wrap_counts_once_and_the_window_brackets_the_training(tree, monkeypatch):
    clock = iter([10.0, 11.0, 12.0, 13.0])
    monkeypatch.setattr("engines.ttt.energy.time.monotonic", lambda: next(clock))
    meter = RaplMeter(str(tree))
    meter.read()  # t = 10: package-0 at 900,000 µJ
    (tree / "intel-rapl:0" / "energy_uj").write_text("200000\n")  # wrapped at 1,000,000: +300,000
    (tree / "intel-rapl:1" / "energy_uj").write_text("50000\n")
    meter.read()  # t = 11
    (tree / "intel-rapl:0:1" / "energy_uj").write_text("1100\n")  # +1,000
    meter.read()  # t = 12
    meter.read()  # t = 13, nothing changed
    joules, info = meter.energy_between(10.5, 11.5)  # brackets to the reads at 10 and 12
    assert joules == pytest.approx((300_000 + 50_000 + 1_000) / 1e6)
    assert info["window_s"] == pytest.approx(2.0) and info["reads"] == 3
    assert "package-0 (intel-rapl:0)" in info["zones"] and len(info["zones"]) == 4
    assert meter.energy_between(12.0, 13.0)[0] == 0.0
    none, why = meter.energy_between(9.0, 11.0)
    assert none is None and "do not cover" in why["why"]
    assert meter.energy_between(11.0, 14.0)[0] is None


def test_no_counter_is_none_with_the_reason_never_a_number(tmp_path):
    meter = RaplMeter(str(tmp_path / "missing"))
    with meter:
        pass
    joules, info = meter.energy_between(0.0, 1.0)
    assert joules is None and not meter.available
    assert "no " in info["why"] and "RAPL powercap" in info["why"]
    (tmp_path / "empty").mkdir()
    assert find_zones(str(tmp_path / "empty")) == ([], f"no RAPL package or dram zone under {tmp_path / 'empty'}")


def test_the_poller_reads_while_training_runs(tree):
    with RaplMeter(str(tree), period_s=0.01) as meter:
        import time

        time.sleep(0.1)
    assert len(meter._times) >= 3  # the thread read between the first and the last read
