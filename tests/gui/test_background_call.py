"""BackgroundCall hands its result, or its failure, to the callbacks given when it is made."""

from __future__ import annotations

from console.ui.background import BackgroundCall


def test_done_receives_the_result(qtbot):
    results, failures = [], []
    call = BackgroundCall(None, results.append, failures.append)
    with qtbot.waitSignal(call.sig_done, timeout=60_000):
        call.start(lambda a, b: a + b, 2, 3)
    assert results == [5] and failures == []


def test_failed_receives_the_exception_named(qtbot):
    results, failures = [], []
    call = BackgroundCall(None, results.append, failures.append)

    def broken() -> None:
        raise ValueError("no such target")

    with qtbot.waitSignal(call.sig_failed, timeout=60_000):
        call.start(broken)
    assert failures == ["ValueError: no such target"] and results == []
