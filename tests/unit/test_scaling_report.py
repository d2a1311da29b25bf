"""The report's scaling section: E(N) against a 1-rank run in the same report (or how to add one), the waterfall
as a table ending at the measured step, the straggler and prediction lines, the lever line of a sweep, and nothing
at all for a report without a data-parallel run."""

from __future__ import annotations

from types import SimpleNamespace

from scaling_samples import spec, step_times_ns, summary

from console.report.document import Block
from console.report.scaling_section import scaling_blocks


def view(letter: str, ranks: int, step_s: float, *, bucket: float = 25.0, sweep: bool = False, **kw):
    run = {"run_id": f"{letter.lower() * 8}", "status": "completed", "host_id": "h1", "hostname": "labhost",
           "started_at": f"2026-12-04T03:0{ord(letter) - 64}", "spec": spec(ranks, bucket_mb=bucket),
           "summary": summary(ranks, step_s, bucket_mb=bucket, **kw)}
    if sweep:
        run["sweep_point"] = {"ranks": ranks, "bucket_mb": bucket}
    return SimpleNamespace(run=run, letter=letter, label=f"mlp · {ranks} ranks",
                           latency_ms=step_times_ns(step_s, seed=ord(letter)) / 1e6)


def texts(blocks) -> list[str]:
    return [b.text for b in blocks]


def test_e_the_waterfall_table_and_the_lines_of_a_two_rank_run():
    report = SimpleNamespace(runs=[view("A", 1, 0.100), view("B", 2, 0.080, straggler_s=0.02, exposed_s=0.006,
                                                             injected={"rank": 1, "ms": 20.0})], sweep=None)
    blocks = scaling_blocks(report, Block)
    assert blocks[0].kind == "heading" and blocks[0].text == "Scaling (data-parallel training)"
    lines = texts(blocks)
    e_line = next(t for t in lines if t.startswith("E(2)"))
    assert e_line.startswith("E(2) = 0.62 [") and "against run A (1 rank)" in e_line
    assert any(t.startswith("Straggler: rank 1 on labhost, 20 ms") for t in lines)
    assert any(t.startswith("All-reduce: predicted 10.8 ms") for t in lines)
    try:
        import console.analysis.scaling_waterfall  # noqa: F401 — C's part
    except ImportError:
        assert any("scaling_waterfall is not in this build" in t for t in lines)
        return
    table = next(b for b in blocks if b.kind == "table")
    names = [row[0] for row in table.rows]
    assert names[0] == "ideal" and names[-2] == "unattributed" and names[-1] == "measured"
    assert table.rows[-2][2].endswith("→ 80 ms") and table.rows[-1][1] == "80 ms"


def test_without_a_one_rank_run_it_says_how_to_add_one():
    blocks = scaling_blocks(SimpleNamespace(runs=[view("A", 2, 0.06)], sweep=None), Block)
    assert any("add the same spec's 1-rank run" in t for t in texts(blocks))


def test_a_sweep_report_names_the_lever_and_other_reports_have_no_section():
    runs = [view("A", 1, 0.1, sweep=True), view("B", 2, 0.070, sweep=True),
            view("C", 1, 0.1, bucket=100.0, sweep=True), view("D", 2, 0.052, bucket=100.0, sweep=True)]
    blocks = scaling_blocks(SimpleNamespace(runs=runs, sweep={"sweep_id": "s"}), Block)
    lever = next(t for t in texts(blocks) if t.startswith("Levers:"))
    assert "bucket 100 MB raised E(2) from 0.71 [" in lever
    plain = SimpleNamespace(run={"run_id": "x", "status": "completed", "spec": {"model": "mlp"}, "summary": {}},
                            letter="A", label="mlp", latency_ms=[])
    assert scaling_blocks(SimpleNamespace(runs=[plain], sweep=None), Block) == []


def test_a_sweep_report_from_the_history_carries_the_section(tmp_path):
    from scaling_samples import store_run

    from console.history import HistoryStore
    from console.report.content import gather
    from console.report.document import build

    with HistoryStore(tmp_path / "history.db") as store:
        sweep = store.create_sweep("scaling", {"ranks": [1, 2]})
        store_run(store, 1, 0.100, sweep=sweep, seed=1)
        store_run(store, 2, 0.060, sweep=sweep, seed=2)
        blocks = build(gather(store, [], sweep_id=sweep))
    heading = next(i for i, b in enumerate(blocks) if b.text == "Scaling (data-parallel training)")
    assert any(b.text.startswith("E(2) = 0.83 [") for b in blocks[heading:])
