"""`labconsole self-test` in its own process: the check a lab machine runs after install."""

import json
import subprocess
import sys


def test_self_test_passes_and_proves_the_gui_never_imported_torch(tmp_path):
    out = tmp_path / "selftest"
    done = subprocess.run([sys.executable, "-m", "console", "self-test", "--out", str(out)],
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((out / "result.json").read_text())
    assert result["ok"] is True
    assert result["frozen"] is False
    assert result["gui_heavy_imports"] == []
    assert result["db_integrity"] == "ok"
    torch_run = result["engines"]["torch"]
    assert torch_run["ok"] and torch_run["status"] == "completed"
    assert torch_run["iterations"] > 0 and torch_run["stored_latencies"] == torch_run["iterations"]
    shot = out / "selftest-window.png"
    assert result["screenshot"] == str(shot) and shot.stat().st_size > 10_000


def test_self_test_fails_honestly_when_the_history_is_unusable(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    out = tmp_path / "selftest"
    done = subprocess.run([sys.executable, "-m", "console", "self-test", "--out", str(out), "--db", str(bad)],
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 1
    result = json.loads((out / "result.json").read_text())
    assert result["ok"] is False
    assert any("history database unusable" in e and "not an SQLite database" in e for e in result["errors"])
