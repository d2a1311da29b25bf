"""`labconsole storage checkpoint|coldstart` end to end: flags → spawned worker → stored run → --json; a hostile
file is refused inside the worker (the marker its unpickling would create never appears); a TorchScript file runs
only with --trust-code, and then in the sandboxed worker."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


class _Marker:
    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def _cli(*argv: str, db: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    return subprocess.run([sys.executable, "-m", "console", "storage", *argv, "--db", str(db), "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)


def test_checkpoint_from_the_cli_is_stored_with_its_formats(tmp_path):
    scratch = tmp_path / "ckpt"
    scratch.mkdir()
    done = _cli("checkpoint", "--size", "8b", "--shard-gb", "0.002", "--formats", "torch,safetensors",
                "--dir", str(scratch), db=tmp_path / "h.sqlite")
    assert done.returncode == 0, done.stderr[-2000:]
    document = json.loads(done.stdout)
    assert document["status"] == "completed" and document["run_id"]
    result = document["result"]
    assert result["kind"] == "checkpoint" and set(result["formats"]) == {"torch", "safetensors"}
    assert result["state"]["scaled"]["full_bytes"] > 1e9 and result["figures"]["torch_save_gb_s"] > 0
    assert list(scratch.iterdir()) == []


def test_coldstart_refuses_a_pickle_in_the_worker_and_it_never_runs(tmp_path):
    marker = tmp_path / "pickle_ran"
    evil = tmp_path / "model.onnx"
    evil.write_bytes(pickle.dumps(_Marker(marker)))
    done = _cli("coldstart", "--file", str(evil), db=tmp_path / "h.sqlite")
    assert done.returncode == 1
    assert "pickled Python object" in (done.stderr + done.stdout)
    assert not marker.exists()


def test_torchscript_needs_trust_code_and_then_runs_sandboxed(tmp_path):
    script = tmp_path / "tiny_script.pt"
    torch.jit.script(torch.nn.Linear(8, 4)).save(str(script))
    refused = _cli("coldstart", "--file", str(script), "--modes", "buffered", db=tmp_path / "h.sqlite")
    assert refused.returncode == 1 and "--trust-code" in (refused.stderr + refused.stdout)
    trusted = _cli("coldstart", "--file", str(script), "--modes", "buffered", "--trust-code",
                   db=tmp_path / "h.sqlite")
    assert trusted.returncode == 0, trusted.stderr[-2000:]
    result = json.loads(trusted.stdout)["result"]
    (stage,) = result["stages"]
    assert result["file"]["format"] == "torchscript" and stage["deserialize_s"] > 0
    assert stage["first_inference_s"] is None and "declares no input shapes" in stage["first_inference_note"]
    assert result["sandbox"] is not None
