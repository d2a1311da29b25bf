"""`engines.doctor` against captured /proc and /sys trees: each check's status, reading and fix, and "not
available (why)" when the machine does not expose a source — never a made-up reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli import main as cli_main
from engines import doctor

STAT_IDLE = ("cpu  1000 0 500 8000 100 0 0 0 0 0\n"
             "cpu0 500 0 250 4000 50 0 0 0 0 0\n"
             "cpu1 500 0 250 4000 50 0 0 0 0 0\n")


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def quiet_box(root: Path) -> None:
    """A tuned bare-metal box: performance governor, turbo off, SMT off, no swap, cool, performance profile."""
    for cpu in (0, 1):
        base = f"sys/devices/system/cpu/cpu{cpu}"
        write(root, f"{base}/cpufreq/scaling_governor", "performance\n")
        write(root, f"{base}/cpufreq/scaling_cur_freq", "3000000\n")
        write(root, f"{base}/topology/thread_siblings_list", f"{cpu}\n")
        write(root, f"{base}/thermal_throttle/core_throttle_count", "0\n")
    write(root, "sys/devices/system/cpu/intel_pstate/no_turbo", "1\n")
    write(root, "sys/devices/system/cpu/smt/active", "0\n")
    write(root, "proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu sse2 avx2\n")
    write(root, "sys/class/dmi/id/sys_vendor", "Dell Inc.\n")
    write(root, "proc/stat", STAT_IDLE)
    write(root, "proc/meminfo", "MemTotal: 16000000 kB\nMemAvailable: 12000000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n")
    write(root, "proc/vmstat", "pswpin 10\npswpout 20\n")
    write(root, "sys/class/thermal/thermal_zone0/type", "x86_pkg_temp\n")
    write(root, "sys/class/thermal/thermal_zone0/temp", "45000\n")
    write(root, "sys/class/thermal/thermal_zone0/trip_point_0_type", "passive\n")
    write(root, "sys/class/thermal/thermal_zone0/trip_point_0_temp", "95000\n")
    write(root, "sys/firmware/acpi/platform_profile", "performance\n")


def run(root: Path, advance=None, processes=(), command=None) -> dict:
    """diagnose() with the 'sleep' replaced by `advance(root)` (the counters moving) and a fixed process list."""
    return doctor.diagnose(str(root), sample_s=1.0, wait=lambda _s: advance and advance(root),
                           processes=lambda: list(processes), run_command=command or (lambda argv: None))


def by_id(report: dict) -> dict[str, dict]:
    return {check["id"]: check for check in report["checks"]}


def test_a_tuned_box_is_all_ok(tmp_path):
    quiet_box(tmp_path)
    report = run(tmp_path, advance=lambda r: write(r, "proc/stat", STAT_IDLE.replace("8000", "8400")
                                                   .replace("4000", "4200")))
    checks = by_id(report)
    assert report["schema"] == "labconsole.doctor/1"
    assert [c["id"] for c in report["checks"]] == ["governor", "turbo", "smt", "vm", "steal", "others", "swap",
                                                   "thermal", "power"]
    assert {c["status"] for c in report["checks"]} == {"ok"}, {k: c["reading"] for k, c in checks.items()}
    assert report["worst"] == "ok" and report["counts"]["ok"] == 9
    assert "bare metal" in checks["vm"]["reading"] and "Dell" in checks["vm"]["reading"]
    assert checks["steal"]["data"]["percent"] == 0.0
    assert all(c["fix"] is None for c in report["checks"])
    json.dumps(report)  # plain data, ready for --json and the window


def test_an_empty_tree_says_why_for_every_check(tmp_path):
    report = doctor.diagnose(str(tmp_path), sample_s=0.0, wait=lambda _s: None)
    for check in report["checks"]:
        assert check["status"] == "not_available", check
        assert check["reading"].startswith("not available (") and check["reading"].endswith(")")
        assert check["data"] == {} and check["fix"] is None
    assert "only on the live machine" in by_id(report)["others"]["reading"]
    assert report["worst"] == "not_available"


def test_a_noisy_vm_is_named_with_fixes(tmp_path):
    quiet_box(tmp_path)
    write(tmp_path, "proc/cpuinfo", "flags\t\t: fpu hypervisor avx2\n")
    write(tmp_path, "sys/class/dmi/id/sys_vendor", "QEMU\n")
    for cpu in (0, 1):
        write(tmp_path, f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor", "powersave\n")
    write(tmp_path, "sys/devices/system/cpu/intel_pstate/no_turbo", "0\n")
    write(tmp_path, "sys/firmware/acpi/platform_profile", "balanced\n")
    write(tmp_path, "sys/firmware/acpi/platform_profile_choices", "low-power balanced performance\n")

    def advance(root):  # 1,100 jiffies pass, 100 of them stolen
        write(root, "proc/stat", "cpu  1400 0 700 8400 100 0 0 100 0 0\n"
                                 "cpu0 700 0 350 4200 50 0 0 50 0 0\ncpu1 700 0 350 4200 50 0 0 50 0 0\n")

    report = run(tmp_path, advance, processes=[{"name": "make", "pid": 42, "cpu_percent": 150.0},
                                               {"name": "sshd", "pid": 7, "cpu_percent": 1.0}],
                 command=lambda argv: "kvm" if argv == ["systemd-detect-virt"] else None)
    checks = by_id(report)
    assert checks["governor"]["status"] == "warn" and "cpupower frequency-set -g performance" in checks["governor"]["fix"]
    assert checks["turbo"]["status"] == "warn" and "no_turbo" in checks["turbo"]["fix"]
    assert checks["vm"]["status"] == "warn"
    assert "systemd-detect-virt: kvm" in checks["vm"]["reading"] and "hypervisor flag" in checks["vm"]["reading"]
    assert "QEMU" in checks["vm"]["reading"]
    assert checks["steal"]["status"] == "bad" and checks["steal"]["data"]["percent"] == pytest.approx(100 / 1100 * 100, abs=0.01)
    assert checks["others"]["status"] == "bad" and "make (pid 42) 150%" in checks["others"]["reading"]
    assert checks["others"]["data"]["cpu_percent"] == 151.0
    assert checks["power"]["status"] == "warn" and "balanced" in checks["power"]["reading"]
    assert report["worst"] == "bad" and report["counts"]["bad"] == 2
    assert [c["id"] for c in doctor.bad_checks(report)] == ["steal", "others"]


def test_smt_siblings_busy_together(tmp_path):
    quiet_box(tmp_path)
    write(tmp_path, "sys/devices/system/cpu/smt/active", "1\n")
    for cpu in (0, 1):
        write(tmp_path, f"sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list", "0-1\n")
    busy_after = ("cpu  1900 0 500 8200 100 0 0 0 0 0\n"
                  "cpu0 950 0 250 4100 50 0 0 0 0 0\ncpu1 950 0 250 4100 50 0 0 0 0 0\n")
    report = run(tmp_path, lambda r: write(r, "proc/stat", busy_after))
    check = by_id(report)["smt"]
    assert check["status"] == "warn"
    assert "cpu0+cpu1 (82%, 82% busy)" in check["reading"]
    assert "smt/control" in check["fix"]
    write(tmp_path, "proc/stat", STAT_IDLE)
    quiet_after = STAT_IDLE.replace("4000", "4500").replace("8000", "9000")
    assert by_id(run(tmp_path, lambda r: write(r, "proc/stat", quiet_after)))["smt"]["status"] == "ok"


def test_swapping_during_the_sample_is_bad_and_swap_held_with_little_memory_warns(tmp_path):
    quiet_box(tmp_path)
    write(tmp_path, "proc/meminfo", "MemTotal: 1000000 kB\nMemAvailable: 50000 kB\n"
                                    "SwapTotal: 2097152 kB\nSwapFree: 1048576 kB\n")
    report = run(tmp_path, lambda r: write(r, "proc/vmstat", "pswpin 15\npswpout 30\n"))
    check = by_id(report)["swap"]
    assert check["status"] == "bad" and "15 pages swapped in or out" in check["reading"]
    assert "1,024 MiB of 2,048 MiB in use" in check["reading"]
    check = by_id(run(tmp_path))["swap"]
    assert check["status"] == "warn" and "only 49 MiB of memory available" in check["reading"]


def test_thermal_throttling_during_the_sample_is_bad_and_a_hot_zone_warns(tmp_path):
    quiet_box(tmp_path)
    report = run(tmp_path, lambda r: write(r, "sys/devices/system/cpu/cpu1/thermal_throttle/core_throttle_count",
                                           "3\n"))
    check = by_id(report)["thermal"]
    assert check["status"] == "bad" and "3 during the sample" in check["reading"]
    write(tmp_path, "sys/class/thermal/thermal_zone0/temp", "92000\n")
    check = by_id(run(tmp_path))["thermal"]
    assert check["status"] == "warn" and "x86_pkg_temp 92 °C (trip 95 °C)" in check["reading"]


def test_power_profiles_daemon_when_there_is_no_acpi_profile(tmp_path):
    quiet_box(tmp_path)
    (tmp_path / "sys/firmware/acpi/platform_profile").unlink()
    check = by_id(run(tmp_path, command=lambda argv: "power-saver" if argv[0] == "powerprofilesctl" else None))["power"]
    assert check["status"] == "warn" and "power-profiles-daemon" in check["reading"]
    assert check["fix"].endswith("powerprofilesctl set performance")


def test_boost_through_cpufreq_when_intel_pstate_is_absent(tmp_path):
    quiet_box(tmp_path)
    (tmp_path / "sys/devices/system/cpu/intel_pstate/no_turbo").unlink()
    write(tmp_path, "sys/devices/system/cpu/cpufreq/boost", "1\n")
    check = by_id(run(tmp_path))["turbo"]
    assert check["status"] == "warn" and "cpufreq/boost = 1" in check["reading"]


def test_summary_line():
    report = {"counts": {"bad": 1, "warn": 2, "ok": 3, "not_available": 0}}
    assert doctor.summary_line(report) == "1 bad, 2 to improve, 3 ok"


def test_cli_json_and_text(monkeypatch, capsys, tmp_path):
    quiet_box(tmp_path)
    canned = run(tmp_path, advance=lambda r: write(r, "proc/stat", STAT_IDLE.replace("8000", "8200")))
    monkeypatch.setattr(doctor, "diagnose", lambda sample_s: {**canned, "sample_s": sample_s})
    assert cli_main(["doctor", "--json", "--sample", "0.5"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["schema"] == "labconsole.doctor/1" and printed["sample_s"] == 0.5
    assert cli_main(["doctor"]) == 0
    text = capsys.readouterr().out
    assert "0 bad, 0 to improve, 9 ok" in text and "ok  CPU frequency governor: performance on 2 CPUs" in text
    assert cli_main(["doctor", "--sample", "nan"]) == 2


def test_the_live_machine_gives_every_check_a_known_status_and_reads_only():
    """On this machine, whatever it exposes: nine checks, each a known status with a reading (no timing asserted)."""
    report = doctor.diagnose(sample_s=0.05)
    assert [c["id"] for c in report["checks"]] == ["governor", "turbo", "smt", "vm", "steal", "others", "swap",
                                                   "thermal", "power"]
    for check in report["checks"]:
        assert check["status"] in doctor.RANK and check["reading"], check
        assert (check["status"] == "not_available") == check["reading"].startswith("not available (")
    assert sum(report["counts"].values()) == 9
    json.dumps(report)
