"""Exit codes that tell CI the truth (issue 19, case 5): dates parsed strictly, a missing history is an error and is
never created, run id prefixes that pick no single run are usage errors like unknown ids, --trace and --data-dir
checked before anything runs, and `export X X` writes each run once. In-process through console.cli.main."""

from __future__ import annotations

import argparse
import json
import os
import socket
import stat
from pathlib import Path

import numpy as np
import pytest

from console.cli import main
from console.cli.arguments import date_bound
from console.history import HistoryStore
from engines.spec import RunSpec

SPEC = RunSpec(model="mlp", duration_s=1.0, warmup_s=0.2, model_params={"layers": 2}).to_dict()
TWINS = ("abcd1111" + "0" * 24, "abcd2222" + "0" * 24)  # share the 4-character prefix "abcd"
LONE = "f00d" + "1" * 28


@pytest.fixture
def lab(tmp_path):
    """A history with three completed, valid runs: two whose ids share a prefix, and a third."""
    db = tmp_path / "history.db"
    with HistoryStore(db) as store:
        for run_id in (*TWINS, LONE):
            store.create_run(SPEC, run_id=run_id)
            store.add_latencies(run_id, np.arange(1, 41, dtype=np.int64) * 1_000_000,
                                np.full(40, 900_000, dtype=np.int64))
            store.finish_run(run_id, "completed", summary={"valid": True, "t0_ns": 0})
    return db


def _files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


# ---- dates
@pytest.mark.parametrize(("text", "stored"), [
    ("2026-11-01", "2026-11-01T00:00:00.000000Z"),
    ("2026-11-01T14:30", "2026-11-01T14:30:00.000000Z"),
    ("2026-11-01 14:30:05.25", "2026-11-01T14:30:05.250000Z"),
    ("2026-11-01T14:30:05Z", "2026-11-01T14:30:05.000000Z"),
    ("2026-11-01T14:30+02:00", "2026-11-01T12:30:00.000000Z"),
])
def test_iso_dates_become_utc_bounds_in_the_historys_own_format(text, stored):
    assert date_bound(text) == stored


@pytest.mark.parametrize("text", ["notadate", "2026-13-45", "2026-02-30", "yesterday", "7d", "11/01/2026",
                                  "2026-11-01T25:00", "", "2026-11-01Tfoo", "٢٠٢٦-١١-٠١"])
def test_anything_else_is_refused_naming_the_accepted_forms(text):
    with pytest.raises(argparse.ArgumentTypeError, match="ISO date or date-time: 2026-11-01"):
        date_bound(text)


@pytest.mark.parametrize("argv", [["history", "--since", "notadate"], ["history", "--since", "2026-13-45"],
                                  ["history", "--until", "tomorrow"], ["regressions", "--since", "yesterday"]])
def test_a_bad_date_exits_2_before_the_history_is_read(lab, argv, capsys):
    before = lab.read_bytes()
    assert main([*argv, "--db", str(lab)]) == 2
    err = capsys.readouterr().err
    assert "ISO date or date-time" in err and "Traceback" not in err
    assert lab.read_bytes() == before


def test_since_and_until_filter_by_instant(lab, capsys):
    def listed(*extra):
        assert main(["history", "--json", "--db", str(lab), *extra]) == 0
        return len(json.loads(capsys.readouterr().out)["runs"])

    assert listed("--since", "2000-01-01") == 3
    assert listed("--since", "2999-01-01T00:00+05:00") == 0
    assert listed("--until", "2000-01-01") == 0
    assert listed("--since", "2000-01-01", "--until", "2999-12-31T23:59:59Z") == 3
    assert main(["regressions", "--since", "2999-01-01", "--db", str(lab)]) == 0


# ---- a history that does not exist
@pytest.mark.parametrize(("argv", "code"), [
    (["history"], 1), (["history", "--json"], 1), (["export", LONE], 1), (["whatif", LONE], 1),
    (["baseline", "show"], 1), (["baseline", "show", LONE], 1), (["baseline", "set", "abcd"], 1),
    (["baseline", "clear", LONE], 1), (["report", LONE, "--out", "r.html"], 1),
    (["compare", LONE, LONE], 3), (["regressions"], 3), (["regressions", "--json"], 3),
])
def test_a_missing_history_is_an_error_and_is_not_created(tmp_path, monkeypatch, argv, code, capsys):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "lab"
    folder.mkdir()
    assert main([*argv, "--db", str(folder / "NEW.db")]) == code
    err = capsys.readouterr().err
    assert "no history at" in err and "Traceback" not in err
    assert _files(folder) == set(), "a reader (or a failed baseline set) created files"
    assert not (tmp_path / "r.html").exists()


# ---- run id prefixes
@pytest.mark.parametrize("argv", [["export", "{ref}"], ["whatif", "{ref}"], ["baseline", "set", "{ref}"],
                                  ["baseline", "show", "{ref}"], ["baseline", "clear", "{ref}"],
                                  ["report", "{ref}", "--out", "{out}"], ["export", LONE, "{ref}"]])
@pytest.mark.parametrize("ref", ["ab", "abcd", "abcd9", "ABCD1111"])
def test_a_run_id_that_does_not_resolve_exits_2_whatever_the_reason(lab, tmp_path, argv, ref, capsys):
    """Too short, ambiguous or unknown: all bad arguments (2), nothing written, the history unchanged."""
    out = tmp_path / "r.html"
    before = lab.read_bytes()
    assert main([a.format(ref=ref, out=out) for a in argv] + ["--db", str(lab)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and repr(ref) in err
    if ref == "ab":
        assert "at least 4 characters" in err
    if ref == "abcd":
        assert TWINS[0] in err and TWINS[1] in err and "at least 4" in err
    assert not out.exists() and lab.read_bytes() == before


def test_compare_keeps_3_for_every_run_it_cannot_find(lab, capsys):
    for ref in ("ab", "abcd", "abcd9"):
        assert main(["compare", ref, LONE, "--db", str(lab)]) == 3
    assert "cannot judge" in capsys.readouterr().err


def test_an_ambiguous_sweep_prefix_exits_2_listing_the_sweeps(lab, tmp_path, capsys):
    with HistoryStore(lab) as store:
        ids = [store.create_sweep("s", {"batch": [1]}, sweep_id=f"beef{n}" + "0" * 27) for n in (1, 2)]
    assert main(["report", "--sweep", "beef", "--out", str(tmp_path / "s.html"), "--db", str(lab)]) == 2
    err = capsys.readouterr().err
    assert all(sweep_id in err for sweep_id in ids) and not (tmp_path / "s.html").exists()


# ---- export
def test_export_writes_each_run_once_in_the_order_given(lab, capsys):
    assert main(["export", LONE[:6], LONE, TWINS[0], LONE[:4], "--db", str(lab)]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [run["run_id"] for run in runs] == [LONE, TWINS[0]]
    assert main(["export", LONE[:6], LONE[:6], "--summary", "--db", str(lab)]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2  # the header and one row


# ---- --trace and --data-dir: checked before anything runs
def _hostile_paths(tmp_path: Path) -> dict[str, Path]:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return {"missing folder": tmp_path / "nowhere" / "t.json", "through a file": blocker / "t.json",
            "a directory": tmp_path, "a FIFO": fifo, "too long": tmp_path / ("t" * 300 + ".json")}


CARD = {"target": "cpu", "host": socket.gethostname(), "device_name": "test CPU", "quick": False, "repeats": 5,
        "peak_flops": {"fp32": 150e9}, "memory_bandwidth_gbs": 10.0, "llc_bytes": 33_554_432,
        "caches": {"l3": 33_554_432}, "call_floor_us": {"torch": 8.0}, "spread": {}, "method": {},
        "not_available": {}}
QUICK = ["--model", "mlp", "--iterations", "5", "--warmup", "0", "--no-telemetry"]


@pytest.mark.parametrize(("which", "words"), [("missing folder", "does not exist"), ("through a file", "is a file, not a directory"),
                                             ("a directory", "is a directory"), ("a FIFO", "no reader"),
                                             ("too long", "shorter file name"), ("stdout", "standard output")])
def test_analyze_refuses_an_unusable_trace_before_the_run(tmp_path, which, words, capsys):
    db = tmp_path / "db" / "history.db"
    trace = "-" if which == "stdout" else str(_hostile_paths(tmp_path)[which])
    assert main(["analyze", *QUICK, "--trace", trace, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "--trace" in err and words in err and "Traceback" not in err and "machine card" not in err
    assert not db.parent.exists(), "nothing measured or stored for a run that never started"


def _data_dirs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README.txt").write_text("not a sample")
    a_file = tmp_path / "samples.npy"
    a_file.write_bytes(b"x")
    return {"missing": (tmp_path / "nowhere", "does not exist"), "empty": (empty, "none ending in .npy"),
            "a file": (a_file, "is a file, not a directory")}


@pytest.mark.parametrize("command", ["run", "analyze", "sweep"])
@pytest.mark.parametrize("which", ["missing", "empty", "a file"])
def test_a_data_dir_without_samples_exits_2_before_the_model_loads(tmp_path, command, which, capsys):
    db = tmp_path / "db" / "history.db"
    folder, words = _data_dirs(tmp_path)[which]
    extra = ["--batch", "1,2"] if command == "sweep" else []
    argv = [command, *QUICK, *extra, "--scenario", "input-pipeline", "--data-dir", str(folder), "--db", str(db)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "labconsole make-data --dir" in err and "--model mlp" in err and "Traceback" not in err
    assert not db.parent.exists(), "no run stored, no history created"


def test_a_trace_that_cannot_be_written_after_the_run_is_exit_1_not_a_warning(tmp_path, capsys):
    """A device that refuses the bytes (a /dev/full made here): the run is stored, the exit is 1, the message
    says where the recorded trace is; the node is written into, never replaced."""
    full = tmp_path / "full"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    db = tmp_path / "history.db"
    with HistoryStore(db) as store:  # a stored card: the analysis does not measure one (a minute)
        store.add_machine_card(CARD)
    assert main(["analyze", *QUICK, "--profile-iterations", "2", "--trace", str(full), "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert "could not write the trace" in err and "Traceback" not in err
    assert stat.S_ISCHR(full.lstat().st_mode)
    with HistoryStore(db) as store:
        assert [run["status"] for run in store.list_runs()] == ["completed"]


def test_report_names_a_run_once_however_it_is_written(lab, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", LONE[:4], LONE, LONE[:6], "--out", str(out), "--json", "--db", str(lab)]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["kind"] == "run", "one run, not a comparison of a run with itself"
