"""A scenario declares its figures and validity rules once, on its registration; the summary card, `--json`, a
report, validity and the fingerprint read the declaration (issue 24). The throwaway scenario
(tests/gui/throwaway_scenario.py) is its module plus one registration line, and nothing else names it."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import throwaway_scenario  # noqa: E402
from PySide6 import QtWidgets  # noqa: E402

from console.analysis.fingerprint import configuration  # noqa: E402
from console.analysis.summary import summarize  # noqa: E402
from console.cli import main  # noqa: E402
from console.history import HistoryStore  # noqa: E402
from console.report import document, gather, html_bytes  # noqa: E402
from console.ui.history_page import HistoryPage  # noqa: E402
from console.ui.run_page import RunPage  # noqa: E402
from engines import protocol, scenarios  # noqa: E402
from engines.figures import Figure, Figures  # noqa: E402
from engines.scenarios.base import LATENCY_BOUND, NoOptions, ScenarioInfo  # noqa: E402
from engines.spec import RunSpec  # noqa: E402


@pytest.fixture
def bursts():
    scenarios.register(throwaway_scenario.INFO)  # the one registration line a new scenario needs
    yield throwaway_scenario.INFO
    scenarios.unregister("bursts")


def _stored_run(tmp_path) -> tuple[str, str]:
    """Run the scenario in-process on a stand-in model, summarise what it emitted as the console does, store it."""
    spec = RunSpec.from_dict({"model": "mlp", "scenario": "bursts"}).validate()
    events: list[dict] = []
    model = SimpleNamespace(infer=lambda: None)
    result = scenarios.module("bursts").run(model, spec, events.append, lambda: False)
    shipped = [e for e in events if e["type"] == "latencies"]
    t_ns = np.concatenate([e["t_ns"] for e in shipped]).astype(np.int64)
    latency_ns = np.concatenate([e["latency_ns"] for e in shipped]).astype(np.int64)
    result = protocol.make("result", **result)
    summary = summarize(latency_ns, result, {"load_s": 0.01}, spec.batch, t_ns=t_ns, scenario="bursts")
    db = tmp_path / "history.db"
    with HistoryStore(db) as store:
        run_id = store.create_run(spec.to_dict())
        store.add_latencies(run_id, t_ns, latency_ns)
        store.finish_run(run_id, "completed", summary=summary)
    return str(db), run_id


def test_a_new_scenarios_own_figures_reach_the_card_the_json_and_a_report(qtbot, tmp_path, capsys, bursts):
    db, run_id = _stored_run(tmp_path)
    with HistoryStore(db) as store:
        page = HistoryPage(store)
        qtbot.addWidget(page)
        page.reload()
        page.open_run(run_id)
        card = page.summary
        assert card.scenario_title() == "bursts scenario"
        assert card.scenario_text("calls_per_burst") == "4 calls"  # its caption's unit
        assert card.scenario_text("full_bursts") == "100%"  # its declared format
        captions = {label.text() for label in card.findChildren(QtWidgets.QLabel)}
        assert {"Calls per burst", "Bursts completed"} <= captions
        markdown = page.copy_markdown()  # Copy as Markdown: the same figures, as declared
        assert "**bursts scenario:**" in markdown
        assert "| Calls per burst | 4 calls |" in markdown and "| Bursts completed | 100% |" in markdown
        report = gather(store, [run_id])
    tables = [b for b in document.build(report) if b.kind == "table" and b.headers == ["Figure", "Value"]]
    assert [["Calls per burst", "4 calls"], ["Bursts completed", "100%"]] in [t.rows for t in tables]
    assert "Bursts completed" in html_bytes(report).decode()

    assert main(["history", "--json", "--db", db]) == 0
    (row,) = json.loads(capsys.readouterr().out)["runs"]
    assert row["scenario"]["name"] == "bursts"
    assert row["scenario"]["calls_per_burst"] == 4 and row["scenario"]["full_bursts"] == 1.0


def test_the_run_page_shows_a_finished_runs_scenario_figures_as_declared(qtbot, tmp_path, bursts):
    db, run_id = _stored_run(tmp_path)
    with HistoryStore(db) as store:
        run = store.get_run(run_id)
    page = RunPage()
    qtbot.addWidget(page)
    page.handle({"type": "finished", "run_id": run_id, "status": "completed", "message": "", "spec": run["spec"],
                 "summary": run["summary"]})
    assert page.summary.scenario_text("calls_per_burst") == "4 calls"
    assert page.summary.scenario_text("full_bursts") == "100%"
    markdown = page.copy_markdown()
    assert "| Calls per burst | 4 calls |" in markdown and "| Bursts completed | 100% |" in markdown


def test_undeclared_values_are_listed_under_their_own_name_and_detail_is_not():
    figures = Figures((Figure("rate", "Rate", "queries/s"),), detail=("seed",))
    rows = figures.rows({"extra_thing": 2, "seed": 7, "rate": None, "note": "a sentence", "trials": [1, 2]})
    assert [(f.key, f.caption) for f, _ in rows] == [("rate", "Rate"), ("extra_thing", "Extra thing")]
    number = lambda v: "—" if v is None else str(v)  # noqa: E731 — a surface's own style for numbers
    assert rows[0][0].text(None, number) == "—"  # a missing number, without its unit
    assert rows[0][0].text(3, number) == "3 queries/s"
    assert Figure("x", "X", "ms", "{:.1f}").text(2.25, str) == "2.2 ms"
    assert Figure("x", "X", "ms").text(True, str) == "yes" and Figure("x", "X").text("warm", str) == "warm"


def test_a_scenario_declaring_latency_bound_rules_is_judged_on_its_bound():
    scenarios.register(ScenarioInfo("bounded", "Bounded", "tests.nowhere", NoOptions, validity=LATENCY_BOUND))
    try:
        latency = np.full(800, 1_000_000, dtype=np.int64)
        result = {"measured_s": 2.0, "latency_bound_ms": 0.5}
        judged = summarize(latency, result, None, 1, scenario="bounded")
        plain = summarize(latency, result, None, 1, scenario="single-stream")
    finally:
        scenarios.unregister("bounded")
    assert judged["validity"]["stability"]["judged"] is False and judged["validity"]["latency_bound"] is not None
    assert plain["validity"]["stability"]["judged"] is True and plain["validity"]["latency_bound"] is None
    with pytest.raises(ValueError, match="validity"):
        ScenarioInfo("typo", "Typo", "tests.nowhere", NoOptions, validity="latency")


def test_the_spec_sections_a_scenario_reads_are_part_of_its_fingerprint():
    spec = {"model": "gpt", "scenario": "reads-generation", "generation": {"prompt_tokens": 8}}
    scenarios.register(ScenarioInfo("reads-generation", "Reads generation", "tests.nowhere", NoOptions,
                                    extra_fields=("generation.prompt_tokens",)))
    try:
        assert configuration(spec)["generation"] == {"prompt_tokens": 8}
    finally:
        scenarios.unregister("reads-generation")
    assert "generation" not in configuration({**spec, "scenario": "single-stream"})
