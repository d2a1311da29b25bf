"""`labconsole analyze --confirm` end to end: a real analysis of the tiny-ops graph, its verdict's experiment run in
interleaved rounds, the confirmation printed, in --json, stored beside the verdict, and in the run's report."""

import json
import os
import subprocess
import sys

from test_analyze_cli import with_card

from console.analysis.summary_markdown import run_markdown
from console.history import HistoryStore

OUTCOMES = {"confirmed", "refuted", "undecided", "untestable"}


def labconsole(*args, db, timeout=300):
    env = dict(os.environ)
    env.pop("LABCONSOLE_DB", None)
    command = [sys.executable, "-m", "console", *args, "--db", str(db)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def test_analyze_confirm_runs_the_verdicts_experiment_and_stores_it_with_the_run(tmp_path):
    db = with_card(tmp_path / "history.db")
    done = labconsole("analyze", "--model", "synth-tiny-ops", "--param", "ops=200", "--duration", "0.25",
                      "--warmup", "0.05", "--profile-iterations", "4", "--threads", "1", "--no-telemetry",
                      "--confirm", "--confirm-max-rounds", "2", "--json", db=db)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    confirmation = report["confirmation"]
    assert confirmation["outcome"] in OUTCOMES, confirmation
    assert confirmation["verdict"] == report["bottleneck"]["class"]
    # tiny ops at one thread on a worker with two cores: whatever the first verdict, more rows or a second thread
    # tells its class from another
    assert confirmation["experiments"], confirmation
    assert {e["intervention"] for e in confirmation["experiments"]} <= {"rows ×2", "rows ×4", "threads ×2"}
    experiment = confirmation["experiments"][0]
    assert experiment["rounds"] == 2 and experiment["max_rounds"] == 2
    assert experiment["outcome"] in ("as predicted", "not as predicted", "undecided")
    low, high = experiment["ci95"]
    assert 0 < low <= experiment["ratio"] <= high
    assert experiment["predicted"]["class"] == confirmation["tested"]
    assert "round 1 A:" not in done.stderr  # --json: no progress lines, as `compare --interleave --json`
    store = HistoryStore(db)
    try:
        run = store.get_run(report["run_id"])
        stored = run["summary"]["bottleneck"]
        assert stored["class"] == report["bottleneck"]["class"]
        assert stored["confirmation"] == confirmation
        rounds = [r for r in store.list_runs() if (r.get("name") or "").startswith("confirm ")]
        assert len(rounds) == 2 * 2 * len(confirmation["experiments"]) and all(r["status"] == "completed" for r in rounds)
    finally:
        store.close()
    # beside the verdict in the run's Markdown and in its report
    markdown = run_markdown(run)
    assert "**Confirmation:** " + confirmation["sentence"].split(" ")[0] in markdown
    page = tmp_path / "report.html"
    shown = labconsole("report", report["run_id"], "--out", str(page), db=db)
    assert shown.returncode == 0, shown.stderr
    assert "Confirmation: " + confirmation["sentence"].split(" ")[0] in page.read_text(encoding="utf-8")


def test_confirm_max_rounds_below_two_is_a_usage_error(tmp_path):
    done = labconsole("analyze", "--model", "mlp", "--confirm", "--confirm-max-rounds", "1", db=tmp_path / "h.db")
    assert done.returncode == 2 and "--confirm-max-rounds must be ≥ 2" in done.stderr
