"""The texts that say VALID name the rules that judged the run: LoadGen's server rules (latency bound at the
percentile, early stopping, duration, count) for a server run, duration, count and stability for the others."""

import numpy as np
import pytest

from console.analysis import summarize
from console.analysis.summary_markdown import run_markdown
from console.analysis.validity_text import rules_judged
from console.demo import figures
from engines.spec import RunSpec


def summary(scenario=None, bound_ms=None, iterations=2000, seed=3):
    """A summary computed the way a run's is: latencies around 5 ms over 10 s, judged by `scenario`'s rules."""
    rng = np.random.default_rng(seed)
    latency_ns = (5e6 * rng.gamma(50.0, 1 / 50.0, iterations)).astype(np.int64)
    t_ns = np.cumsum(latency_ns)
    result = {"measured_s": t_ns[-1] / 1e9, "dropped": 0}
    if bound_ms is not None:
        result["latency_bound_ms"] = bound_ms
    return summarize(latency_ns, result, {"load_s": 0.4}, batch=1, t_ns=t_ns, scenario=scenario)


def markdown(summary_, scenario="single-stream"):
    return run_markdown({"run_id": "ab" * 16, "status": "completed",
                         "spec": {**RunSpec().to_dict(), "scenario": scenario}, "summary": summary_})


SERVER_BOUND = ("LoadGen's server rules: p99 within the 20 ms latency bound with no query dropped, early stopping, "
                "duration, count, samples behind each percentile")
SERVER_NO_BOUND = "LoadGen's server rules, no latency bound given: duration, count, samples behind each percentile"
OTHERS = "LoadGen-style rules: duration, count, stability, samples behind each percentile"


@pytest.mark.parametrize(("scenario", "bound_ms", "words"), [
    ("server", 20.0, SERVER_BOUND), ("server", None, SERVER_NO_BOUND), (None, None, OTHERS),
    ("single-stream", 20.0, OTHERS), ("offline", None, OTHERS)])
def test_valid_texts_name_the_rules_of_the_runs_scenario(scenario, bound_ms, words):
    judged = summary(scenario, bound_ms)
    assert judged["valid"], judged["invalid_reasons"]
    assert rules_judged(judged) == words
    assert f"**VALID** — every measurement rule was met ({words})." in markdown(judged, scenario or "single-stream")
    assert figures.validity_line(judged) == (True, f"VALID measurement ({words})")


def test_a_server_run_is_never_said_to_be_judged_on_stability():
    for bound_ms in (20.0, None):
        text = markdown(summary("server", bound_ms), "server")
        verdict = next(line for line in text.splitlines() if line.startswith("**VALID**"))
        assert "stability" not in verdict and "server" in verdict
        assert "stability" not in figures.validity_line(summary("server", bound_ms))[1]


def test_a_summary_that_predates_the_judged_record_follows_the_runs_spec():
    old = summary("server", 20.0)
    del old["validity"]["stability"]["judged"]
    assert SERVER_BOUND in markdown(old, "server")  # the spec says server
    assert OTHERS in markdown(old, "single-stream")
    assert figures.validity_line(old, "server") == (True, f"VALID measurement ({SERVER_BOUND})")
    assert rules_judged({"valid": True}) == OTHERS  # nothing recorded, no scenario: the general rules
