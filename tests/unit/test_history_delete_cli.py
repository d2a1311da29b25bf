"""`labconsole history rm RUN…` and `history prune --older-than DAYS`: exit codes, --dry-run reads only, prune
asks on a terminal and wants --yes without one, --json names its schema."""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest

from console.cli import main
from console.history import HistoryStore, open_reader

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "scenario": "single-stream"}
OLD = "2020-01-01T00:00:00.000000Z"


@pytest.fixture
def lab(tmp_path):
    """Four finished runs: two old (one failed), two of today."""
    db = tmp_path / "history.db"
    ids = {}
    with HistoryStore(db) as store:
        for name, status, started in (("old_ok", "completed", OLD), ("old_failed", "failed", OLD),
                                      ("new_ok", "completed", None), ("new_failed", "failed", None)):
            run_id = store.create_run({**SPEC, "name": name})
            store.add_latencies(run_id, np.arange(3), np.full(3, 10))
            store.finish_run(run_id, status, summary={"valid": status == "completed"})
            if started:
                store.db.execute("UPDATE runs SET started_at = ? WHERE run_id = ?", [started, run_id])
            ids[name] = run_id
        store.commit()
    return db, ids


def _left(db) -> set[str]:
    with open_reader(db) as reader:
        return {run["name"] for run in reader.list_runs(include_damaged=True)}


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rm_deletes_the_named_runs_by_prefix_and_keeps_the_others(lab, capsys):
    db, ids = lab
    assert main(["history", "rm", ids["old_ok"][:6], ids["new_ok"], "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "deleted 2 runs" in out and ids["old_ok"][:8] in out
    assert _left(db) == {"old_failed", "new_failed"}


def test_rm_json_names_its_schema_and_what_went(lab, capsys):
    db, ids = lab
    assert main(["history", "rm", ids["old_ok"], "--db", str(db), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["schema"] == "labconsole.history.delete/1"
    assert document["action"] == "rm" and document["dry_run"] is False
    assert [run["run_id"] for run in document["runs"]] == [ids["old_ok"]]
    assert document["deleted_rows"]["runs"] == 1 and document["deleted_rows"]["latency_chunks"] == 1


@pytest.mark.parametrize("ref", ["ffffffff", "ab"])
def test_rm_of_an_unknown_or_too_short_run_is_exit_2_and_deletes_nothing(lab, capsys, ref):
    db, ids = lab
    assert main(["history", "rm", ids["old_ok"], ref, "--db", str(db)]) == 2
    assert capsys.readouterr().err.strip().startswith("labconsole: error:")
    assert len(_left(db)) == 4


def test_rm_without_a_history_creates_nothing(tmp_path, capsys):
    db = tmp_path / "none.db"
    assert main(["history", "rm", "abcd", "--db", str(db)]) == 1
    assert "no history" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_prune_dry_run_lists_and_leaves_the_bytes_as_they_were(lab, capsys):
    db, ids = lab
    before = db.read_bytes()
    assert main(["history", "prune", "--older-than", "30", "--dry-run", "--db", str(db), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["dry_run"] is True and document["deleted_rows"] == {}
    assert {run["run_id"] for run in document["runs"]} == {ids["old_ok"], ids["old_failed"]}
    assert db.read_bytes() == before and len(_left(db)) == 4


def test_prune_without_yes_and_without_a_terminal_is_exit_2(lab, capsys, monkeypatch):
    db, _ = lab
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # not a terminal: never read as an answer
    assert main(["history", "prune", "--older-than", "30", "--db", str(db)]) == 2
    assert "--yes" in capsys.readouterr().err
    assert len(_left(db)) == 4


def test_prune_with_yes_deletes_the_old_runs_of_the_status_asked(lab, capsys):
    db, _ = lab
    assert main(["history", "prune", "--older-than", "30", "--status", "failed", "--yes", "--db", str(db)]) == 0
    assert "deleted 1 run" in capsys.readouterr().out
    assert _left(db) == {"old_ok", "new_ok", "new_failed"}


def test_prune_keeps_a_baseline_and_says_so_unless_include_baselines(lab, capsys):
    db, ids = lab
    with HistoryStore(db) as store:
        store.set_baseline(ids["old_ok"])
    assert main(["history", "prune", "--older-than", "30", "--yes", "--db", str(db)]) == 0
    assert "kept 1 baseline run" in capsys.readouterr().err
    assert _left(db) == {"old_ok", "new_ok", "new_failed"}
    assert main(["history", "prune", "--older-than", "30", "--include-baselines", "--yes", "--db", str(db)]) == 0
    assert _left(db) == {"new_ok", "new_failed"}


@pytest.mark.parametrize(("answer", "code", "left"), [("y\n", 0, 2), ("n\n", 1, 4), ("\n", 1, 4)])
def test_prune_on_a_terminal_asks_first(lab, capsys, monkeypatch, answer, code, left):
    db, _ = lab
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["history", "prune", "--older-than", "30", "--db", str(db)]) == code
    assert "Delete 2 runs older than 30 days" in terminal.getvalue()
    if code:
        assert "nothing was deleted" in terminal.getvalue()
    assert len(_left(db)) == left


def test_prune_with_nothing_old_enough_is_done(lab, capsys):
    db, _ = lab
    assert main(["history", "prune", "--older-than", "36000", "--db", str(db)]) == 0
    assert "deleted 0 runs" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["prune"], ["prune", "--older-than", "-1"], ["prune", "--older-than", "nan"],
                                  ["prune", "--older-than", "1", "--status", "running"], ["rm"]])
def test_bad_usage_is_exit_2(lab, capsys, argv):
    db, _ = lab
    assert main(["history", *argv, "--db", str(db)]) == 2
    assert len(_left(db)) == 4


def test_history_still_lists_without_an_action(lab, capsys):
    db, _ = lab
    assert main(["history", "--db", str(db), "--limit", "2", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["runs"]) == 2


def test_the_listing_shows_a_run_without_model_engine_or_target(tmp_path, capsys):
    """A spec with no model, engine or target (a storage or collectives run) is listed with '—', not a TypeError."""
    db = tmp_path / "history.db"
    with HistoryStore(db) as store:
        run_id = store.create_run({"name": "bare", "scenario": "single-stream"})
        store.finish_run(run_id, "completed", summary={"valid": True})
    assert main(["--db", str(db), "history"]) == 0
    line = next(text for text in capsys.readouterr().out.splitlines() if text.startswith(run_id[:8]))
    assert line.split()[3:6] == ["—", "—", "—"]
