"""A run always ends and is stored, even when part of its summary cannot be computed."""

from console.analysis import finished_run
from console.history import HistoryStore, HistoryWriter
from console.run import session as session_module
from engines.spec import RunSpec


def test_a_failing_energy_summary_still_ends_and_stores_the_run(tmp_path, monkeypatch):
    real = finished_run.summarize

    def energy_breaks(*args, **kwargs):
        if kwargs.get("samples"):
            raise ValueError("empty window")
        return real(*args, **kwargs)

    monkeypatch.setattr(finished_run, "summarize", energy_breaks)
    writer = HistoryWriter.open(tmp_path / "h.db")
    try:
        run = session_module.RunSession(RunSpec(duration_s=0.5, warmup_s=0.1), writer)
        run.start()
        record = run.wait(120)
    finally:
        writer.close()
    assert record is not None and record["status"] == "completed"
    assert record["summary"]["iterations"] > 0
    assert any("energy/telemetry summary failed (ValueError: empty window)" in n for n in record["summary"]["notes"])
    with HistoryStore(tmp_path / "h.db") as store:
        assert store.get_run(record["run_id"])["status"] == "completed"
