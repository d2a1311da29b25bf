"""Reports: the finding sentence, escaping of everything a user typed, self-containment, and what each kind holds."""

import re
import sys
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gui"))
import week_history  # noqa: E402

from console.history import HistoryStore, open_reader  # noqa: E402
from console.report import ReportError, document, gather, html, write_html  # noqa: E402
from console.report.finding import finding  # noqa: E402
from engines.spec import RunSpec  # noqa: E402

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
START = datetime(2026, 11, 1, 9, 0, tzinfo=timezone.utc)


def spec(engine="torch", batch=1, name=""):
    return RunSpec(model="mlp", engine=engine, target="cpu", batch=batch, name=name).to_dict()


def store_two(path, b_engine="onnxruntime", b_median=0.5, name="", note=None, valid=True):
    rng = np.random.default_rng(3)
    with HistoryStore(path) as store:
        a = week_history.store_run(store, spec(name=name), START, 1.0, rng, energy=0.004, note=note)
        b = week_history.store_run(store, spec(b_engine, name=name), START + timedelta(minutes=5), b_median, rng,
                                   energy=0.002, valid=valid)
    return a, b


def report_of(path, run_ids, sweep_id=None):
    with open_reader(path) as store:
        return gather(store, run_ids, sweep_id)


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]


def test_a_comparison_names_what_differs_with_its_factor_and_interval(tmp_path):
    a, b = store_two(tmp_path / "h.db")
    report = report_of(tmp_path / "h.db", [a, b])
    sentence = finding(report)
    assert report.kind == "comparison" and report.deltas[0]["verdict"] == "faster"
    assert sentence.startswith("ONNX Runtime serves this model 2× faster than PyTorch on this machine (95% CI ")
    low, high = (float(x) for x in re.search(r"95% CI ([\d.]+)–([\d.]+)×", sentence).groups())
    assert low <= 2.0 <= high and high - low < 0.3
    assert "0.002 J per inference" in sentence  # the quicker run's energy


def test_equal_runs_are_said_to_be_equal_and_a_slower_one_slower(tmp_path):
    a, b = store_two(tmp_path / "same.db", b_engine="torch", b_median=1.0)
    sentence = finding(report_of(tmp_path / "same.db", [a, b]))
    # equal medians on a short pair: "equally fast" only if the whole interval is inside ±2%, else what was resolved
    delta = report_of(tmp_path / "same.db", [a, b]).deltas[0]
    low, high = delta["ci95"]
    if 0.98 <= low and high <= 1.02:
        assert "equally fast on this machine, within ±2%" in sentence
    else:
        assert "could not be told apart" in sentence and "equally" not in sentence
        assert f"run B {delta['resolved'][2:]} (ratio" in sentence and "cannot be resolved here" in sentence
    assert "Mann-Whitney" not in sentence
    a, b = store_two(tmp_path / "slow.db", b_median=1.5)
    assert finding(report_of(tmp_path / "slow.db", [a, b])).startswith(
        "PyTorch serves this model 1.5× faster than ONNX Runtime")  # said of the quicker, whichever is A
    assert finding(report_of(tmp_path / "slow.db", [b, a])).startswith(
        "PyTorch serves this model 1.5× faster than ONNX Runtime")


def test_an_invalid_or_failed_run_is_never_reported_as_clean(tmp_path):
    a, b = store_two(tmp_path / "h.db", valid=False)
    report = report_of(tmp_path / "h.db", [a, b])
    assert "Caution: run B is not a valid measurement" in finding(report)
    one = finding(report_of(tmp_path / "h.db", [b]))
    assert "is INVALID" in one and "is VALID" not in one
    with HistoryStore(tmp_path / "h.db") as store:
        failed = week_history.store_run(store, spec(), START, 1.0, np.random.default_rng(1), status="failed")
    sentence = finding(report_of(tmp_path / "h.db", [failed]))
    assert sentence.startswith("This run did not complete (failed): the worker exited with code 1")


def test_everything_a_user_wrote_is_escaped(tmp_path):
    a, b = store_two(tmp_path / "h.db", name=HOSTILE, note=HOSTILE)
    out = write_html(report_of(tmp_path / "h.db", [a, b]), tmp_path / "report.html")
    page = out.read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "img" not in parser.tags
    assert not [name for name in parser.attrs if name.startswith("on")]
    assert "&lt;script&gt;" in page  # the name is shown, as text


def test_the_html_is_one_file_that_fetches_nothing(tmp_path):
    a, b = store_two(tmp_path / "h.db")
    page = write_html(report_of(tmp_path / "h.db", [a, b]), tmp_path / "r.html").read_text(encoding="utf-8")
    assert not re.search(r"https?:|//[a-z]|\bsrc=|\bhref=|@import", page, re.IGNORECASE)
    assert not re.search(r"url\((?!#)", page)  # only the charts' own clip paths
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert page.count("<svg") >= 3  # latency over time, CDF, throughput against latency (+ telemetry)
    for title in ("Latency over time", "Latency distribution (CDF)", "Throughput against latency"):
        assert title in page
    assert "labconsole run --model mlp --engine onnxruntime" in page  # the command that reproduces B


def test_report_sections_carry_intervals_validity_environment_and_commands(tmp_path):
    rng = np.random.default_rng(4)
    with HistoryStore(tmp_path / "h.db") as store:
        a = week_history.store_run(store, spec(), START, 1.0, rng, energy=0.004)
        b = week_history.store_run(store, spec(), START + timedelta(hours=1), 1.1, rng, torch_version="2.4.0")
    blocks = document.build(report_of(tmp_path / "h.db", [a, b]))
    kinds = [block.kind for block in blocks]
    assert kinds[:3] == ["title", "note", "finding"]
    headings = [block.text for block in blocks if block.kind == "heading"]
    assert headings[:3] == ["Key figures", "Each run against A", "What differs from A"]
    assert {"Charts", "Machine and software", "Reproduce"} <= set(headings)
    figures = blocks[kinds.index("table")]
    assert figures.rows[0][3] == "VALID" and re.fullmatch(r"[\d.]+", figures.rows[0][4])  # no interval stored
    assert figures.rows[0][-1].startswith("0.004") and figures.rows[1][-1].startswith("not available")
    changed = next(b for b in blocks if b.kind == "table" and b.headers[:2] == ["Run", "Field"])
    assert ["B", "version.torch", "2.3.1", "2.4.0", "environment"] in changed.rows
    deltas = next(b for b in blocks if b.kind == "table" and b.headers[0] == "Runs")
    assert deltas.rows[0][4] == "slower" and deltas.emphasis == ["bad"]


def test_a_sweep_report_lists_its_points_and_names_the_best(tmp_path):
    path = tmp_path / "h.db"
    rng = np.random.default_rng(5)
    with HistoryStore(path) as store:
        sweep = store.create_sweep("batch sweep", {"batch": [1, 4]})
        ids = []
        for batch, median in ((1, 1.0), (4, 2.0)):
            run_id = week_history.store_run(store, spec(batch=batch), START, median, rng)
            store.tag_run(run_id, sweep, {"batch": batch})
            ids.append(run_id)
        store.finish_sweep(sweep, "completed", summary={"knee": {"label": "batch 4"}})
    report = report_of(path, [], sweep)
    assert report.kind == "sweep" and [v.run["run_id"] for v in report.runs] == ids
    sentence = finding(report)
    assert "batch 4" in sentence and "sustains the most" in sentence and "the knee" in sentence
    blocks = document.build(report)
    points = next(b for b in blocks if b.kind == "table" and b.headers[0] == "Point")
    assert [row[1] for row in points.rows] == ["batch 1", "batch 4"]


def op_row(name, seconds, flops, moved):
    """An op row as engines.profiling.aggregate makes it (and the history stores it)."""
    return {"op": name, "calls": 30, "time_s": seconds, "share": seconds / 0.024, "flops": flops, "bytes": moved,
            "intensity": flops / moved, "achieved_flops_s": flops / seconds, "achieved_bytes_s": moved / seconds}


def test_an_analysed_run_has_its_verdict_op_table_and_roofline(tmp_path):
    path = tmp_path / "h.db"
    with HistoryStore(path) as store:
        run_id = week_history.store_run(store, spec(), START, 1.0, np.random.default_rng(2))
        store.add_ops(run_id, [op_row("aten::addmm", 0.02, 6e9, 6e7), op_row("aten::relu <fused>", 0.004, 1e6, 8e6)])
        store.set_summary_field(run_id, "bottleneck", {
            "class": "compute", "confidence": 0.8, "evidence": {"gemm_share": 0.83},
            "recommendation": "Lever: int8 or bf16.", "secondary": None,
            "sentence": "Bound by compute (80% confident): GEMMs take 83% of op time; lever: int8/bf16."})
        store.add_machine_card({"target": "cpu", "host": "vm", "peak_flops": {"fp32": 5e11},
                                "memory_bandwidth_gbs": 10.0, "measured_at": "2026-11-01T08:00:00Z"})
    report = report_of(path, [run_id])
    assert report.analysed and report.card is not None
    blocks = document.build(report)
    headings = [b.text for b in blocks if b.kind == "heading"]
    assert "Bottleneck of run A" in headings
    assert any("Bound by compute" in b.text for b in blocks if b.kind == "paragraph")
    ops = next(b for b in blocks if b.kind == "table" and b.headers[0] == "Op")
    assert ops.rows[0][0] == "aten::addmm" and ops.rows[0][-1] == "compute"
    page = html.render(blocks)
    assert "Roofline" in page and "aten::relu &lt;fused&gt;" in page and "<fused>" not in page


def test_unknown_runs_and_sweeps_are_refused_with_the_fix(tmp_path):
    a, _ = store_two(tmp_path / "h.db")
    with pytest.raises(ReportError, match="there is no run 'nope'.*labconsole history"):
        report_of(tmp_path / "h.db", [a, "nope"])
    with pytest.raises(ReportError, match="there is no sweep"):
        report_of(tmp_path / "h.db", [], "feedbeef")
    with pytest.raises(ReportError, match="no run to report"):
        report_of(tmp_path / "h.db", [])


def test_reading_for_a_report_never_writes_the_history(tmp_path):
    a, b = store_two(tmp_path / "h.db")
    before = (tmp_path / "h.db").read_bytes()
    write_html(report_of(tmp_path / "h.db", [a, b]), tmp_path / "r.html")
    assert (tmp_path / "h.db").read_bytes() == before


def test_a_report_that_cannot_be_written_says_so_and_leaves_nothing(tmp_path):
    a, _ = store_two(tmp_path / "h.db")
    report = report_of(tmp_path / "h.db", [a])
    with pytest.raises(ReportError, match="cannot write"):
        write_html(report, tmp_path / "missing" / "r.html")
    assert not (tmp_path / "missing").exists()


def test_an_undecided_comparison_says_why_in_the_first_sentence():
    """The three ways a comparison stays undecided each read as what they are, never as "equally fast"."""
    from console.analysis.compare import compare
    from console.report.content import Report, RunView

    rng = np.random.default_rng(0)

    def view(letter, engine):
        run = {"run_id": letter * 8, "status": "completed", "spec": spec(engine), "summary": {"valid": True}}
        return RunView(run, letter, f"{engine} run", np.zeros(1), np.ones(1), {}, [], {})

    a, b = view("A", "torch"), view("B", "onnxruntime")
    changes = [[{"kind": "configuration", "field": "engine", "a": "torch", "b": "onnxruntime"}]]
    cases = {  # three rounds a side, 50% slower: clear of the band by the interval, but 3 blocks cannot give p<0.01
        "test": compare([rng.lognormal(0, 0.05, 200) for _ in range(3)],
                        [rng.lognormal(0, 0.05, 200) * 1.5 for _ in range(3)]),
        "overlap": compare(rng.lognormal(0, 0.25, 3000), rng.lognormal(0, 0.25, 3000)),
    }
    for kind, delta in cases.items():
        assert delta["unresolved"] == kind
        sentence = finding(Report("comparison", [a, b], [{"a": "A", "b": "B", **delta}], changes))
        assert "equally" not in sentence and "Mann-Whitney" not in sentence
        if kind == "test":
            assert sentence.startswith("ONNX Runtime is not shown slower than PyTorch serving this model on this "
                                       "machine: by the interval ONNX Runtime is between ")
            assert f"but the block test p = {delta['p_value']:.2g} does not reach 0.01" in sentence
        else:
            assert sentence.startswith("ONNX Runtime and PyTorch could not be told apart serving this model")
            assert "cannot be resolved here" in sentence
