"""Standard output that cannot be written (issue 19, case 4): `> /dev/full` is exit 1 with one line, a reader that
left (`| head -1`) is exit 141 and silence, never a traceback or "Exception ignored" at interpreter shutdown.

Real processes for the real streams: stdout redirected INTO the system's /dev/full (a redirect, never an --out
target), and a pipe whose reading end is closed before the command starts, so the first write meets EPIPE every
time (no race with a reader such as `head`).
"""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys

import numpy as np
import pytest

from console.cli import main
from console.cli.stdout_guard import EXIT_BROKEN_PIPE
from console.history import HistoryStore

FULL = "/dev/full"
needs_dev_full = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full on this system")


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A history with one completed run of 2,000 iterations (its JSON export is well over one pipe buffer)."""
    path = tmp_path_factory.mktemp("stdout") / "history.db"
    with HistoryStore(path) as store:
        run_id = store.create_run({"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1})
        starts = np.arange(2000, dtype=np.int64) * 1_000_000
        store.add_latencies(run_id, starts, np.full(2000, 900_000, dtype=np.int64))
        store.finish_run(run_id, "completed", {"latency_ms": {"p50": 0.9}, "iterations": 2000})
    return path, run_id


def labconsole(*args, stdout):
    env = dict(os.environ)
    env.pop("LABCONSOLE_DB", None)
    return subprocess.run([sys.executable, "-m", "console", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=120, env=env)


def into_dev_full(*args):
    with open(FULL, "w") as full:
        return labconsole(*args, stdout=full)


def into_closed_pipe(*args):
    reader, writer = os.pipe()
    os.close(reader)  # the reader left before the first byte: every write is EPIPE
    try:
        return labconsole(*args, stdout=writer)
    finally:
        os.close(writer)


def assert_one_line_no_space(done):
    assert done.returncode == 1, done.stderr
    assert done.stderr == "labconsole: error: cannot write to standard output: No space left on device\n"


@needs_dev_full
@pytest.mark.parametrize("argv", [["models", "--json"], ["models"], ["--help"], ["history", "--help"]])
def test_a_full_standard_output_is_one_line_and_exit_1(argv):
    assert_one_line_no_space(into_dev_full(*argv))


@needs_dev_full
def test_history_and_export_into_a_full_disk(history):
    path, run_id = history
    assert_one_line_no_space(into_dev_full("history", "--json", "--db", str(path)))
    assert_one_line_no_space(into_dev_full("history", "--db", str(path)))
    assert_one_line_no_space(into_dev_full("export", run_id, "--db", str(path)))
    assert_one_line_no_space(into_dev_full("export", run_id[:8], "--format", "csv", "--db", str(path)))


@pytest.mark.parametrize("argv", [["models", "--json"], ["models"]])
def test_a_reader_that_left_is_quiet_exit_141(argv):
    done = into_closed_pipe(*argv)
    assert (done.returncode, done.stderr) == (EXIT_BROKEN_PIPE, "")


def test_export_to_a_reader_that_left(history):
    path, run_id = history
    for fmt in ("json", "csv", "trace"):
        done = into_closed_pipe("export", run_id, "--format", fmt, "--db", str(path))
        assert (done.returncode, done.stderr) == (EXIT_BROKEN_PIPE, ""), fmt


# ---- In process: what main() itself promises a caller
class _Failing(io.StringIO):
    """A standard output whose writes (or only its flush) fail like a full disk."""

    def __init__(self, on_write: bool) -> None:
        super().__init__()
        self.on_write = on_write

    def write(self, text):
        if self.on_write:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(text)

    def flush(self):
        raise OSError(errno.EIO, os.strerror(errno.EIO))


@pytest.mark.parametrize(("on_write", "reason"), [(True, "No space left on device"), (False, "Input/output error")])
def test_main_returns_1_when_stdout_fails_on_write_or_only_on_the_final_flush(monkeypatch, capsys, on_write, reason):
    capsys.readouterr()
    failing = _Failing(on_write)
    monkeypatch.setattr(sys, "stdout", failing)
    assert main(["models", "--json"]) == 1
    assert sys.stdout is failing  # given back as it was
    assert capsys.readouterr().err == f"labconsole: error: cannot write to standard output: {reason}\n"


def test_a_commands_own_file_error_is_not_blamed_on_stdout(monkeypatch):
    """Only an error standard output raised is reported as one: any other OSError unwinds unchanged."""
    from console.cli import models_cmd

    def broken(args):
        raise PermissionError(errno.EACCES, "not stdout")

    monkeypatch.setattr(models_cmd, "main", broken)
    with pytest.raises(PermissionError, match="not stdout"):
        main(["models"])


def test_ctrl_c_in_a_command_is_exit_130_and_one_line(monkeypatch, capsys):
    from console.cli import models_cmd

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(models_cmd, "main", interrupted)
    assert main(["models"]) == 130
    assert capsys.readouterr().err == "labconsole: interrupted\n"
