"""`labconsole collectives` end to end: parsed, run in a spawned worker with two real gloo ranks, stored as a run,
printed as nccl-tests' table or --json; `history` lists it and `compare` sets two runs' figures side by side. Bad
options are refused (exit 2) before anything runs."""

from __future__ import annotations

import json

import pytest

from console.cli import main

SMALL = ["--ops", "all-reduce,all-gather", "--sizes", "1KiB,64KiB", "--iters", "3", "--warmup", "1", "--trials", "2"]


def document(capsys, argv, code=0):
    assert main(argv) == code
    return json.loads(capsys.readouterr().out)


def test_a_run_is_printed_stored_listed_and_compared(tmp_path, capsys):
    db = str(tmp_path / "h.db")
    done = document(capsys, ["collectives", "--db", db, "--json", "--tag", "ci", *SMALL])
    assert done["status"] == "completed" and done["cause"] is None
    result = done["result"]
    assert result["label"] == "all-reduce, all-gather · gloo · 2 ranks" and result["placement"] == "local"
    rows = result["ops"]["all-reduce"]
    assert [r["size_bytes"] for r in rows] == [1024, 65536] and all(r["busbw_gbs"] > 0 for r in rows)
    assert main(["collectives", "--db", db, *SMALL]) == 0
    text = capsys.readouterr().out
    assert "algbw (GB/s)" in text and "# all-reduce (busbw = algbw × 2(n-1)/n, n = 2)" in text
    assert "# all-gather (busbw = algbw × (n-1)/n, n = 2)" in text and "float" in text and "method:" in text
    listed = document(capsys, ["history", "--db", db, "--json"])["runs"]
    assert [run["scenario"]["name"] for run in listed] == ["collectives"] * 2
    second = listed[0]["run_id"]
    compared = document(capsys, ["compare", done["run_id"], second, "--db", db, "--json"])
    names = {row["name"] for row in compared["storage_figures"]["rows"]}
    assert {"all_reduce_peak_busbw_gbs", "all_gather_small_latency_us"} <= names
    busbw = next(row for row in compared["storage_figures"]["rows"] if row["name"] == "all_reduce_peak_busbw_gbs")
    assert busbw["better"] == "higher" and busbw["ratio"] is not None
    assert "timed operations" in compared["explanation"] and "reads" not in compared["explanation"]
    html = tmp_path / "r.html"
    assert main(["report", done["run_id"], second, "--db", db, "--out", str(html)]) == 0
    page = html.read_text()
    assert ">Collectives<" in page and "all reduce peak busbw (GB/s)" in page and "busbw = algbw × 2(n-1)/n" in page
    assert "labconsole collectives --ranks 2 --backend gloo --ops all-reduce,all-gather --sizes 1KiB,64KiB" in page
    assert "Method: torch.distributed gloo" in page and "all-reduce peak busbw" in page


@pytest.mark.parametrize(("argv", "said"), [
    (["--sizes", "64MiB..8B"], "run downwards"),
    (["--ops", "allreduce"], "all-reduce"),
    (["--ranks", "1"], "--ranks"),
])
def test_bad_options_are_refused_before_anything_runs(tmp_path, capsys, argv, said):
    assert main(["collectives", "--db", str(tmp_path / "h.db"), *argv]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "h.db").exists() or document(capsys, ["history", "--db", str(tmp_path / "h.db"),
                                                                 "--json"])["runs"] == []
