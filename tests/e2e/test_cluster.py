"""Runs dispatched to lab nodes through Ray, on one machine: a head and fake nodes (ray.cluster_utils.Cluster).

The cluster starts once for the module (a head that takes no runs, two nodes with different labels and host
names); each test checks what a user sees: where the run ran, that events stream live, cancel, a killed worker,
a lost node, an unsatisfiable label, a missing token, and that the token never reaches the history or the logs.
"""

from __future__ import annotations

import functools
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lab_cluster import TOKEN, lab_cluster, node_args  # noqa: E402 — before Ray: it reads the token once

ray = pytest.importorskip("ray", reason="the cluster extra is not installed (pip install 'lab-console[cluster]')")


from console.cluster.dispatch import RemoteRun  # noqa: E402
from console.history import HistoryStore, HistoryWriter  # noqa: E402
from console.run.session import RunSession  # noqa: E402
from engines.spec import RunSpec  # noqa: E402


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    temp = tmp_path_factory.mktemp("ray")
    with lab_cluster(str(temp)) as made:
        yield {**made, "temp": temp}


def _spec(**kw) -> RunSpec:
    base = {"model": "mlp", "duration_s": 1.0, "warmup_s": 0.2}
    base.update(kw)
    return RunSpec(**base)


def _session(lab, tmp_path, spec, on=None, listener=None, **remote_kw):
    writer = HistoryWriter.open(tmp_path / "h.db")
    remote = functools.partial(RemoteRun, address=lab["address"], on=on, **remote_kw)
    return RunSession(spec, writer, listener=listener, remote=remote), writer


def test_a_run_dispatched_by_label_streams_live_and_lands_under_the_nodes_host(lab, tmp_path):
    seen: list[tuple[int, dict]] = []
    session, writer = _session(lab, tmp_path, _spec(), on={"accel": "fake-b"},
                               listener=lambda e: seen.append((time.perf_counter_ns(), e)))
    try:
        session.start()
        record = session.wait(180)
    finally:
        writer.close()
    assert record is not None and record["status"] == "completed", record and record["message"]
    node = record["environment"]["node"]
    assert node["labels"]["labconsole/accel"] == "fake-b" and node["host"]["hostname"] == "lab-b"
    kinds = [e["type"] for _, e in seen]
    assert kinds.index("node") < kinds.index("hello") < kinds.index("latencies") < kinds.index("finished")
    # live: the first latency batch reached the console before the node had even finished measuring
    first_latencies = next(t for t, e in seen if e["type"] == "latencies")
    finishing = next(e["t_ns"] for _, e in seen if e["type"] == "phase" and e["phase"] == "finishing")
    assert first_latencies < finishing
    assert sum(1 for k in kinds if k == "latencies") > 1
    assert any(e["type"] == "samples" for _, e in seen)  # the node's telemetry, streamed with the run
    assert record["summary"]["iterations"] > 0
    with HistoryStore(tmp_path / "h.db") as store:
        run = store.get_run(record["run_id"])
        assert run["hostname"] == "lab-b" and run["host_id"] == node["host"]["host_id"]
        assert store.latency_count(record["run_id"]) == record["summary"]["iterations"]
        assert store.samples(record["run_id"])


def test_cancel_stops_the_remote_worker_and_keeps_what_was_measured(lab, tmp_path):
    started = threading.Event()
    session, writer = _session(lab, tmp_path, _spec(duration_s=60.0), on={"accel": "fake-a"},
                               listener=lambda e: e["type"] == "latencies" and started.set())
    try:
        session.start()
        assert started.wait(120), "no latencies arrived"
        session.cancel()
        record = session.wait(60)
    finally:
        writer.close()
    assert record is not None and record["status"] == "cancelled"
    assert "ray.cancel" in record["message"] and record["summary"]["iterations"] > 0


def test_a_killed_worker_ends_the_run_failed_with_the_cause(lab, tmp_path):
    nodes: list[dict] = []
    measuring = threading.Event()

    def listen(event):
        if event["type"] == "node":
            nodes.append(event)
        if event["type"] == "latencies":
            measuring.set()

    session, writer = _session(lab, tmp_path, _spec(duration_s=60.0), on={"accel": "fake-a"}, listener=listen)
    try:
        session.start()
        assert measuring.wait(120)
        pid = session._worker.node["task_pid"]
        os.kill(pid, signal.SIGKILL)  # the Ray worker process running the task
        record = session.wait(90)
    finally:
        writer.close()
    assert record is not None and record["status"] == "failed"
    assert "died" in record["message"] or "lost" in record["message"], record["message"]
    assert "lab-a" in record["message"] and "not retried" in record["message"]


def test_a_node_removed_mid_run_ends_the_run_failed_with_the_cause(lab, tmp_path):
    cluster = lab["cluster"]
    node = cluster.add_node(**node_args("fake-c", "lab-c"))
    cluster.wait_for_nodes()
    measuring = threading.Event()
    session, writer = _session(lab, tmp_path, _spec(duration_s=60.0), on={"accel": "fake-c"},
                               listener=lambda e: e["type"] == "latencies" and measuring.set())
    try:
        session.start()
        assert measuring.wait(120)
        cluster.remove_node(node, allow_graceful=False)
        record = session.wait(120)
    finally:
        writer.close()
    assert record is not None and record["status"] == "failed"
    assert "lab-c" in record["message"] and ("lost" in record["message"] or "died" in record["message"]), \
        record["message"]


def test_a_label_no_node_has_fails_with_the_labels_that_exist(lab, tmp_path):
    session, writer = _session(lab, tmp_path, _spec(), on={"accel": "h200"})
    try:
        session.start()
        record = session.wait(60)
    finally:
        writer.close()
    assert record["status"] == "failed"
    assert "accel=h200" in record["message"] and "fake-a" in record["message"] and "fake-b" in record["message"]


def test_a_node_refuses_a_model_file_it_cannot_read(lab, tmp_path):
    missing = tmp_path / "model.onnx"
    missing.write_bytes(b"not really onnx")
    session, writer = _session(lab, tmp_path, _spec(model=str(missing), engine="onnxruntime"),
                               on={"accel": "fake-a"})
    missing.unlink()  # here the spec was valid; the node (one machine in this test) no longer has the file
    try:
        session.start()
        record = session.wait(120)
    finally:
        writer.close()
    assert record["status"] == "failed"
    assert "not readable on node" in record["message"] and str(missing) in record["message"]


def _cli(args, env, timeout=240):
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_the_cli_runs_on_a_node_lists_the_cluster_and_never_writes_the_token(lab, tmp_path):
    db = tmp_path / "cli.db"
    env = {**os.environ, "LABCONSOLE_DB": str(db)}
    done = _cli(["run", "--model", "mlp", "--duration", "1", "--cluster", lab["address"], "--on", "accel=fake-a",
                 "--json"], env)
    assert done.returncode == 0, done.stderr
    import json

    report = json.loads(done.stdout)
    assert report["node"]["hostname"] == "lab-a" and report["status"] == "completed"
    listing = _cli(["cluster", "--address", lab["address"], "--json"], env)
    assert listing.returncode == 0, listing.stderr
    nodes = json.loads(listing.stdout)["nodes"]
    accels = {n["labels"].get("accel") for n in nodes}
    assert {"fake-a", "fake-b"} <= accels
    worker = next(n for n in nodes if n["labels"].get("accel") == "fake-a")
    assert any(t["id"] == "cpu" and t["available"] for t in worker["targets"])
    # the token: not in the history, not in what the commands printed, not in the node's logs
    for text in (done.stdout, done.stderr, listing.stdout, listing.stderr):
        assert TOKEN not in text
    assert TOKEN.encode() not in db.read_bytes()
    for path in Path(lab["temp"]).rglob("*"):
        if path.is_file() and path.suffix in (".log", ".out", ".err", ".txt", ".json"):
            assert TOKEN.encode() not in path.read_bytes(), path


def test_without_a_token_the_cluster_refuses_the_console(lab, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}
    env["HOME"] = str(tmp_path)  # no ~/.ray/auth_token either
    done = _cli(["run", "--model", "mlp", "--cluster", lab["address"]], env, timeout=120)
    assert done.returncode != 0 and "no Ray cluster token" in done.stderr
    # and a wrong token is refused by Ray itself
    env["RAY_AUTH_TOKEN"] = secrets.token_hex(16)
    done = _cli(["cluster", "--address", lab["address"], "--no-targets"], env, timeout=120)
    assert done.returncode != 0 and "could not join" in done.stderr, done.stderr
    assert env["RAY_AUTH_TOKEN"] not in done.stderr


def test_a_model_file_sent_by_content_hash_runs_on_the_node(lab, tmp_path):
    import hashlib

    import torch

    class Tiny(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x @ x.T)

    path = tmp_path / "tiny.pt2"
    torch.export.save(torch.export.export(Tiny(), (torch.randn(4, 8),)), str(path))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    session, writer = _session(lab, tmp_path, _spec(model=str(path), engine="torch"), on={"accel": "fake-b"},
                               send_model=True)
    try:
        session.start()
        record = session.wait(180)
    finally:
        writer.close()
    assert record["status"] == "completed", record["message"]
    copies = list(Path(lab["temp"]).glob(f"labconsole-node-lab-b-*/labconsole/received-models/{digest}/tiny.pt2"))
    assert len(copies) == 1 and copies[0].read_bytes() == path.read_bytes()
    with HistoryStore(tmp_path / "h.db") as store:
        assert store.get_run(record["run_id"])["spec"]["model"] == str(path)  # the history keeps the user's path


def test_machine_cards_are_measured_on_each_node_and_kept_under_its_host(lab, tmp_path):
    import json

    db = tmp_path / "cards.db"
    env = {**os.environ, "LABCONSOLE_DB": str(db)}
    done = _cli(["machine", "--cluster", lab["address"], "--quick", "--repeats", "1", "--json"], env, timeout=600)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["nodes"]
    assert sorted(r["card"]["host"] for r in results) == ["lab-a", "lab-b"]
    with HistoryStore(db) as store:
        for result in results:
            kept = store.machine_cards(hostname=result["card"]["host"], target="cpu")
            assert [c["card_id"] for c in kept] == [result["card"]["card_id"]]
            assert kept[0]["peak_flops"]["fp32"] > 0
            (host_id,), = store.db.execute("SELECT host_id FROM machine_cards WHERE card_id = ?",
                                           [kept[0]["card_id"]]).fetchall()
            assert host_id == result["host"]["host_id"]  # under the node's host, not this console's
            assert store.db.execute("SELECT hostname FROM hosts WHERE host_id = ?", [host_id]).fetchone()[0] == \
                result["card"]["host"]
    refused = _cli(["machine", "--cluster", lab["address"], "--on", "accel=h200", "--quick"], env, timeout=120)
    assert refused.returncode == 1 and "accel=h200" in refused.stderr and "fake-a" in refused.stderr
