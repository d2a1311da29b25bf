"""A run's summary as Markdown: figures with units and intervals, validity, energy with its method, escaping."""

import re

import numpy as np
import pytest

from console.analysis import summarize
from console.analysis.summary_markdown import escape, run_markdown, title_line
from console.history import HistoryStore
from engines.spec import RunSpec

S = 1_000_000_000


def measured(batch=1, samples=None, iterations=2000, seed=3):
    """A summary computed the way a run's is: latencies around 5 ms over 10 s, optional telemetry rows."""
    rng = np.random.default_rng(seed)
    latency_ns = (5e6 * rng.gamma(50.0, 1 / 50.0, iterations)).astype(np.int64)
    t_ns = np.cumsum(latency_ns)
    window = (0, int(t_ns[-1]))
    return summarize(latency_ns, {"measured_s": t_ns[-1] / 1e9, "first_inference_ms": 9.0}, {"load_s": 0.42},
                     batch=batch, t_ns=t_ns, samples=samples, window_ns=window if samples else None)


def stored(tmp_path, summary, **spec):
    """The run as the history returns it (HistoryStore.get_run): spec and summary read back from SQLite."""
    with HistoryStore(tmp_path / "history.db") as store:
        run_id = store.create_run(RunSpec(**{"model": "mlp", "threads": 2, **spec}).to_dict())
        store.finish_run(run_id, "completed", summary=summary)
        return store.get_run(run_id)


def table_rows(markdown):
    return [line for line in markdown.splitlines() if line.startswith("| ")]


def numbers_in(text):
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


def unescaped_pipes(line):
    return len(re.findall(r"(?<!\\)\|", line))


def test_a_stored_runs_markdown_holds_its_figures_intervals_validity_and_command(tmp_path):
    summary = measured()
    run = stored(tmp_path, summary, duration_s=10.0)
    text = run_markdown(run)
    lines = text.splitlines()
    assert lines[0] == "### mlp · torch · cpu · fp32 · batch 1 · single-stream"
    latency = summary["latency_ms"]
    rows = {row.split(" | ")[0][2:]: row for row in table_rows(text)}
    for key, caption in (("p50", "p50 latency"), ("p90", "p90 latency"), ("p99", "p99 latency")):
        low, high = latency["ci95"][key]
        cells = rows[caption].strip("| ").split(" | ")
        assert cells[1].endswith(" ms") and cells[2].endswith(" ms") and " – " in cells[2]
        # 1 for the "p50" in the caption, then the value and its interval at three significant digits
        assert numbers_in(rows[caption])[1:] == [pytest.approx(v, rel=5e-3) for v in (latency[key], low, high)]
    assert rows["Throughput"].strip("| ").split(" | ")[1].endswith(" samples/s")
    assert numbers_in(rows["Throughput"])[0] == pytest.approx(summary["throughput_per_s"], rel=5e-3)
    assert "2,000" in rows["Iterations"] and "0.420 s" in rows["Model load"]
    assert summary["valid"] and "**VALID** — every measurement rule was met" in text
    assert "labconsole run --model mlp --engine torch --target cpu" in text and "--threads 2" in text
    assert all(unescaped_pipes(row) == 4 for row in table_rows(text))  # three columns on every row


def test_an_invalid_run_names_each_failed_rule_and_its_fix():
    summary = measured(iterations=200)  # p99 needs 662 samples: withheld, and the run is INVALID
    text = run_markdown({"run_id": "ab" * 16, "status": "completed", "spec": RunSpec().to_dict(),
                         "summary": summary})
    assert "**INVALID** —" in text
    assert "`percentile_p99`" in text
    assert "not available (withheld: 200 samples, 662 needed)" in text
    for reason in summary["invalid_reasons"]:
        assert escape(reason["fix"]) in text


def test_missing_energy_says_not_available_never_zero():
    text = run_markdown({"spec": RunSpec().to_dict(), "summary": measured()})
    row = next(r for r in table_rows(text) if r.startswith("| Energy per inference"))
    assert "not available (no power or energy telemetry in this run)" in row
    assert " 0 J" not in text


def test_energy_without_usable_samples_says_why():
    summary = measured()
    summary["energy"] = {"joules": None, "joules_per_inference": None, "method": None,
                         "reason": "no device group has usable samples in the window: cpu: integrated (gap)"}
    text = run_markdown({"spec": RunSpec().to_dict(), "summary": summary})
    assert "not available (no device group has usable samples in the window: cpu: integrated (gap))" in text


def test_an_estimated_energy_says_estimated():
    samples = [(int(i * S / 10), "estimated", "cpu.power.estimated", 50.0, "W", "estimated") for i in range(121)]
    summary = measured(samples=samples)
    assert summary["energy"]["method"] == "estimated"
    text = run_markdown({"spec": RunSpec().to_dict(), "summary": summary})
    row = next(r for r in table_rows(text) if r.startswith("| Energy per inference"))
    per_inference = summary["energy"]["joules_per_inference"]
    assert f"{per_inference:.3g} J (estimated from a TDP model, not measured" in row
    assert "measured:" not in row


def test_a_counted_energy_names_its_counter():
    summary = measured()
    summary["energy"] = {"joules": 210.0, "joules_per_inference": 0.105, "method": "counter", "scope": "gpu0",
                         "inferences": 2000, "headline_is_total": True}
    text = run_markdown({"spec": RunSpec().to_dict(), "summary": summary})
    assert "| Energy per inference | 0.105 J (measured: hardware energy counter, gpu0) |" in text
    assert "| Energy in the window | 210 J (measured: hardware energy counter, gpu0) |" in text


def test_a_hostile_run_name_cannot_break_the_table_or_inject_html(tmp_path):
    name = "a | b <script>alert(1)</script> **bold** [link](http://x) `code` _u_\nsecond line"
    run = stored(tmp_path, measured(), name=name)
    run["summary"]["invalid_reasons"] = [{"rule": "min_count", "detail": "x | y <img src=x>", "fix": "z"}]
    run["summary"]["valid"] = False
    text = run_markdown(run)
    title = text.splitlines()[0]
    assert title.startswith("### a \\| b &lt;script&gt;alert(1)&lt;/script&gt; \\*\\*bold\\*\\* \\[link\\](http://x)")
    assert "\\`code\\` \\_u\\_ second line — mlp" in title
    assert "<script>" not in text.split("```")[0]  # only the reproduce command, inside its code block, holds it raw
    assert "<img" not in text
    assert "x \\| y &lt;img src=x&gt;" in text
    assert all(unescaped_pipes(row) == 4 for row in table_rows(text))
    assert len([line for line in text.splitlines() if line.startswith("#")]) == 1


def test_a_backtick_fence_in_the_command_cannot_close_the_code_block():
    run = {"run_id": "cd" * 16, "spec": RunSpec(name="x ``` y").to_dict(), "summary": measured()}
    text = run_markdown(run)
    block = text[text.index("**Reproduce:**"):]
    fence = block.splitlines()[1]
    assert fence.startswith("````") and fence.endswith("sh")
    assert block.rstrip().endswith(fence[:-2])


def test_the_baseline_verdict_reads_as_on_the_card():
    summary = measured()
    summary["baseline"] = {"run_id": "1a2b3c4d" * 4, "verdict": "slower", "ratio": 1.083, "ci95": [1.071, 1.095],
                           "p_value": 0.0012, "changed": [{"field": "torch", "a": "2.3.1", "b": "2.4.0"}]}
    text = run_markdown({"spec": RunSpec().to_dict(), "summary": summary})
    assert ("**vs baseline:** slower than `1a2b3c4d` — ×1.083 (95% CI 1.071–1.095), block test p = 0.0012. "
            "Changed since the baseline: torch: 2.3.1 → 2.4.0") in text
    for verdict, words in (("undecided", "not told apart from"), ("no difference", "not told apart from"),
                           ("equivalent", "equally fast as")):
        summary["baseline"] = {**summary["baseline"], "verdict": verdict}
        text = run_markdown({"spec": RunSpec().to_dict(), "summary": summary})
        assert f"**vs baseline:** {words} `1a2b3c4d`" in text and "equally fast within the noise" not in text


def test_a_failed_run_without_a_summary_still_reads():
    run = {"run_id": "ef" * 16, "status": "failed", "error": "worker killed by SIGSEGV during warm-up",
           "spec": RunSpec(engine="onnxruntime", precision="int8", batch=8).to_dict(), "summary": None}
    text = run_markdown(run)
    assert title_line(run) == "mlp · onnxruntime · cpu · int8 · batch 8 · single-stream"
    assert "**Failed:** worker killed by SIGSEGV during warm-up" in text
    rows = table_rows(text)
    assert all(" 0 " not in row for row in rows)
    assert "| p50 latency | — | — |" in text
    assert "Validity: not assessed" in text
    assert "labconsole run --model mlp --engine onnxruntime" in text


@pytest.mark.parametrize("raw, shown", [("a|b", "a\\|b"), ("<b>", "&lt;b&gt;"), ("x & y", "x &amp; y"),
                                        ("*a*", "\\*a\\*"), ("line\nbreak", "line break")])
def test_escape(raw, shown):
    assert escape(raw) == shown
