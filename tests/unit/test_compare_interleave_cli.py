"""`labconsole compare --interleave`: the CLI plumbing around console.analysis.interleave, with the round runner
replaced by a deterministic one (the real one starts a worker per round; tests/benchmarks/test_compare_power.py
measures it for real). Checks the rounds' specs, the stop, the JSON and the exit codes."""

import json

import numpy as np
import pytest

from console.cli import compare_rounds, main
from console.history import HistoryStore

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "scenario": "single-stream",
        "duration_s": 5.0, "scenario_options": {"until_stable": True, "max_duration_s": 20.0}}


@pytest.fixture
def pair(tmp_path):
    """Two stored runs of one spec whose pair cannot answer: 300 iterations each, the second 8% slower but on a
    machine that drifted 15% within each run."""
    db = tmp_path / "h.db"
    ids = []
    with HistoryStore(db) as store:
        for seed, factor in ((1, 1.0), (2, 1.08)):
            run_id = store.create_run(SPEC)
            rng = np.random.default_rng(seed)
            drift = np.repeat(np.exp(rng.normal(0, 0.15, 10)), 30)
            latency = (rng.lognormal(0, 0.03, 300) * drift * factor * 1e6).astype(np.int64)
            store.add_latencies(run_id, np.cumsum(latency), latency)
            store.finish_run(run_id, "completed", summary={"valid": True})
            ids.append(run_id)
    return db, ids


def fake_machine(slowdown, seen):
    rng = np.random.default_rng(7)

    def runner(specs, writer):
        def run_round(side, k):
            seen.append((side, k, specs[side].duration_s, specs[side].name))
            assert specs[side].iterations is None and not specs[side].scenario_options.until_stable
            return rng.lognormal(0, 0.03, 200) * (1 + slowdown if side == "B" else 1.0)
        return run_round
    return runner


def test_interleave_answers_what_the_pair_could_not(pair, monkeypatch, capsys):
    db, (a, b) = pair
    assert main(["compare", a, b, "--fail-on", "slower", "--noise", "0.05", "--json", "--db", str(db)]) == 3
    alone = json.loads(capsys.readouterr().out)
    assert alone["answer"] == "undecided" and alone["verdict"] == "undecided"
    seen = []
    monkeypatch.setattr(compare_rounds, "runner", fake_machine(0.08, seen))
    code = main(["compare", a, b, "--fail-on", "slower", "--noise", "0.05", "--interleave", "--round-duration",
                 "0.5", "--json", "--db", str(db)])
    result = json.loads(capsys.readouterr().out)
    assert code == 1 and result["answer"] == "yes" and result["verdict"] == "slower"
    assert result["stopped"] == "answered" and result["rounds"] == 8 and result["order"] == "ABBA" * 4
    assert result["pair"]["verdict"] == "undecided"  # the stored pair's own verdict is kept beside
    assert result["partition"]["applies_to"].startswith("the stored pair")  # the rounds ran both sides alike
    assert {duration for _, _, duration, _ in seen} == {0.5}
    assert seen[0][3] == f"interleave {a[:8]}/{b[:8]} A"


def test_at_the_cap_interleave_exits_undecided_and_says_so(pair, monkeypatch, capsys):
    db, (a, b) = pair
    monkeypatch.setattr(compare_rounds, "runner", fake_machine(0.021, []))  # just above a 2% band: unresolvable
    code = main(["compare", a, b, "--fail-on", "slower", "--interleave", "--max-rounds", "9", "--db", str(db)])
    out = capsys.readouterr().out
    assert code == 3
    assert "decision: undecided after 9 interleaved rounds a side (the cap is 9)" in out
    assert "cannot be resolved here" in out


def test_a_pair_that_cannot_answer_points_to_interleave(pair, capsys):
    db, (a, b) = pair
    assert main(["compare", a, b, "--fail-on", "slower", "--noise", "0.05", "--db", str(db)]) == 3
    out = capsys.readouterr().out
    assert "cannot answer --fail-on slower: add --interleave" in out and "block test p" in out


def test_a_spec_that_trusted_code_is_not_rerun_without_trust_code(tmp_path, capsys):
    db = tmp_path / "h.db"
    with HistoryStore(db) as store:
        ids = []
        for _ in range(2):
            run_id = store.create_run({**SPEC, "model": str(tmp_path / "m.pt"), "trust_code": True})
            latency = np.full(50, 1_000_000, dtype=np.int64)
            store.add_latencies(run_id, np.cumsum(latency), latency)
            store.finish_run(run_id, "completed", summary={"valid": True})
            ids.append(run_id)
    assert main(["compare", *ids, "--interleave", "--db", str(db)]) == 2
    assert "never grants that: add --trust-code" in capsys.readouterr().err
