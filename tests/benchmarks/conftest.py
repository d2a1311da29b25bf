"""`make bench` bookkeeping: each benchmark records its figures through the `bench` fixture; a decided miss (a
`fail` verdict) fails that test, an undecided figure does not; at the end of the session the results go to
bench-results.json at the repository root (BENCH_RESULTS overrides the path) and a table is printed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from bench_report import document, machine_facts, table, write
from bench_verdict import FAIL, Result, fmt

_RESULTS = pytest.StashKey[list]()
_SKIPPED = pytest.StashKey[list]()
_START = pytest.StashKey[tuple]()


class Recorder:
    """Collects one test's figures; `record` prints each as it is judged, so a long run shows progress."""

    def __init__(self, nodeid: str, store: list):
        self.nodeid, self._store = nodeid, store

    def record(self, result: Result) -> Result:
        self._store.append((self.nodeid, result))
        interval = "" if result.interval is None else \
            f", 95% interval {fmt(result.interval[0])}–{fmt(result.interval[1])}"
        print(f"\n[benchmark] {result.name}: {fmt(result.value)}{interval} (goal {result.goal.text()}) → "
              f"{result.verdict.upper()}: {result.reason}", flush=True)
        return result


@pytest.fixture
def bench(request) -> Recorder:
    return Recorder(request.node.nodeid, request.config.stash[_RESULTS])


def pytest_configure(config):
    config.stash[_RESULTS] = []
    config.stash[_SKIPPED] = []
    config.stash[_START] = (time.perf_counter(), machine_facts())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test whose figures include a decided miss fails; one that skipped is listed with its reason."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
        item.config.stash[_SKIPPED].append({"test": item.nodeid, "reason": reason})
    if call.when != "call" or not report.passed:
        return
    missed = [r for nodeid, r in item.config.stash[_RESULTS] if nodeid == item.nodeid and r.verdict == FAIL]
    if missed:
        report.outcome = "failed"
        report.longrepr = "decided miss:\n" + "\n".join(f"  {r.name} = {fmt(r.value)}: {r.reason}" for r in missed)


def pytest_sessionfinish(session):
    results, skipped = session.config.stash[_RESULTS], session.config.stash[_SKIPPED]
    if not results and not skipped:
        return
    started, machine = session.config.stash[_START]
    rows = [{"test": nodeid, **r.to_json()} for nodeid, r in results]
    write(_results_path(session.config), document(rows, skipped, machine, time.perf_counter() - started))


def pytest_terminal_summary(terminalreporter, config):
    results, skipped = config.stash[_RESULTS], config.stash[_SKIPPED]
    if not results and not skipped:
        return
    terminalreporter.section("benchmarks")
    for line in table([r for _, r in results], skipped, config.stash[_START][1]):
        terminalreporter.write_line(line)
    terminalreporter.write_line(f"\nwritten to {_results_path(config)}")


def _results_path(config) -> Path:
    return Path(os.environ.get("BENCH_RESULTS") or config.rootpath / "bench-results.json")
