"""Node labels, selectors, the token and the `ray start` line: pure parts of console.cluster (no Ray needed)."""

import os
import re
import subprocess
import sys

import pytest

from console.cluster import auth, facts, label_key
from console.cluster.dispatch import no_node_message
from console.cluster.node import start_command

VALID = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?")
TARGETS = [{"id": "cpu", "kind": "cpu", "available": True, "name": "Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.0GHz",
            "isa": ["avx2", "avx512f", "amx_int8"], "memory_bytes": 64 * 2**30, "arch": "x86_64",
            "engines": ["torch", "onnxruntime"]},
           {"id": "cuda:0", "kind": "gpu", "available": True, "name": "NVIDIA H200", "engines": ["torch"]},
           {"id": "mps", "kind": "gpu", "available": False, "name": "Apple GPU (MPS)", "engines": []}]


def test_labels_say_what_the_machine_is_in_valid_label_syntax():
    labels = facts.labels_from(TARGETS, {"hostname": "lab box #3", "host_id": "x"}, "0.1.0+dev")
    assert labels["labconsole/accel"] == "nvidia-h200" and labels["labconsole/gpus"] == "1"
    assert labels["labconsole/isa"] == "amx_int8" and labels["labconsole/memory-gib"] == "64"
    assert labels["labconsole/target.cuda-0"] == "yes" and "labconsole/target.mps" not in labels
    assert labels["labconsole/engine.onnxruntime"] == "yes"
    for value in labels.values():
        assert VALID.fullmatch(value), value


def test_a_selector_always_asks_for_the_runs_target_and_engine():
    selector = facts.selector_for({"target": "cuda:0", "engine": "torch"}, {"accel": "nvidia-h200"})
    assert selector == {"labconsole/accel": "nvidia-h200", "labconsole/target.cuda-0": "yes",
                        "labconsole/engine.torch": "yes"}
    assert label_key("node") == "ray.io/node-id"
    labels = facts.labels_from(TARGETS, {"hostname": "a", "host_id": "x"}, "0.1.0")
    assert facts.matches(labels, selector)
    assert not facts.matches(labels, {**selector, "labconsole/accel": "cpu"})
    assert facts.matches(labels, {"labconsole/accel": "in(cpu, nvidia-h200)"})
    assert facts.matches(labels, {"labconsole/accel": "!cpu"})


def test_no_node_message_lists_the_labels_that_exist():
    nodes = [{"labels": {"labconsole/accel": "cpu"}, "resources": {"labconsole_run": 1}},
             {"labels": {"labconsole/accel": "nvidia-h200"}, "resources": {"labconsole_run": 1}}]
    text = no_node_message({"labconsole/accel": "mi300"}, nodes)
    assert "accel=mi300" in text and "accel=cpu|nvidia-h200" in text


def test_ray_start_binds_to_loopback_with_labels_and_a_run_slot():
    cmd = start_command(head=True, port=7000, labels={"labconsole/accel": "cpu"})
    assert cmd[cmd.index("--node-ip-address") + 1] == "127.0.0.1"
    assert "--head" in cmd and cmd[cmd.index("--port") + 1] == "7000"
    assert cmd[cmd.index("--labels") + 1] == "labconsole/accel=cpu" and "labconsole_run" in " ".join(cmd)


def test_no_token_means_no_cluster_and_a_created_token_is_private(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "token"))
    with pytest.raises(Exception, match="no Ray cluster token"):
        auth.require_token()
    path = auth.create_token()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    token = path.read_text()
    assert auth.require_token() == f"file {path}" and token not in auth.require_token()
    assert auth.redact(f"error with {token}") == "error with ***"


def test_importing_the_cli_does_not_import_ray():
    code = "import sys, console.cli; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert out.stdout.strip() == "False"
