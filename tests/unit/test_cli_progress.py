"""The live progress line of run/analyze/sweep: on a terminal one stderr line rewritten in place with phase,
elapsed and time left; nothing when stderr is not a terminal or with --json. Fake clocks, a real pty."""

from __future__ import annotations

import io
import os
import re
import select
import subprocess
import sys
import types

import pytest

from console.cli.progress import ProgressLine, RunProgress, SweepProgress, live_listener


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _spec(**kw):
    options = types.SimpleNamespace(until_stable=kw.pop("until_stable", False),
                                    max_duration_s=kw.pop("max_duration_s", None))
    values = {"warmup_s": 1.0, "duration_s": 5.0, "iterations": None, "scenario_options": options, **kw}
    return types.SimpleNamespace(**values)


def test_time_left_follows_the_phases_of_a_timed_run():
    clock = Clock()
    progress = RunProgress(_spec(), "run mlp", clock=clock)
    progress.on_event({"type": "phase", "phase": "loading"})
    clock.now += 2
    assert progress.text() == "run mlp · loading · 2.0 s elapsed · about 6.0 s left after the load"
    progress.on_event({"type": "phase", "phase": "warmup"})
    progress.on_event({"type": "progress", "phase": "warmup", "fraction": 0.5, "iterations": 9, "elapsed_s": 0.5})
    assert progress.remaining_s() == (5.5, False)
    progress.on_event({"type": "phase", "phase": "measuring"})
    progress.on_event({"type": "progress", "phase": "measuring", "fraction": 0.6, "iterations": 900,
                       "elapsed_s": 3.0})
    clock.now += 4
    assert progress.text() == "run mlp · measuring · 6.0 s elapsed · about 2.0 s left"
    progress.on_event({"type": "phase", "phase": "profiling"})
    assert progress.remaining_s() == (None, False) and progress.text().endswith("elapsed")


def test_iterations_are_timed_at_the_rate_so_far():
    progress = RunProgress(_spec(iterations=1000), clock=Clock())
    assert progress.remaining_s() == (None, False)  # nothing measured yet: no rate to go by
    progress.on_event({"type": "phase", "phase": "measuring"})
    progress.on_event({"type": "progress", "phase": "measuring", "fraction": 0.25, "iterations": 250,
                       "elapsed_s": 2.0})
    assert progress.remaining_s() == (pytest.approx(6.0), False)
    assert "measuring (250 of 1,000)" in progress.text()


def test_until_stable_past_the_duration_says_at_most_the_cap():
    progress = RunProgress(_spec(until_stable=True, max_duration_s=20.0), clock=Clock())
    assert progress.cap_s == 20.0
    progress.on_event({"type": "phase", "phase": "measuring"})
    progress.on_event({"type": "progress", "phase": "measuring", "fraction": 0.9, "iterations": 5000,
                       "elapsed_s": 7.0, "stabilising": {"windows": 14, "spread": 0.12, "cap_s": 20.0}})
    assert progress.remaining_s() == (13.0, True)
    text = progress.text()
    assert "measuring until stable (window 14, spread 12%)" in text and "at most 13 s left" in text
    progress.on_event({"type": "progress", "phase": "measuring", "fraction": 0.9, "iterations": 6000,
                       "elapsed_s": 8.0, "stabilising": {"windows": 16, "spread": 0.31, "cap_s": 20.0,
                                                         "typical_spread": 0.14, "allowance": 0.24}})
    assert "measuring until stable (window 16, typical spread 14% of 24% allowed)" in progress.text()
    default_cap = RunProgress(_spec(until_stable=True), clock=Clock())
    assert default_cap.cap_s == 20.0  # 4 × --duration


def test_a_sweep_adds_the_points_still_to_go():
    clock = Clock()
    sweep = SweepProgress({"warmup_s": 1.0, "duration_s": 4.0}, clock=clock)
    sweep.on_point({"type": "sweep_started", "total": 3})
    sweep.on_event(0, {"type": "phase", "phase": "measuring"})  # a point's events may come before point_started
    assert sweep.text().startswith("[1/3] · measuring")
    sweep.on_point({"type": "point_started", "index": 0, "total": 3, "label": "b1"})
    sweep.on_event(0, {"type": "progress", "phase": "measuring", "fraction": 0.5, "elapsed_s": 2.0})
    assert sweep.text() == "[1/3] b1 · measuring · 0.0 s elapsed · about 12 s left"  # 2 s + 2 points × 5 s planned
    clock.now += 8
    sweep.on_point({"type": "point_finished", "index": 0, "total": 3, "result": {}})
    sweep.on_point({"type": "point_started", "index": 1, "total": 3, "label": "b2"})
    assert sweep.text() == "[2/3] b2 · starting · 8.0 s elapsed · about 16 s left"  # 2 points × the 8 s one took
    clock.now += 3
    assert sweep.text().endswith("11 s elapsed · about 13 s left")  # this point: 8 − 3 s, then one more of 8 s


def test_nothing_is_written_when_stderr_is_not_a_terminal_or_with_json():
    stream = io.StringIO()
    line = ProgressLine.for_command(False, stream)
    assert not line.enabled
    line.show("measuring")
    line.start(lambda: "measuring")
    line.close()
    assert stream.getvalue() == ""
    plain = []
    listener, line = live_listener(_spec(), False, plain.append, stream=stream)
    listener({"type": "phase", "phase": "loading"})
    line.close()
    assert plain == [{"type": "phase", "phase": "loading"}] and stream.getvalue() == ""  # the plain log lines
    listener, _ = live_listener(_spec(), True, plain.append, stream=stream)
    assert listener is None  # --json: no listener at all


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pty")
def test_on_a_terminal_one_line_is_rewritten_in_place():
    master, slave = os.openpty()
    stream = os.fdopen(slave, "w")
    try:
        assert not ProgressLine.for_command(True, stream).enabled  # --json: off even on a terminal
        line = ProgressLine.for_command(False, stream)
        assert line.enabled
        line.show("loading · 1.0 s elapsed")
        line.show("measuring")
        line.close()
        written = _read(master)
    finally:
        stream.close()
        os.close(master)
    assert written == ("\rloading · 1.0 s elapsed" + "\rmeasuring" + " " * 14 + "\r" + " " * 9 + "\r")
    assert "\n" not in written


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pty")
def test_a_real_run_on_a_terminal_shows_the_line_and_a_pipe_gets_none(tmp_path):
    command = [sys.executable, "-m", "console", "run", "--model", "mlp", "--duration", "1", "--warmup", "0.2",
               "--no-telemetry", "--db", str(tmp_path / "h.db")]
    env = {k: v for k, v in os.environ.items() if k != "LABCONSOLE_DB"}
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, text=True, env=env)
        os.close(slave)
        chunks = []
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                break
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        out, _ = proc.communicate(timeout=120)
    finally:
        os.close(master)
    on_terminal = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0, on_terminal
    assert "\r" in on_terminal and "run mlp · measuring" in on_terminal and "left" in on_terminal
    assert not re.search(r"  … measuring\r?\n", on_terminal)  # the live line replaces the plain phase lines
    assert out.startswith("run ")  # stdout keeps the report, untouched
    piped = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert piped.returncode == 0 and "\r" not in piped.stderr and "  … measuring\n" in piped.stderr


def _read(fd: int) -> str:
    data = b""
    while select.select([fd], [], [], 0.2)[0]:
        data += os.read(fd, 65536)
    return data.decode()
