"""Whether two runs had the same core partition (console.run.partition), for `compare`.

Why: a run measured with the console on the worker's cores and one measured with the console on a core of its own
are different experiments — on a 2-core machine one worker has twice the cores of the other — so a comparison must
say when the partitions differ, not silently put the difference on the model. Qt-free, plain data in and out.
"""

from __future__ import annotations

from typing import Any

KEYS = ("confined", "worker_cpus", "console_cpus")


def partition_note(run_a: dict[str, Any], run_b: dict[str, Any]) -> dict[str, Any]:
    """{"same": True | False | None, "a", "b" (each run's partition in words), "text"}; `same` is None when a run
    predates partitions (nothing recorded), and the text says so."""
    a, b = _partition(run_a), _partition(run_b)
    words_a, words_b = _words(a), _words(b)
    if a is None or b is None:
        missing = " and ".join(name for name, record in (("A", a), ("B", b)) if record is None)
        return {"same": None, "a": words_a, "b": words_b,
                "text": f"core partition: not recorded for {missing} (a run from before partitions were stored); "
                        "whether the console shared the worker's cores is unknown"}
    if all(a.get(key) == b.get(key) for key in KEYS):
        return {"same": True, "a": words_a, "b": words_b, "text": f"same core partition: {words_a}"}
    return {"same": False, "a": words_a, "b": words_b,
            "text": f"the runs differ in their core partition — A: {words_a}; B: {words_b}. The worker had "
                    f"{_count(a)} in A and {_count(b)} in B, and the console shared its cores in "
                    f"{_shared(a, b)}: part of the difference may be the partition, not the model. "
                    "Fix: measure both with the same partition (--console-cores N; the window reserves 1 core "
                    "unless LABCONSOLE_CONSOLE_CORES says otherwise)"}


def _partition(run: dict[str, Any]) -> dict[str, Any] | None:
    environment = run.get("environment") or {}
    record = environment.get("partition") if isinstance(environment, dict) else None
    return record if isinstance(record, dict) else None


def _words(record: dict[str, Any] | None) -> str:
    if record is None:
        return "not recorded"
    return str(record.get("text") or ("confined" if record.get("confined") else "not confined"))


def _count(record: dict[str, Any]) -> str:
    cpus = record.get("worker_cpus") if record.get("confined") else None
    if not cpus:
        return "every core (shared with the console)"
    return f"{len(cpus)} CPU{'s' if len(cpus) != 1 else ''}"


def _shared(a: dict[str, Any], b: dict[str, Any]) -> str:
    shared = [name for name, record in (("A", a), ("B", b)) if not record.get("confined")]
    return " and ".join(shared) if shared else "neither"
