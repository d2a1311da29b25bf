"""Faults named precisely: out of memory (cgroup v2 counters), a dead telemetry sampler, time-outs by their flag,
a directory given as a model file."""

import os
import signal
import threading

import fault_workers
import pytest

from console.run.oom import MemoryWatch
from console.run.runner import WorkerRun, timeout_hint
from console.telemetry.coverage import sampler_death_note
from engines.model_files.common import ModelFileError, read_head
from engines.spec import RunLimits, RunSpec, SpecError

GIB = 1 << 30


def fake_machine(tmp_path, limit="536870912", parent_limit="max", oom_kill=0, vmstat_oom=7):
    """A /proc and /sys/fs/cgroup with this console in /lab.slice/console (cgroup v2)."""
    proc, cgroup = tmp_path / "proc", tmp_path / "cgroup"
    own = cgroup / "lab.slice" / "console"
    own.mkdir(parents=True)
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text("0::/lab.slice/console\n")
    (proc / "vmstat").write_text(f"nr_free_pages 100\noom_kill {vmstat_oom}\n")
    (proc / "meminfo").write_text("MemTotal:       16777216 kB\nMemFree:  1 kB\n")
    (own / "memory.max").write_text(limit + "\n")
    (cgroup / "lab.slice" / "memory.max").write_text(parent_limit + "\n")
    (own / "memory.events").write_text(f"low 0\nhigh 0\nmax 0\noom 0\noom_kill {oom_kill}\n")
    return MemoryWatch(cgroup_root=cgroup, proc_root=proc), own, proc


# ---- out of memory
def test_a_sigkill_while_the_cgroup_counted_an_oom_kill_is_out_of_memory_with_limit_and_peak(tmp_path):
    watch, own, proc = fake_machine(tmp_path)
    watch.start()
    (proc / "4242").mkdir()
    (proc / "4242" / "status").write_text("Name:\tpython\nVmPeak:\t 900000 kB\nVmHWM:\t  524288 kB\n")
    watch.follow(4242)
    (own / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
    message = watch.diagnose(-signal.SIGKILL, "measuring")
    assert message.startswith("worker ran out of memory during measuring")
    assert "512.0 MiB" in message and f"memory.max of {own}" in message  # the limit and where it is set
    assert "peak RSS was 512.0 MiB" in message
    assert "oom_kill count rose from 0 to 1" in message and "--batch" in message


def test_the_tightest_limit_up_the_tree_applies_and_the_ram_when_none_is_set(tmp_path):
    watch, _, _ = fake_machine(tmp_path / "a", limit="max", parent_limit=str(2 * GIB))
    assert watch.memory_limit() == (2 * GIB, f"memory.max of {tmp_path / 'a' / 'cgroup' / 'lab.slice'}")
    watch, _, _ = fake_machine(tmp_path / "b", limit="max", parent_limit="max")
    assert watch.memory_limit() == (16 * GIB, "this machine's RAM, no cgroup limit")


def test_a_system_wide_oom_kill_counts_too_and_other_deaths_are_not_memory(tmp_path):
    watch, _, proc = fake_machine(tmp_path)
    watch.start()
    assert watch.diagnose(-signal.SIGKILL, "loading") is None and watch.ruled_out()
    (proc / "vmstat").write_text("oom_kill 8\n")
    assert "system's oom_kill count rose from 7 to 8" in watch.diagnose(-signal.SIGKILL, "loading")
    assert watch.diagnose(-signal.SIGSEGV, "loading") is None  # a crash is not memory, whatever the counters say
    assert not watch.ruled_out()


def test_no_cgroup_v2_and_no_proc_gives_no_diagnosis(tmp_path):
    watch = MemoryWatch(cgroup_root=tmp_path / "none", proc_root=tmp_path / "none")
    watch.start()
    assert watch.cgroup is None and watch.diagnose(-signal.SIGKILL, "loading") is None and not watch.ruled_out()


def run_worker(entry, watch, spec=None, timeout=60.0):
    run = WorkerRun(spec or RunSpec(limits=RunLimits(load_timeout_s=60)), lambda event: None,
                    lambda outcome: None, entry=entry, memory=watch)
    run.start()
    outcome = run.wait(timeout)
    assert outcome is not None, "the runner never reported an outcome"
    return outcome


def test_a_worker_the_oom_killer_ends_is_reported_out_of_memory(tmp_path, monkeypatch):
    watch, own, _ = fake_machine(tmp_path)
    monkeypatch.setenv("LABCONSOLE_TEST_OOM_EVENTS", str(own / "memory.events"))
    outcome = run_worker(fault_workers.killed_by_oom, watch)
    assert outcome.status == "failed" and outcome.exitcode == -signal.SIGKILL
    assert outcome.message.startswith("worker ran out of memory during model loading")
    assert "512.0 MiB" in outcome.message


def test_a_worker_killed_by_someone_else_is_not_called_out_of_memory(tmp_path):
    watch, _, _ = fake_machine(tmp_path)
    outcome = run_worker(fault_workers.killed_by_someone, watch)
    assert outcome.message == ("worker killed by SIGKILL during model loading (not for memory: the kernel's OOM-kill "
                               "counters did not rise)")


# ---- time-outs name the flag
def test_a_load_timeout_names_the_flag_and_the_form_label(tmp_path):
    watch, _, _ = fake_machine(tmp_path)
    outcome = run_worker(fault_workers.hangs_loading, watch, RunSpec(limits=RunLimits(load_timeout_s=0.5)))
    assert outcome.status == "failed" and "no event for 0.5 s during model loading" in outcome.message
    assert "--load-timeout S on the command line" in outcome.message and "limits." not in outcome.message
    assert timeout_hint("limits.stall_timeout_s", 60).startswith("--stall-timeout S on the command line, or "
                                                                  "Stall timeout (s) in the run form")


# ---- a dead telemetry sampler
def test_a_sampler_that_dies_is_recorded_with_what_it_delivered():
    from console.telemetry.sampler import Sampler

    rows, died = [], threading.Event()
    sampler = Sampler(rate_hz=20, sources=["psutil"], on_samples=rows.extend, on_death=lambda death: died.set())
    sampler.start()
    try:
        for _ in range(200):
            if rows:
                break
            threading.Event().wait(0.05)
        assert rows, "the sampler delivered no samples"
        os.kill(sampler.pid, signal.SIGKILL)
        assert died.wait(30), "the death of the sampler was not noticed"
        death = sampler.death
        assert death["exitcode"] == -signal.SIGKILL and death["rows"] >= len(rows) > 0
        assert death["first_t_ns"] <= death["last_t_ns"] <= death["t_ns"]
    finally:
        sampler.stop()
    assert sampler.death is not None  # a stop after the death keeps what happened


def test_the_death_note_says_when_and_what_the_samples_cover():
    s = 1_000_000_000
    death = {"exitcode": -9, "t_ns": 103 * s, "first_t_ns": 50 * s, "last_t_ns": 102 * s, "rows": 10}
    note = sampler_death_note(death, 100 * s, [int(100.5 * s), 102 * s], window_ns=(101 * s, 105 * s))
    assert note.startswith("telemetry: the sampler process died 3.0 s into the run (killed by SIGKILL)")
    assert "its samples cover 0.5–2.0 s of the run (25% of the measurement, 1.0–5.0 s), nothing after" in note
    before = sampler_death_note({**death, "t_ns": 90 * s}, 100 * s, [])
    assert "had died (killed by SIGKILL) 10.0 s before this run started" in before and "no telemetry" in before


# ---- a directory is not a model file
def test_a_directory_given_as_a_model_file_is_named_as_one(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"x")
    with pytest.raises(SpecError) as err:
        RunSpec(model=str(folder) + "/", engine="onnxruntime").validate()
    assert err.value.field == "model"
    assert f"{folder}/ is a directory, not a model file; it holds model.onnx" in str(err.value)
    assert f"--model {folder}/model.onnx" in str(err.value)
    with pytest.raises(ModelFileError, match="is a directory, not a model file"):
        read_head(folder)


def test_a_run_whose_sampler_dies_says_so_with_what_was_covered(tmp_path):
    from console.history import HistoryWriter
    from console.run.session import RunSession

    writer = HistoryWriter.open(tmp_path / "history.db")
    killed = []

    def kill_the_sampler_once(event):
        if event["type"] == "samples" and not killed:
            killed.append(session._hub._sampler.pid)  # the run's own hub: its sampler process
            os.kill(killed[0], signal.SIGKILL)

    try:
        session = RunSession(RunSpec(model="mlp", duration_s=1.5, warmup_s=0.1), writer,
                             listener=kill_the_sampler_once, telemetry_hz=10.0)
        session.start()
        record = session.wait(120)
    finally:
        writer.close()
    assert killed and record is not None and record["status"] == "completed"
    notes = [n for n in record["summary"]["warnings"] if n.startswith("telemetry: the sampler process died")]
    assert len(notes) == 1 and "(killed by SIGKILL)" in notes[0] and "nothing after" in notes[0]
    assert notes[0] in record["summary"]["notes"]
