"""Run hygiene: cpufreq and load from a fake /sys and /proc tree, the busy rule, and a real busy process."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from engines import hygiene, protocol


def fake_root(tmp_path, governors=("performance", "performance"), freqs=(3_000_000, 2_400_000),
              loadavg="0.10 0.20 0.30 1/200 12345"):
    for index, (governor, freq) in enumerate(zip(governors, freqs, strict=True)):
        cpufreq = tmp_path / f"sys/devices/system/cpu/cpu{index}/cpufreq"
        cpufreq.mkdir(parents=True)
        (cpufreq / "scaling_governor").write_text(governor + "\n")
        (cpufreq / "scaling_cur_freq").write_text(f"{freq}\n")
        (cpufreq / "scaling_min_freq").write_text("800000\n")
        (cpufreq / "cpuinfo_max_freq").write_text("3500000\n")
    (tmp_path / "sys/devices/system/cpu/cpufreq").mkdir(parents=True, exist_ok=True)  # not a cpuN: ignored
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/loadavg").write_text(loadavg + "\n")
    return str(tmp_path)


def quiet(sample_s, excluded):
    return []


def test_quiet_machine_with_the_performance_governor(tmp_path):
    record = hygiene.collect(root=fake_root(tmp_path), cpu_count=4, processes=quiet, environ={"OMP_NUM_THREADS": "2"})
    assert record["busy"] is False and record["warning"] is None and record["warnings"] == []
    assert record["load_average"] == [0.1, 0.2, 0.3]
    frequency = record["cpu_frequency"]
    assert frequency["readable"] and frequency["governor"] == "performance"
    assert frequency["per_cpu"]["cpu0"] == {"governor": "performance", "cur_mhz": 3000.0, "min_mhz": 800.0,
                                           "max_mhz": 3500.0}
    assert (frequency["cur_mhz_min"], frequency["cur_mhz_max"]) == (2400.0, 3000.0)
    assert record["threads"]["OMP_NUM_THREADS"] == "2" and record["threads"]["KMP_AFFINITY"] is None
    assert set(record["threads"]) == set(hygiene.THREAD_VARIABLES)
    protocol.make("hello", pid=1, versions={}, hygiene=record)  # plain data throughout
    json.dumps(record)


def test_busy_by_other_processes_and_by_load(tmp_path):
    def others(sample_s, excluded):
        return [{"name": "cc1plus", "pid": 4242, "cpu_percent": 15.0},
                {"name": "python", "pid": 4343, "cpu_percent": 9.5}, {"name": "me", "pid": os.getpid(),
                                                                      "cpu_percent": 100.0}]

    root = fake_root(tmp_path)
    record = hygiene.collect(root=root, cpu_count=4, processes=others, environ={})
    assert record["busy"] and record["other_cpu_percent"] == 24.5  # ourselves excluded even if listed
    assert [p["pid"] for p in record["processes"]] == [4242, 4343]
    assert "other processes used 24% of a core: cc1plus (pid 4242) 15%" in record["warning"]
    assert "load average" not in record["warning"]
    short = hygiene.collect(root=root, cpu_count=4, processes=others, environ={}, sample_s=0.05)
    assert "24% of a core over only 0.05 s (the sample ended with a quick load: a rough share)" in short["warning"]

    loaded = fake_root(tmp_path / "loaded", loadavg="2.50 1.00 0.50 3/300 1")
    record = hygiene.collect(root=loaded, cpu_count=4, processes=quiet, environ={})
    assert record["busy"] and "load average 2.50 on 4 CPUs" in record["warning"]
    record = hygiene.collect(root=loaded, cpu_count=8, processes=quiet, environ={})
    assert not record["busy"]  # 2.5 ≤ 0.5 × 8


def test_governor_and_thread_warnings_do_not_make_the_machine_busy(tmp_path):
    root = fake_root(tmp_path, governors=("powersave", "performance"))
    record = hygiene.collect(root=root, cpu_count=2, processes=quiet, environ={"OMP_NUM_THREADS": "16"})
    assert not record["busy"] and record["cpu_frequency"]["governor"] == "mixed"
    assert any("governor powersave" in w for w in record["warnings"])
    assert any("OMP_NUM_THREADS=16 is more threads than the 2 usable CPUs" in w for w in record["warnings"])


def test_no_cpufreq_and_no_loadavg_say_so(tmp_path):
    record = hygiene.collect(root=str(tmp_path), cpu_count=2, processes=quiet, environ={})
    assert record["cpu_frequency"]["readable"] is False and "not exposed" in record["cpu_frequency"]["note"]
    assert record["load_average"] is None and record["busy"] is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses sh and /proc")
def test_a_real_busy_process_is_found_and_our_own_work_is_not(tmp_path):
    # A spinner that is not our child (the shell exits, so it is re-parented): an "other" process.
    spin = "import time; end = time.time() + 5\nwhile time.time() < end: pass"
    out = subprocess.run(["sh", "-c", f'{sys.executable} -c "{spin}" >/dev/null 2>&1 & echo $!'],
                         capture_output=True, text=True, check=True)
    pid = int(out.stdout.strip())
    stop = threading.Event()

    def burn():  # our own busy thread: must not count
        while not stop.is_set():
            pass

    thread = threading.Thread(target=burn, daemon=True)
    try:
        time.sleep(0.2)
        thread.start()
        record = hygiene.collect(root=fake_root(tmp_path), sample_s=0.3)
    finally:
        stop.set()
        thread.join()
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            pass
    pids = {p["pid"]: p for p in record["processes"]}
    assert os.getpid() not in pids
    assert pid in pids and pids[pid]["cpu_percent"] > 20, record["processes"]
    assert record["busy"] and "python" in record["warning"]
