"""`labconsole storage KIND ...`: a storage benchmark for AI (feed, sweep, checkpoint, coldstart), run in a spawned
worker with a progress line, kept in the history as a run (scenario storage-KIND) that `history`, `compare` and
`report` read like any other, printed as the kind's summary or one JSON document.

Each kind brings its own flags and summary in `console/cli/storage_<kind>.py` (`add_arguments`, `options_from`,
`text_lines`); this module adds what every kind shares: --json, --db, --tag, --timeout. Exit codes as `run`:
0 the benchmark completed (whether or not it passed: the summary says), 1 it failed (the cause on stderr) or the
history cannot take it, 2 a bad option found before anything ran, 130 cancelled.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import time
from typing import Any

from console.cli.common import (
    bad_input,
    emit_json,
    error,
    fail,
    progress_text,
    status_exit,
    wants_json,
    with_history,
)

NAME = "storage"
HELP = "storage benchmarks for AI: feed accelerators, I/O sweep, checkpoint, cold start"
DESCRIPTION = ("Measure the storage path of AI training and inference. Each run is kept in the history "
               "(scenario storage-KIND), so `labconsole history`, `compare` and `report` show it.")
# kind → the CLI module that owns its flags and summary (the engines side is engines.storage.KINDS)
KIND_MODULES = {
    "feed": "console.cli.storage_feed",
    "sweep": "console.cli.storage_sweep",
    "checkpoint": "console.cli.storage_checkpoint",
    "coldstart": "console.cli.storage_coldstart",
}
KIND_HELP = {
    "feed": "how many emulated accelerators a storage path keeps busy (AU, MLPerf Storage's rule)",
    "sweep": "block size × queue depth × readers: MB/s, IOPS and latency per point, the knee",
    "checkpoint": "save and restore a state dict (torch.save, safetensors, distributed): GB/s and Young's interval",
    "coldstart": "a model's cold start: read, deserialize, copy to the device, first inference",
}
PROGRESS_LOG_S = 1.0  # without a terminal, a progress line at most this often (a CI log stays short)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="storage_kind", metavar="KIND", title="kinds")
    for kind in KIND_MODULES:
        module, problem = kind_module(kind)
        help_text = KIND_HELP.get(kind, "") + (f" (not available: {problem})" if problem else "")
        kind_parser = sub.add_parser(kind, help=help_text, description=_description(kind, module, problem))
        if module is not None:
            module.add_arguments(kind_parser)
        _add_shared(kind_parser)


def main(args: argparse.Namespace) -> int:
    kind = getattr(args, "storage_kind", None)
    if kind is None:
        return fail(f"name a storage benchmark: labconsole storage {{{','.join(KIND_MODULES)}}} … "
                    "(labconsole storage KIND --help lists its options)")
    module, problem = kind_module(kind)
    if module is None:
        return error(f"storage {kind} is not available in this build ({problem})")
    from engines.storage.errors import StorageError

    try:
        options = module.options_from(args)
    except StorageError as exc:
        return bad_input(exc)
    return with_history(args, lambda store: _run(args, kind, module, options, store))


def kind_module(kind: str) -> tuple[Any | None, str | None]:
    """The CLI module of `kind`, or None and why (not built yet, or it fails to import)."""
    name = KIND_MODULES.get(kind)
    if name is None:
        return None, f"no storage kind {kind!r}"
    try:
        return importlib.import_module(name), None
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None, f"{name} is not part of this build"
        return None, f"{name} needs {exc.name}, which is not installed"
    except Exception as exc:  # another kind's import error must not take the whole command line down
        return None, f"{name} failed to import ({type(exc).__name__}: {exc})"


def result_document(kind: str, options: dict[str, Any], run_id: str, status: str, cause: str | None,
                    outcome: Any) -> dict[str, Any]:
    """What `storage KIND --json` prints: the stored run's id and status, the options, the result (its latency
    pairs counted, not listed), and why it did not complete."""
    result = dict(outcome.result or {})
    pairs = result.pop("latency_ns", None)
    if pairs is not None:
        result["latency_count"] = len(pairs) if isinstance(pairs, list) else None
    return {"run_id": run_id, "status": status, "kind": kind, "options": options, "result": result or None,
            "cause": cause, "fix": outcome.fix, "error_kind": outcome.error_kind if status != "completed" else None,
            "wall_s": round(outcome.wall_s, 3)}


# ---- Private API
def _run(args: argparse.Namespace, kind: str, module: Any, options: dict[str, Any], store: Any) -> int:
    from console.cli.progress import ProgressLine
    from console.history import HistoryError
    from console.storage.launch import run_kind
    from console.storage.runs import store_outcome
    from console.storage.telemetry import StorageTelemetry

    as_json = wants_json(args)
    line = ProgressLine.for_command(as_json)
    watch = None if getattr(args, "no_telemetry", False) else StorageTelemetry()
    with watch if watch is not None else contextlib.nullcontext():
        outcome = run_kind(kind, options, on_progress=_progress_printer(kind, line, as_json),
                           timeout_s=float(getattr(args, "timeout", None) or 3600.0))
    line.close()
    samples = watch.take() if watch is not None else []
    note = ({"dropped": watch.dropped, "problem": watch.problem} if watch is not None
            else {"problem": "not sampled (--no-telemetry)"})
    try:
        run_id, status, cause = store_outcome(store, kind, options, outcome, tags=getattr(args, "tag", None),
                                              samples=samples, telemetry=note)
    except HistoryError as exc:
        return error(f"the {kind} benchmark ended {outcome.status}, but the history could not keep it: {exc}")
    if as_json:
        emit_json(result_document(kind, options, run_id, status, cause, outcome))
    else:
        print(f"storage {kind} · run {run_id[:8]} · {status} · {outcome.wall_s:.1f} s")
        if outcome.result:
            for text in text_lines_of(module, outcome.result):
                print(f"  {text}")
    if status != "completed":
        print(f"labconsole: error: storage {kind} {status}: {cause or 'no cause given'}", file=sys.stderr)
        if outcome.traceback and not as_json:
            last = outcome.traceback.strip().splitlines()[-3:]
            print("  " + "\n  ".join(last), file=sys.stderr)
    return status_exit(status)


def text_lines_of(module: Any, result: dict[str, Any]) -> list[str]:
    """The kind's own summary (its `text_lines`); its figures as they are when that fails. The Storage page
    prints the same lines."""
    try:
        return [str(text) for text in module.text_lines(result)]
    except Exception as exc:
        figures = result.get("figures") or {}
        return [f"(the {result.get('kind')} summary could not be written: {type(exc).__name__}: {exc})",
                *(f"{name}: {value}" for name, value in figures.items())]


def _progress_printer(kind: str, line: Any, as_json: bool):
    last = {"text": None, "t": 0.0}

    def show(update: dict[str, Any]) -> None:
        text = str(update.get("text") or "")
        shown = progress_text(f"storage {kind}", {**update, "text": text})
        if line.enabled:
            line.show(shown)
            return
        now = time.monotonic()
        if as_json or text == last["text"] or now - last["t"] < PROGRESS_LOG_S:
            return
        last.update(text=text, t=now)
        print(f"  … {shown}", file=sys.stderr)

    return show


def _add_shared(parser: argparse.ArgumentParser) -> None:
    from console.cli.arguments import history_path
    from console.cli.numbers import number

    shared = parser.add_argument_group("history and output")
    shared.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON document")
    shared.add_argument("--db", default=argparse.SUPPRESS, metavar="PATH", type=history_path,
                        help="history database")
    shared.add_argument("--tag", action="append", default=None, metavar="TAG",
                        help="tag the stored run (repeatable)")
    shared.add_argument("--timeout", metavar="S", type=number(0, 7 * 86400, low_open=True, unit="s"),
                        default=3600.0, help="stop the benchmark after S seconds (default 3600); it is stored failed")
    shared.add_argument("--no-telemetry", action="store_true",
                        help="do not sample the storage devices (MB/s, IOPS, queue depth, await) while it runs; by "
                             "default they are sampled in a process of their own and stored with the run")


def _description(kind: str, module: Any, problem: str | None) -> str:
    if module is None:
        return f"{KIND_HELP.get(kind, kind)}. Not available in this build: {problem}."
    return f"{KIND_HELP.get(kind, kind)}. The run is kept in the history as scenario storage-{kind}."
