"""The worker's hygiene sample is taken beside the load: a quick load does not wait out its 0.2 s, and the record
still reaches the console (with `loaded` when the load outlasted the sample, else with `result`)."""

import threading
import time
import types

from engines import hygiene, worker
from engines.backends.base import LoadedModel

SPEC = {"model": "mlp", "iterations": 3, "warmup_s": 0.0}


def fake_engine(monkeypatch, load_s: float):
    def load(spec):
        time.sleep(load_s)
        return LoadedModel(infer=lambda: None, load_s=load_s, params=1, model_bytes=4)

    monkeypatch.setattr(worker.backends, "module", lambda name: types.SimpleNamespace(load=load))


def run(monkeypatch, load_s: float, sample_s: float, warmup_s: float = 0.0) -> tuple[list[dict], list[float]]:
    fake_engine(monkeypatch, load_s)
    monkeypatch.setattr(hygiene, "SAMPLE_S", sample_s)
    events, at = [], []

    def emit(event):
        events.append(event)
        at.append(time.monotonic())

    worker.run_spec({**SPEC, "warmup_s": warmup_s}, emit)
    return events, at


def test_a_quick_load_does_not_wait_for_the_sample_and_result_carries_it(monkeypatch):
    started = time.monotonic()
    events, at = run(monkeypatch, load_s=0.0, sample_s=2.0, warmup_s=2.5)
    kinds = [e["type"] for e in events]
    loaded, result = events[kinds.index("loaded")], events[kinds.index("result")]
    assert at[kinds.index("loaded")] - started < 1.5  # it waited for the 2-s sample before
    assert "hygiene" not in loaded
    assert isinstance(result["hygiene"]["busy"], bool) and result["hygiene"]["sample_s"] >= 2.0


def test_without_a_warm_up_to_hide_it_the_sample_ends_at_the_load_before_the_first_iteration(monkeypatch):
    """Its last pass must not fall on a measured iteration, and a run with no warm-up does not wait out the whole
    sample for it either (the warm start): it is taken when the load ends, and the record says how long it ran."""
    started = time.monotonic()
    events, at = run(monkeypatch, load_s=0.1, sample_s=3.0, warmup_s=0.0)
    kinds = [e["type"] for e in events]
    assert at[kinds.index("loaded")] - started < 1.5  # it waited out the 3-s sample before
    record = events[kinds.index("loaded")]["hygiene"]  # with `loaded`: taken before the first iteration
    assert isinstance(record["busy"], bool) and 0.1 <= record["sample_s"] < 1.5
    assert "hygiene" not in events[kinds.index("result")]


def test_a_sample_ended_at_once_still_spans_the_shortest_sample():
    sampling = hygiene.Sampling(5.0, ended=threading.Event())
    sampling._ended.set()
    started = time.monotonic()
    _, covered = sampling.others()
    assert hygiene.SHORTEST_SAMPLE_S <= covered < 1.0 and time.monotonic() - started < 1.0


def test_a_load_that_outlasts_the_sample_sends_it_with_loaded(monkeypatch):
    events, _ = run(monkeypatch, load_s=0.3, sample_s=0.05)
    loaded = next(e for e in events if e["type"] == "loaded")
    result = next(e for e in events if e["type"] == "result")
    assert isinstance(loaded["hygiene"]["busy"], bool) and "hygiene" not in result


def test_a_failed_sample_says_why_and_the_run_goes_on(monkeypatch):
    def broken(*args, **kwargs):
        raise PermissionError("no /proc here")

    monkeypatch.setattr(hygiene, "Sampling", broken)
    sample = hygiene.InBackground()
    assert sample.result(5) is None and "no /proc here" in sample.failure
