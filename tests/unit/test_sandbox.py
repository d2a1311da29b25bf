"""The worker sandbox (engines.sandbox): once applied, a process writes only in its own folder and opens no TCP.

Landlock cannot be lifted, so each check confines a fresh interpreter (never the test process) and reports
what it could and could not do. Skipped only where the kernel offers no Landlock.
"""

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from engines import sandbox

ABI, WHY = sandbox.available()
needs_landlock = pytest.mark.skipif(ABI is None, reason=f"Landlock not available: {WHY}")

PROBE = r"""
import json, os, socket, sys
from pathlib import Path
from engines import sandbox

outside, port = Path(sys.argv[1]), int(sys.argv[2])
folder = sandbox.work_dir()
state = sandbox.confine(folder)

def attempt(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return type(exc).__name__

def tcp(kind):
    with socket.socket() as s:
        s.settimeout(5)
        s.bind(("127.0.0.1", 0)) if kind == "bind" else s.connect(("127.0.0.1", port))

import tempfile
print(json.dumps({
    "state": state,
    "inside": attempt(lambda: (folder / "inside.txt").write_text("x")),
    "temp_file": attempt(lambda: tempfile.NamedTemporaryFile(delete=False).close()),
    "outside": attempt(lambda: (outside / "outside.txt").write_text("x")),
    "outside_dir": attempt(lambda: (outside / "made").mkdir()),
    "remove_outside": attempt(lambda: (outside / "existing.txt").unlink()),
    "rename_out": attempt(lambda: os.rename(folder / "inside.txt", outside / "moved.txt")),
    "dev_null": attempt(lambda: open(os.devnull, "w").write("x")),
    "read_outside": attempt(lambda: (outside / "existing.txt").read_text()),
    "tcp_connect": attempt(lambda: tcp("connect")),
    "tcp_bind": attempt(lambda: tcp("bind")),
}))
"""


@pytest.fixture
def confined_run(tmp_path):
    """Run PROBE in a fresh interpreter against `tmp_path` (outside its sandbox) and a listening socket."""
    (tmp_path / "existing.txt").write_text("keep me")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path), str(listener.getsockname()[1])],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    yield report
    sandbox.remove_work_dir(report["state"])


@needs_landlock
def test_a_confined_process_writes_only_in_its_folder(confined_run, tmp_path):
    state = confined_run["state"]
    assert state["active"] is True and state["abi"] == ABI
    assert state["summary"].startswith(f"landlock ABI {ABI}: writes only under {state['dir']}")
    assert confined_run["inside"] == "ok" and confined_run["temp_file"] == "ok"  # the temp dir is its folder
    assert confined_run["dev_null"] == "ok" and confined_run["read_outside"] == "ok"
    for attempt in ("outside", "outside_dir", "remove_outside", "rename_out"):
        assert confined_run[attempt] == "PermissionError", attempt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing.txt"]
    assert (tmp_path / "existing.txt").read_text() == "keep me"


@needs_landlock
@pytest.mark.skipif(ABI is not None and ABI < 4, reason="Landlock ABI < 4 has no TCP rules")
def test_a_confined_process_opens_no_tcp(confined_run):
    assert "TCP denied" in confined_run["state"]["summary"]
    assert confined_run["tcp_connect"] == "PermissionError"
    assert confined_run["tcp_bind"] == "PermissionError"


def test_the_test_process_itself_was_never_confined(tmp_path):
    (tmp_path / "still_writable").write_text("yes")


def test_a_denial_in_a_sandbox_is_explained_other_errors_are_not():
    state = {"active": True, "dir": "/tmp/labconsole-worker-x"}
    try:
        try:
            raise PermissionError(13, "Permission denied", "/home/u/PWNED")
        except PermissionError as inner:
            raise RuntimeError("The following operation failed in the TorchScript interpreter.") from inner
    except RuntimeError as exc:
        message = sandbox.explain_denial(exc, state)
    assert message.startswith("stopped by the sandbox: it tried to write outside the worker's own folder "
                              "/tmp/labconsole-worker-x")
    assert "Permission denied" in message and "Fix:" in message
    assert sandbox.explain_denial(ValueError("shape mismatch"), state) == ""
    assert sandbox.explain_denial(PermissionError("Permission denied"), {"active": False}) == ""


def test_only_a_workers_own_folder_is_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox.tempfile, "tempdir", str(tmp_path))
    own = tmp_path / f"{sandbox.WORK_PREFIX}abc"
    (own / "inside").mkdir(parents=True)
    other = tmp_path / "precious"
    other.mkdir()
    elsewhere = tmp_path / "sub" / f"{sandbox.WORK_PREFIX}def"
    elsewhere.mkdir(parents=True)
    for folder in (other, elsewhere, own):
        sandbox.remove_work_dir({"dir": str(folder)})
    sandbox.remove_work_dir(None)
    assert not own.exists() and other.is_dir() and elsewhere.is_dir()


def test_unavailable_sandbox_says_why(monkeypatch):
    monkeypatch.setattr(sandbox.sys, "platform", "darwin")
    assert sandbox.available() == (None, "no Landlock on darwin")
    state = sandbox.confine(Path("/nonexistent"))
    assert state["active"] is False and state["summary"] == "not available (no Landlock on darwin)"
