"""`export --out` and `report --out` against what an adversarial user (or root in CI) puts at the path.

Issue 19 case 1: the whole-file rename replaced whatever was at --out, so `--out /dev/full` as root turned the
device node into a regular file and said "exported … exit 0". Case 4: a 300-character name crashed `report` with
OSError (Errno 36). Real CLI processes, real exit codes; the history is written straight into a HistoryStore
(drawn latencies) because what is measured does not matter here. Device nodes are made in tmp_path (as root):
makedev(1, 7) is a /dev/full (every write fails with ENOSPC), never the system's own node.
"""

import json
import os
import re
import select
import stat
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gui"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import week_history  # noqa: E402
from special_files import fifo_at  # noqa: E402

from console.history import HistoryStore  # noqa: E402

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making device nodes needs root")
LONG = "x" * 300


def command(*args, db):
    return [sys.executable, "-m", "console", *args, "--db", str(db)]


def environment():
    env = {k: v for k, v in os.environ.items() if k not in ("LABCONSOLE_DB", "DISPLAY", "WAYLAND_DISPLAY")}
    env["QT_QPA_PLATFORM"] = "offscreen"
    return env


def labconsole(*args, db, timeout=120):
    return subprocess.run(command(*args, db=db), capture_output=True, timeout=timeout, env=environment())


def with_fifo_reader(fifo, *args, db, timeout=120):
    """Run the CLI while this process reads `fifo`; the reader is open before the CLI starts (no race)."""
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    received = bytearray()
    try:
        proc = subprocess.Popen(command(*args, db=db), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=environment())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            select.select([reader], [], [], 0.05)
            try:
                chunk = os.read(reader, 65536)
            except BlockingIOError:  # a writer is there, nothing to read yet
                continue
            if chunk:
                received.extend(chunk)
            elif proc.poll() is not None:  # no writer and the CLI is gone: take what is left, then stop
                while chunk := os.read(reader, 65536):
                    received.extend(chunk)
                break
            else:  # no writer yet
                time.sleep(0.01)
        out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(reader)
    return proc.returncode, out, err.decode(), bytes(received)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    db = tmp_path_factory.mktemp("out-paths") / "history.db"
    rng = np.random.default_rng(19)
    with HistoryStore(db) as store:
        run_id = week_history.store_run(store, week_history.spec(), datetime(2026, 11, 2, 9, tzinfo=timezone.utc),
                                        1.0, rng)
    return db, run_id


@pytest.fixture(scope="module")
def exported(history, tmp_path_factory):
    """The run exported to a plain file: what every other target must receive byte for byte."""
    db, run_id = history
    out = tmp_path_factory.mktemp("plain") / "run.json"
    done = labconsole("export", run_id, "--out", str(out), db=db)
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


def one_line(stderr):
    text = stderr.decode() if isinstance(stderr, bytes) else stderr
    lines = text.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("labconsole: error: ") and "Traceback" not in text, text
    return lines[0]


@needs_root
@pytest.mark.parametrize("cmd", ["export", "report"])
def test_a_full_device_at_out_is_a_failure_and_stays_a_device(history, tmp_path, cmd):
    db, run_id = history
    node = tmp_path / "full"
    os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 7))
    done = labconsole(cmd, run_id, "--out", str(node), db=db)
    assert done.returncode == 1, done.stderr
    assert "No space left on device" in one_line(done.stderr) and b"exported" not in done.stderr
    assert b"report written" not in done.stdout
    assert stat.S_ISCHR(os.lstat(node).st_mode) and os.listdir(tmp_path) == ["full"]


@needs_root
def test_a_null_device_and_a_link_to_it_are_written_into(history, tmp_path):
    db, run_id = history
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    (tmp_path / "link.json").symlink_to(node)
    for path in (node, tmp_path / "link.json"):
        done = labconsole("export", run_id, "--out", str(path), db=db)
        assert done.returncode == 0 and b"exported 1 run(s)" in done.stderr, done.stderr
    assert stat.S_ISCHR(os.lstat(node).st_mode) and (tmp_path / "link.json").is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["link.json", "null"]


@pytest.mark.parametrize("cmd", ["export", "report"])
@pytest.mark.parametrize("via_link", [False, True])
def test_a_fifo_without_a_reader_is_refused_at_once(history, tmp_path, cmd, via_link):
    db, run_id = history
    fifo, path = fifo_at(tmp_path, via_link)
    done = labconsole(cmd, run_id, "--out", str(path), db=db, timeout=60)  # before: the rename replaced it
    assert done.returncode == 2 and "is a FIFO with no reader" in one_line(done.stderr)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and (not via_link or path.is_symlink())
    assert sorted(os.listdir(tmp_path)) == sorted(["fifo"] + (["link"] if via_link else []))


@pytest.mark.parametrize("via_link", [False, True])
def test_a_fifo_with_a_reader_receives_the_export(history, exported, tmp_path, via_link):
    db, run_id = history
    fifo, path = fifo_at(tmp_path, via_link)
    code, _, err, received = with_fifo_reader(fifo, "export", run_id, "--out", str(path), db=db)
    assert code == 0 and "exported 1 run(s)" in err, err
    assert received == exported
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and (not via_link or path.is_symlink())


def test_a_report_goes_into_a_fifo_as_html(history, tmp_path):
    db, run_id = history
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, out, err, received = with_fifo_reader(fifo, "report", run_id, "--out", str(fifo), db=db)
    assert code == 0, err
    assert received.startswith(b"<!DOCTYPE html>") and received.rstrip().endswith(b"</html>")
    assert b"report written to" in out and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_standard_output_by_dash_dev_stdout_and_a_link_to_fd_1(history, exported, tmp_path):
    db, run_id = history
    link = tmp_path / "out.json"
    link.symlink_to("/proc/self/fd/1")
    for out in ("-", "/dev/stdout", str(link)):
        done = labconsole("export", run_id, "--out", out, db=db)
        assert done.returncode == 0, done.stderr
        assert done.stdout == exported, out
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    assert os.listdir(tmp_path) == ["out.json"]


def test_a_report_on_standard_output_is_the_file_report(history, tmp_path):
    db, run_id = history
    done = labconsole("report", run_id, "--out", str(tmp_path / "r.html"), db=db)
    assert done.returncode == 0, done.stderr
    streamed = labconsole("report", run_id, "--out", "-", db=db)
    assert streamed.returncode == 0, streamed.stderr
    # the finding goes to standard error: standard output carries only the page
    assert b"report written to standard output" in streamed.stderr and streamed.stdout.startswith(b"<!DOCTYPE")

    def undated(page):
        return re.sub(rb"generated [0-9T:+-]+", b"generated T", page)

    assert undated(streamed.stdout) == undated((tmp_path / "r.html").read_bytes())
    pdf = labconsole("report", run_id, "--out", "-", "--format", "pdf", db=db)
    assert pdf.returncode == 0 and pdf.stdout.startswith(b"%PDF"), pdf.stderr
    both = labconsole("report", run_id, "--out", "-", "--json", db=db)
    assert both.returncode == 2 and "both write to standard output" in one_line(both.stderr) and both.stdout == b""
    clash = labconsole("report", run_id, "--out", str(tmp_path / "r2.pdf"), "--format", "html", db=db)
    assert clash.returncode == 2 and "make them agree" in one_line(clash.stderr)
    assert os.listdir(tmp_path) == ["r.html"]


@pytest.mark.parametrize("cmd, name", [("export", LONG), ("report", LONG + ".html")])
def test_a_name_too_long_is_a_usage_error_before_the_history_is_opened(tmp_path, cmd, name):
    """The history does not exist: a check after opening it would say so (exit 1); the name is refused first."""
    db = tmp_path / "none.db"
    done = labconsole(cmd, "abcd1234", "--out", str(tmp_path / name), db=db)
    assert done.returncode == 2 and "more than the 255 this file system allows" in one_line(done.stderr)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("cmd, name", [("export", "r.json"), ("report", "r.html")])
def test_a_missing_folder_is_a_usage_error_with_the_fix(history, tmp_path, cmd, name):
    db, run_id = history
    done = labconsole(cmd, run_id, "--out", str(tmp_path / "missing" / name), db=db)
    assert done.returncode == 2 and "mkdir -p" in one_line(done.stderr)
    assert os.listdir(tmp_path) == []


def test_a_symlink_to_a_file_is_still_replaced_not_followed(history, exported, tmp_path):
    db, run_id = history
    real = tmp_path / "real.json"
    real.write_text("someone else's file\n")
    link = tmp_path / "out.json"
    link.symlink_to(real)
    done = labconsole("export", run_id, "--out", str(link), db=db)
    assert done.returncode == 0, done.stderr
    assert not link.is_symlink() and link.read_bytes() == exported and real.read_text() == "someone else's file\n"
    assert json.loads(exported)["runs"][0]["run_id"] == run_id


def test_a_report_named_in_another_locale_is_written_and_said_on_a_strict_stdout(history, tmp_path):
    db, run_id = history
    name = os.fsdecode(b"caf\xe9\xff.html")
    env = {**environment(), "PYTHONIOENCODING": "utf-8:strict"}  # as in a UTF-8 terminal
    done = subprocess.run(command("report", run_id, "--out", str(tmp_path / name), db=db), capture_output=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("utf-8").rstrip().endswith("caf\\xe9\\xff.html")
    assert os.listdir(os.fsencode(tmp_path)) == [b"caf\xe9\xff.html"]


@pytest.mark.parametrize("cmd", ["export", "report"])
def test_out_naming_the_history_itself_is_refused_and_the_history_kept(history, cmd):
    db, run_id = history
    before = db.read_bytes()
    done = labconsole(cmd, run_id, "--out", str(db), db=db)  # before: the rename put JSON where the runs were
    assert done.returncode == 2, done.stderr
    assert "is the history database" in one_line(done.stderr)
    assert db.read_bytes() == before
