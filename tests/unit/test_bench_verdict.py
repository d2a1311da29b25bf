"""The benchmarks' shared decision rule, intervals and pytest plug-in (tests/benchmarks/bench_verdict.py,
bench_stats.py, bench_report.py, conftest.py): checked here so `make test` guards the rule that keeps noise
from failing `make bench`."""

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    """Import a helper from tests/benchmarks by path (its modules import each other by bare name)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


stats = _load("bench_stats")
verdict = _load("bench_verdict")
report = _load("bench_report")
Goal = verdict.Goal


# ---- the rule
@pytest.mark.parametrize("interval, expected", [
    ((0.99, 1.02), "pass"),          # inside
    ((0.97, 1.03), "pass"),          # touching both bounds still inside
    ((1.04, 1.20), "fail"),          # wholly above
    ((0.50, 0.96), "fail"),          # wholly below
    ((0.91, 1.12), "undecided"),     # straddles both bounds
    ((1.00, 1.05), "undecided"),     # straddles the upper bound
])
def test_a_two_sided_goal(interval, expected):
    assert verdict.decide(interval, Goal.within(1.0, 0.03))[0] == expected


def test_a_one_sided_goal_and_the_reason_for_undecided():
    goal = Goal.at_most(1.05)
    assert verdict.decide((0.2, 1.0), goal)[0] == "pass"
    assert verdict.decide((1.06, 1.3), goal)[0] == "fail"
    outcome, reason = verdict.decide((0.91, 1.12), goal)
    assert outcome == "undecided"
    assert reason == ("95% interval 0.91–1.12× straddles the goal ≤ 1.05×: machine too noisy to decide; rerun on "
                      "a quiet machine")
    assert verdict.decide((0.5, 0.8), Goal.at_least(0.9))[0] == "fail"


def test_an_unbounded_side_is_undecided_unless_wholly_outside():
    goal = Goal.at_most(10, "%")
    outcome, reason = verdict.decide((2.0, math.inf), goal)
    assert outcome == "undecided" and "too few samples" in reason
    assert verdict.decide((11.0, math.inf), goal)[0] == "fail"
    assert verdict.decide((-math.inf, 9.0), goal)[0] == "pass"


def test_a_point_inside_the_goal_does_not_pass_on_its_own():
    """The LoadGen benchmark used to pass on the median alone; the interval decides now."""
    result = verdict.judge("x", 1.0, (0.8, 1.2), Goal.within(1.0, 0.1))
    assert result.verdict == "undecided" and result.value == 1.0


def test_goals_refuse_nonsense_and_read_well():
    with pytest.raises(ValueError, match="at least one bound"):
        Goal()
    with pytest.raises(ValueError, match="reversed"):
        Goal(2, 1)
    with pytest.raises(ValueError, match="not an interval"):
        verdict.decide((2, 1), Goal.at_most(3))
    assert Goal.within(1, 0.03).text() == "0.97–1.03×"
    assert Goal.at_most(250, "ms").text() == "≤ 250 ms"
    assert Goal.at_most(1, "% of a core").text() == "≤ 1% of a core"
    assert Goal.at_least(0.9, "of trials").text() == "≥ 0.9 of trials"


def test_a_result_is_plain_json_with_unbounded_sides_as_null():
    result = verdict.judge("jitter p99", 3.0, (1.0, math.inf), Goal.at_most(10, "%"), samples=100, p50=1.0)
    data = json.loads(json.dumps(result.to_json()))
    assert data["interval_95"] == [1.0, None]
    assert data["goal"] == {"low": None, "high": 10, "unit": "%", "text": "≤ 10%"}
    assert data["verdict"] == "undecided" and data["details"] == {"p50": 1.0} and data["samples"] == 100
    busy = verdict.undecided("loadgen p99", Goal.within(1, 0.1), "too busy")
    assert busy.to_json()["interval_95"] is None and busy.reason == "too busy"


# ---- the intervals
@pytest.mark.parametrize("n, ranks", [(7, (1, 7)), (11, (2, 10)), (20, (6, 15)), (21, (6, 16)), (25, (8, 18))])
def test_median_interval_uses_the_binomial_order_statistics(n, ranks):
    values = list(range(1, n + 1))
    assert stats.median_interval(values[::-1]) == ranks  # sorted inside; values equal their ranks


def test_too_few_samples_cannot_bound_a_median():
    assert stats.median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) == (-math.inf, math.inf)


def test_a_p99_needs_hundreds_of_samples_for_an_upper_bound():
    assert stats.quantile_interval(range(100), 0.99)[1] == math.inf
    low, high = stats.quantile_interval(range(400), 0.99)
    assert high == 399 and 385 <= low < 396


def test_median_with_interval_and_paired_ratios():
    ratios = stats.paired_ratios([2.0, 3.0, 4.0], [1.0, 3.0, 8.0])
    assert ratios == [2.0, 1.0, 0.5]
    assert stats.median_with_interval(ratios)[0] == 1.0
    with pytest.raises(ValueError, match="differ in number"):
        stats.paired_ratios([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="no samples"):
        stats.median_with_interval([])


@pytest.mark.parametrize("successes, trials, expected", [
    (10, 10, (0.6915, 1.0)), (9, 10, (0.5550, 0.9975)), (0, 10, (0.0, 0.3085)), (5, 10, (0.1871, 0.8129)),
    (36, 36, (0.9026, 1.0))])
def test_rate_interval_is_clopper_pearson(successes, trials, expected):
    low, high = stats.rate_interval(successes, trials)
    assert (round(low, 4), round(high, 4)) == expected


def test_wilson_interval():
    from scipy.stats import binomtest  # the reference (test-only library)

    for successes, trials in ((20, 20), (18, 20), (0, 20), (5, 10), (36, 36)):
        expected = binomtest(successes, trials).proportion_ci(0.95, method="wilson")
        assert stats.wilson_interval(successes, trials) == pytest.approx((expected.low, expected.high), abs=1e-9)
    assert round(stats.wilson_interval(20, 20)[0], 4) == 0.8389  # 20 of 20 cannot show a rate ≥ 90%
    with pytest.raises(ValueError, match="not a rate"):
        stats.wilson_interval(3, 2)


# ---- the report
def test_the_table_lists_every_figure_and_why_it_is_not_a_pass():
    results = [verdict.judge("fidelity mlp", 1.0, (0.99, 1.01), Goal.within(1, 0.03)),
               verdict.judge("fidelity bert", 0.9, (0.8, 1.1), Goal.within(1, 0.03))]
    machine = {"cpu_model": "Test CPU", "cores": 2, "usable_cores": 2, "load_average": [0.1, 0.2, 0.3],
               "python": "3.11", "torch": "2.13", "onnxruntime": "1.32", "date": "2026-01-01T00:00:00+00:00"}
    lines = report.table(results, [{"test": "t::gpu", "reason": "NVML: no driver"}], machine)
    text = "\n".join(lines)
    assert lines[0].split() == ["benchmark", "value", "95%", "interval", "goal", "verdict"]
    assert "fidelity mlp" in lines[2] and lines[2].endswith("PASS")
    assert lines[3].endswith("UNDECIDED") and "0.8–1.1" in lines[3]
    assert "fidelity bert: undecided — 95% interval 0.8–1.1× straddles" in text
    assert "t::gpu: skipped — NVML: no driver" in text and "Test CPU" in text
    doc = report.document([{"test": "a", **r.to_json()} for r in results], [], machine, 12.34)
    assert doc["summary"] == {"pass": 1, "fail": 0, "undecided": 1, "skipped": 0} and doc["wall_s"] == 12.3


def test_machine_facts_name_the_machine_and_the_versions(tmp_path):
    facts = report.machine_facts()
    assert facts["cores"] >= 1 and facts["python"].count(".") == 2 and facts["cpu_model"]
    assert {"torch", "onnxruntime", "load_average", "date"} <= set(facts)
    report.write(tmp_path / "bench-results.json", {"machine": facts})
    assert json.loads((tmp_path / "bench-results.json").read_text())["machine"] == facts
    assert [p.name for p in tmp_path.iterdir()] == ["bench-results.json"]


# ---- the pytest plug-in (tests/benchmarks/conftest.py), end to end in a throwaway benchmark folder
FAKE_BENCHMARKS = '''
import math
import pytest
from bench_verdict import Goal, judge, undecided

def test_inside(bench):
    bench.record(judge("inside", 1.0, (0.99, 1.01), Goal.within(1, 0.03)))

def test_noisy(bench):
    bench.record(judge("noisy", 1.0, (0.9, 1.1), Goal.within(1, 0.03)))
    bench.record(undecided("busy", Goal.at_most(2), "the machine was too busy"))

def test_not_here():
    pytest.skip("NVML: no driver")
'''


def _run_fake(tmp_path, extra: str = "") -> tuple[int, str, dict]:
    """Run the plug-in on throwaway benchmarks: (exit code, output, bench-results.json)."""
    for name in ("conftest.py", "bench_verdict.py", "bench_stats.py", "bench_report.py"):
        shutil.copy(BENCHMARKS / name, tmp_path / name)
    (tmp_path / "test_fake.py").write_text(FAKE_BENCHMARKS + extra)
    out = tmp_path / "results.json"
    env = {**os.environ, "BENCH_RESULTS": str(out)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr, json.loads(out.read_text())


def test_undecided_is_reported_and_not_failed(tmp_path):
    code, output, doc = _run_fake(tmp_path)
    assert code == 0, output
    assert doc["summary"] == {"pass": 1, "fail": 0, "undecided": 2, "skipped": 1}
    assert [b["name"] for b in doc["benchmarks"]] == ["inside", "noisy", "busy"]
    assert doc["skipped"] == [{"test": "test_fake.py::test_not_here", "reason": "NVML: no driver"}]
    assert {"cpu_model", "cores", "load_average", "python", "torch", "onnxruntime", "date"} <= set(doc["machine"])
    assert "busy: undecided — the machine was too busy" in output and "UNDECIDED" in output


def test_a_decided_miss_fails_its_test_and_the_run(tmp_path):
    code, output, doc = _run_fake(tmp_path, '''
def test_miss(bench):
    bench.record(judge("miss", 1.2, (1.1, 1.3), Goal.within(1, 0.03)))
    bench.record(judge("fine", 1.0, (0.99, 1.01), Goal.within(1, 0.03)))
''')
    assert code == 1, output
    assert "1 failed" in output and "decided miss" in output and "miss = 1.2" in output
    assert doc["summary"]["fail"] == 1 and doc["summary"]["pass"] == 2


def test_balanced_ratios_cancel_the_effect_of_going_first():
    balanced_ratios = stats.balanced_ratios
    # The same latency on both sides, but whoever goes first runs 10% faster; ours goes first in even rounds.
    ours = [0.9 if k % 2 == 0 else 1.0 for k in range(7)]
    theirs = [1.0 if k % 2 == 0 else 0.9 for k in range(7)]
    ratios = balanced_ratios(ours, theirs)
    assert len(ratios) == 3 and all(abs(r - 1.0) < 1e-12 for r in ratios)  # the odd last round is dropped
    assert balanced_ratios([2.0, 2.0], [1.0, 1.0]) == [2.0]
