"""The console side of the storage benchmarks: a kind run in a spawned worker (progress, bad input, an exception,
a death, a timeout, a cancel), its outcome kept as a history run (never `completed` when the result lost data or
breaks the contract), its figures compared, its chart data and its report section. The kind is a fake
(tests/storage_fake_kind.py) registered through the launcher's `kinds` override: no disk benchmark runs here."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from console.history import HistoryStore, open_reader
from console.storage import charts, figures
from console.storage.launch import Outcome, run_kind
from console.storage.runs import check_result, latest_results, spec_for, storage_kind, store_outcome

FAKE = {kind: "storage_fake_kind:run" for kind in ("feed", "sweep", "checkpoint", "coldstart")}


def launch(mode="ok", kind="feed", timeout_s=30.0, **options):
    seen = []
    outcome = run_kind(kind, {"mode": mode, "kind": kind, **options}, on_progress=seen.append, timeout_s=timeout_s,
                       kinds=FAKE)
    return outcome, seen


@pytest.fixture
def store(tmp_path):
    with HistoryStore(tmp_path / "history.db") as opened:
        yield opened


# ---- launch
def test_a_kind_runs_in_a_worker_and_its_progress_is_relayed():
    outcome, seen = launch("ok", n=50)
    assert outcome.status == "completed" and outcome.error_kind is None and outcome.message == ""
    assert outcome.result["kind"] == "feed" and len(outcome.result["latency_ns"]) == 50
    assert [update["text"] for update in seen] == ["starting", "done"] and seen[-1]["fraction"] == 1.0
    assert outcome.progress_seen == 2 and outcome.wall_s > 0


def test_bad_input_fails_with_the_kinds_message_and_fix():
    outcome, _ = launch("bad-input", data_dir="/nowhere")
    assert outcome.status == "failed" and outcome.error_kind == "bad-input"
    assert "'/nowhere' does not exist" in outcome.cause and outcome.fix == "give an existing directory with --data-dir"
    assert outcome.message.endswith("— give an existing directory with --data-dir")


def test_an_exception_fails_with_its_type_and_traceback():
    outcome, _ = launch("raise")
    assert outcome.status == "failed" and outcome.error_kind == "raised"
    assert outcome.cause == "RuntimeError: reader 3 crashed" and "storage_fake_kind.py" in outcome.traceback


def test_a_worker_that_dies_fails_with_its_signal_and_where_it_was():
    outcome, _ = launch("die")
    assert outcome.status == "failed" and outcome.error_kind == "died" and outcome.exit_code == -9
    assert "killed by SIGKILL" in outcome.cause and "at: reading" in outcome.cause


def test_a_hung_worker_is_stopped_at_the_timeout_and_its_clean_up_runs(tmp_path):
    marker = tmp_path / "cleaned"
    outcome, _ = launch("hang", timeout_s=1.5, marker=str(marker))
    assert outcome.status == "failed" and outcome.error_kind == "timeout"
    assert "did not finish within 1.5 s" in outcome.cause and "--timeout" in outcome.fix
    assert outcome.wall_s < 12 and marker.read_text() == "cleaned up"  # SIGINT first: the kind's finally ran


def test_the_clean_up_runs_when_the_console_was_started_with_sigint_ignored(tmp_path):
    """A shell script's `labconsole … &` starts the console with SIGINT ignored, and a spawned worker inherits that:
    the worker takes SIGINT back, so the stop's SIGINT still runs the kind's clean-up (test files, scratch folders)."""
    import signal

    marker = tmp_path / "cleaned"
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        outcome, _ = launch("hang", timeout_s=1.5, marker=str(marker))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert outcome.status == "failed" and outcome.error_kind == "timeout"
    assert marker.read_text() == "cleaned up"


def test_cancel_stops_the_worker_and_says_where():
    cancel = threading.Event()

    def progress(update):
        if update.get("text") == "reading":
            cancel.set()

    outcome = run_kind("feed", {"mode": "hang"}, on_progress=progress, cancel=cancel, kinds=FAKE)
    assert outcome.status == "cancelled" and outcome.error_kind == "cancelled" and "at: reading" in outcome.cause


def test_an_unknown_kind_or_options_that_are_not_data_fail_before_any_worker():
    outcome = run_kind("nvme-magic", {}, kinds=FAKE)
    assert outcome.status == "failed" and outcome.error_kind == "unknown-kind" and "coldstart" in outcome.fix
    outcome = run_kind("feed", {"when": object()}, kinds=FAKE)
    assert outcome.status == "failed" and outcome.error_kind == "bad-input"


# ---- stored as a run
def test_a_completed_result_is_a_run_with_its_latencies_figures_and_options(store):
    outcome, _ = launch("ok", n=700)
    options = {"mode": "ok", "n": 700}
    run_id, status, cause = store_outcome(store, "feed", options, outcome, tags=["nvme0"])
    assert (status, cause) == ("completed", None)
    run = store.get_run(run_id)
    assert run["status"] == "completed" and run["model"] == "fake feed on tmpfs" and run["engine"] == "storage"
    assert run["spec"]["scenario"] == "storage-feed" and run["spec"]["scenario_options"] == options
    assert storage_kind(run) == "feed" and run["tags"] == ["nvme0"]
    summary = run["summary"]
    assert "latency_ns" not in summary["storage_bench"] and summary["figures"]["read_mb_s"] == 120.0
    assert summary["valid"] is True and summary["iterations"] == 700 and summary["cache_state"] == "cold"
    assert summary["latency_ms"]["p99"] is not None  # 700 reads back a p99 (≥ 662)
    t_ns, latency_ns = store.latencies(run_id)
    assert len(latency_ns) == 700 and latency_ns[0] == 1_000_000 and np.all(np.diff(t_ns) >= 0)


def test_the_same_options_make_a_series_and_different_ones_do_not(store):
    outcome, _ = launch("ok", n=5)
    ids = [store_outcome(store, "feed", options, outcome)[0]
           for options in ({"n": 5}, {"n": 5}, {"n": 6})]
    fingerprints = [store.get_run(run_id)["fingerprint"] for run_id in ids]
    assert fingerprints[0] == fingerprints[1] != fingerprints[2]


def test_percentiles_without_enough_reads_are_withheld_and_say_why(store):
    outcome, _ = launch("ok", n=100)
    run_id, _, _ = store_outcome(store, "feed", {}, outcome)
    latency = store.get_run(run_id)["summary"]["latency_ms"]
    assert latency["p50"] is not None and latency["p90"] is not None and latency["p99"] is None
    assert latency["not_enough_samples"] == ["p99 needs ≥ 662 reads, 100 were timed"]


@pytest.mark.parametrize("mode, expected", [("lost", "it reports lost data (lost 3)"),
                                            ("malformed", "it lacks 'figures'")])
def test_a_result_that_lost_data_or_breaks_the_contract_is_never_completed(store, mode, expected):
    outcome, _ = launch(mode, n=20)
    assert outcome.status == "completed"  # the worker itself ended well
    run_id, status, cause = store_outcome(store, "feed", {}, outcome)
    run = store.get_run(run_id)
    assert status == run["status"] == "failed" and expected in cause and expected in run["error"]
    assert run["summary"]["valid"] is False


def test_a_failed_outcome_keeps_its_cause_and_no_figures(store):
    outcome, _ = launch("raise")
    run_id, status, cause = store_outcome(store, "feed", {"mode": "raise"}, outcome)
    run = store.get_run(run_id)
    assert status == run["status"] == "failed" and run["error"] == "RuntimeError: reader 3 crashed"
    assert run["model"] == "storage feed" and run["summary"]["error_kind"] == "raised"
    assert run["summary"]["iterations"] == 0 and run["summary"]["valid"] is False


def test_a_warm_result_is_completed_but_not_valid_and_says_what_to_change(store):
    outcome, _ = launch("warm", n=5)
    run_id, status, _ = store_outcome(store, "feed", {}, outcome)
    summary = store.get_run(run_id)["summary"]
    assert status == "completed" and summary["valid"] is False and summary["passed"] is False
    assert summary["invalid_reasons"][0]["detail"] == "data set warm"
    assert "larger than the page cache" in summary["invalid_reasons"][0]["fix"]


def test_a_figure_that_is_not_finite_is_stored_as_not_available(store):
    outcome = Outcome("feed", "completed", result={"kind": "feed", "label": "x", "passed": None, "status_reason": "",
                                                   "cache_state": "n/a", "method": "m",
                                                   "figures": {"read_mb_s": float("nan"), "au_percent": 50.0}})
    run_id, status, _ = store_outcome(store, "feed", {}, outcome)
    summary = store.get_run(run_id)["summary"]
    assert status == "completed" and summary["figures"] == {"read_mb_s": None, "au_percent": 50.0}
    assert summary["valid"] is True  # no pass rule, and nothing read through the page cache
    assert summary["warnings"] == ["figure read_mb_s was not a finite number and is stored as not available"]


def test_a_kind_without_a_pass_rule_is_invalid_only_when_it_read_warm(store):
    result = {"kind": "coldstart", "label": "x", "passed": None, "status_reason": "the file could not be dropped",
              "cache_state": "warm", "method": "m", "figures": {}}
    run_id, status, _ = store_outcome(store, "coldstart", {}, Outcome("coldstart", "completed", result=result))
    summary = store.get_run(run_id)["summary"]
    assert status == "completed" and summary["valid"] is False
    assert summary["invalid_reasons"][0]["detail"] == "the result is warm: the file could not be dropped"


def test_bad_latency_pairs_fail_the_run(store):
    result = {"kind": "feed", "label": "x", "passed": True, "status_reason": "", "cache_state": "cold",
              "method": "m", "figures": {}, "latency_ns": [[1, 2, 3]]}
    _, status, cause = store_outcome(store, "feed", {}, Outcome("feed", "completed", result=result))
    assert status == "failed" and "latency_ns has shape [1, 3]" in cause


def test_check_result_names_each_broken_rule():
    problems = check_result("feed", {"kind": "sweep", "passed": "yes", "cache_state": "lukewarm", "figures": [],
                                     "dropped": 2})
    text = "; ".join(problems)
    for expected in ("lacks 'label'", "its kind is 'sweep'", "passed is 'yes'", "cache_state is 'lukewarm'",
                     "figures is not", "lost data (dropped 2)"):
        assert expected in text


def test_the_newest_result_of_each_kind_is_found(store, tmp_path):
    for kind, n in (("feed", 3), ("feed", 4), ("sweep", 5)):
        outcome, _ = launch("ok", kind=kind, n=n)
        store_outcome(store, kind, {"n": n}, outcome)
    store_outcome(store, "checkpoint", {}, launch("raise", kind="checkpoint")[0])  # failed: not shown
    with open_reader(tmp_path / "history.db") as reader:
        found = latest_results(reader, ["feed", "sweep", "checkpoint"])
    assert len(found["feed"]) == 1 and found["feed"][0]["result"]["kind"] == "feed"
    assert reader is not None and found["sweep"][0]["result"]["heatmap"] and found["checkpoint"] == []
    assert spec_for("sweep", {"a": 1})["scenario"] == "storage-sweep"


# ---- figures and charts
def test_each_figure_knows_which_way_is_better():
    assert [figures.direction(name) for name in ("au_percent", "read_mb_s", "p99_read_ms", "save_gb_s", "save_s",
                                                 "spread_percent", "max_passing", "knee_block_bytes")] == \
        ["higher", "higher", "lower", "higher", "lower", "lower", "higher", None]


def test_two_runs_figures_side_by_side():
    a = {"spec": {"scenario": "storage-feed"}, "summary": {"figures": {"read_mb_s": 100.0, "p99_read_ms": 2.0,
                                                                        "au_percent": None}}}
    b = {"spec": {"scenario": "storage-feed"}, "summary": {"figures": {"read_mb_s": 150.0, "p99_read_ms": 3.0,
                                                                        "au_percent": 91.0}}}
    compared = figures.compare_figures(a, b)
    rows = {row["name"]: row for row in compared["rows"]}
    assert rows["read_mb_s"]["ratio"] == 1.5 and rows["read_mb_s"]["change"].startswith("B 50% better")
    assert rows["p99_read_ms"]["change"].startswith("B 50% worse")
    assert rows["au_percent"]["ratio"] is None and rows["au_percent"]["change"] == "not available in A"
    assert compared["same_kind"] and compared["note"] == ""
    assert any("read (MB/s): 100 → 150" in line for line in figures.comparison_lines(compared))


def test_feed_chart_scales_fractions_together_and_sorts_by_n():
    data = charts.feed_chart({"find_max": {"threshold": 0.9, "series": [[4, 0.95], [1, 0.99], [8, 0.5]],
                                           "max_passing": 5}, "cache_state": "warm"})
    assert data["threshold"] == 90.0 and [n for n, _ in data["series"]] == [1, 4, 8]
    assert data["series"][1][1] == pytest.approx(95.0) and "cannot pass" in data["note"]
    fixed = charts.feed_chart({"accelerators": 4, "figures": {"au_percent": 72.0}, "au_per_accelerator": [70, 74]})
    assert fixed["series"] == [[4, 72.0]] and fixed["per_accelerator"] == [[4, 70.0], [4, 74.0]]


def test_bars_leave_out_what_was_not_measured_and_say_so():
    from storage_fake_kind import DETAIL

    cold = charts.coldstart_chart(DETAIL["coldstart"])
    assert cold["categories"] == ["mmap", "buffered", "direct"] and cold["layout"] == "stacked"
    assert dict(cold["segments"])["to device"] == [None, None, None] and "to device: not measured (mmap, buffered, direct)" in cold["note"]
    assert cold["labels"] == [["0.28 s", "0.53 s", "0.73 s"]]
    saved = charts.checkpoint_chart(DETAIL["checkpoint"])
    assert dict(saved["segments"])["load"] == [1.2, 0.6, None] and "dcp load" in saved["note"]
    assert "restored warm (page cache): dcp" in saved["note"] and saved["labels"][0][0] == "0.95 GB/s"
    sweep = charts.sweep_chart(DETAIL["sweep"])
    assert sweep["knees"]["read/seq"] == {"x": 1, "y": 1048576, "text": "1 MiB at QD 1 gives 77% of the best"}
    assert sweep["y_labels"][65536] == "64 KiB" and charts.chart_data("nope", {}) is None


# ---- report
def test_the_report_has_a_storage_section_with_the_method_and_a_storage_finding(store, tmp_path):
    from console.report.content import gather
    from console.report.document import build

    ids = []
    for scale in (1, 3):
        outcome, _ = launch("ok", kind="checkpoint", n=30, scale=scale)
        ids.append(store_outcome(store, "checkpoint", {"n": 30, "scale": scale}, outcome)[0])
    with open_reader(tmp_path / "history.db") as reader:
        blocks = build(gather(reader, ids))
    text = "\n".join(block.text + " ".join(" ".join(row) for row in block.rows) for block in blocks)
    assert blocks[2].kind == "finding" and "read (MB/s) 120 → 360" in blocks[2].text
    assert "Method: a fake kind for tests: fixed latencies" in text and "safetensors" in text
    assert "labconsole storage checkpoint --n 30 --scale 3" in text
    assert any(block.kind == "heading" and block.text == "Storage" for block in blocks)
