"""A stored confirmation beside its verdict: the run's Markdown and the report's blocks show the answer and the
experiments that decided it; a run without one shows neither."""

from __future__ import annotations

import numpy as np

from console.analysis import summarize
from console.analysis.confirm import plan_for, run_confirmation
from console.analysis.confirm.outcome import table
from console.analysis.summary_markdown import run_markdown
from console.report.document import _confirmation
from engines.spec import RunSpec

VERDICT = {"class": "host-overhead", "secondary": "compute", "confidence": 0.6, "evidence": {},
           "sentence": "Bound by host/framework overhead (60% confident, then compute): tiny ops.",
           "scores": {"host-overhead": 0.8, "compute": 0.3}}


def confirmation() -> dict:
    """A confirmation run on host-overhead-like rounds (time follows the op count, not the data)."""
    the_plan = plan_for(VERDICT, RunSpec(model="synth-tiny-ops").validate(), {}, {"llc_bytes": 32 << 20},
                        worker_cores=1)

    def make(planned):
        def run_round(side, k):
            return np.full(20, 2.0 * (1 + 0.01 * (k % 3))) * (planned.axis.scales["ops"] if side == "B" else 1.0)
        return run_round
    return run_confirmation(the_plan, make, min_rounds=4, max_rounds=6)


def run_with(bottleneck: dict) -> dict:
    rng = np.random.default_rng(1)
    latency_ns = (5e6 * rng.gamma(50.0, 1 / 50.0, 2000)).astype(np.int64)
    summary = summarize(latency_ns, {"measured_s": latency_ns.sum() / 1e9}, {"load_s": 0.1}, batch=1)
    summary["bottleneck"] = bottleneck
    return {"run_id": "cd" * 16, "status": "completed", "spec": RunSpec(model="synth-tiny-ops").to_dict(),
            "summary": summary}


def test_the_markdown_gives_the_confirmation_under_the_finding_with_each_experiment():
    block = confirmation()
    assert block["outcome"] == "confirmed"
    text = run_markdown(run_with({**VERDICT, "confirmation": block}))
    lines = text.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("**Finding:**")))
    assert lines[at + 2].startswith("**Confirmation:** confirmed: host-overhead over compute — rows ×4 ×1 within ×0.8–1.25; rules out compute")
    assert lines[at + 3].startswith("- rows ×4: ×1")
    assert "**Confirmation:**" not in run_markdown(run_with(VERDICT))


def test_the_report_shows_the_answer_and_an_experiment_table():
    block = confirmation()
    paragraph, experiments = _confirmation(block)
    assert paragraph.kind == "paragraph" and paragraph.text.startswith("Confirmation: confirmed: host-overhead")
    headers, rows = table(block)
    assert experiments.headers == headers and experiments.rows == rows
    assert rows[0][0] == "rows ×4" and rows[0][1] == "host-overhead ×0.8–1.25" and rows[0][4] == "as predicted"
    assert _confirmation(None) == [] and _confirmation({"outcome": "confirmed"}) == []
