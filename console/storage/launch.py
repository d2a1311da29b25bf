"""Run one storage benchmark kind in a spawned worker, relaying its progress, with a timeout and a cancel.

Why a worker: a kind may import torch (checkpoint, cold start) or start reader processes of its own (feed), and
neither may enter or outlive the console (DESIGN.md §2). The worker is a spawn-context process in its own process
group, so a timeout or a cancel ends it together with the readers it started; it also ends itself when the console
that started it is gone. Stopping it sends SIGINT first, so the kind's own clean-up (test files, scratch folders,
its readers) runs before SIGTERM reaches its group. Every way a worker can end is an Outcome: `completed` with the kind's result, or `failed`
with the cause (bad input, with its fix; an exception, with its traceback; a death, with its signal; a timeout),
or `cancelled`. Qt-free: the window calls it from a thread, the CLI directly.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing
import os
import queue
import signal
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_TIMEOUT_S = 3600.0  # a find-max feed search on a slow disk takes many minutes; a hung kind cannot
GRACE_S = 5.0  # after SIGINT (the kind cleans up), this long before SIGTERM to its process group
POLL_S = 0.2

__all__ = ["Outcome", "run_kind", "kinds_table", "DEFAULT_TIMEOUT_S"]


@dataclass
class Outcome:
    """How a storage benchmark ended. `status`: completed | failed | cancelled; `cause`: why it did not complete
    (one line), `fix`: what to do (bad input), `error_kind`: bad-input | raised | died | timeout | cancelled |
    unknown-kind (None when completed)."""

    kind: str
    status: str
    result: dict[str, Any] | None = None
    cause: str | None = None
    fix: str | None = None
    error_kind: str | None = None
    traceback: str | None = None
    exit_code: int | None = None
    wall_s: float = 0.0
    started_ns: int = 0
    progress_seen: int = 0
    last_progress: dict[str, Any] = field(default_factory=dict)

    @property
    def message(self) -> str:
        """The cause and its fix as one line (empty when completed)."""
        if not self.cause:
            return ""
        return f"{self.cause} — {self.fix}" if self.fix else self.cause


# ---- Public API
def kinds_table() -> dict[str, str]:
    """The registered kinds (engines.storage.KINDS): name → "module:function". A copy: tests replace it."""
    from engines.storage import KINDS

    return dict(KINDS)


def run_kind(kind: str, options: Mapping[str, Any], on_progress: Callable[[dict[str, Any]], None] | None = None,
             timeout_s: float = DEFAULT_TIMEOUT_S, cancel: threading.Event | None = None,
             kinds: Mapping[str, str] | None = None) -> Outcome:
    """Run `kind` with `options` in a spawned worker and wait for it; `on_progress(update)` is called on this
    thread for each progress update ({"text", "fraction", ...}); `cancel.set()` from another thread stops it.
    `kinds` replaces the registered table (tests register a kind of their own)."""
    table = dict(kinds) if kinds is not None else kinds_table()
    started_ns = time.monotonic_ns()
    if kind not in table:
        return Outcome(kind, "failed", cause=f"there is no storage benchmark kind {kind!r}",
                       fix=f"choose one of {', '.join(sorted(table))}", error_kind="unknown-kind",
                       started_ns=started_ns)
    try:
        plain_options = json.loads(json.dumps(dict(options)))
    except (TypeError, ValueError) as exc:
        return Outcome(kind, "failed", cause=f"the options of {kind} are not plain data ({exc})",
                       fix="pass numbers, strings, lists and dicts only", error_kind="bad-input", started_ns=started_ns)
    ctx = multiprocessing.get_context("spawn")
    messages = ctx.Queue()
    process = ctx.Process(target=worker_main, args=(table[kind], plain_options, messages, os.getpid()),
                          name=f"labconsole-storage-{kind}", daemon=False)  # a daemon could not start readers
    process.start()
    try:
        outcome = _wait(kind, process, messages, on_progress, timeout_s, cancel)
    except KeyboardInterrupt:  # Ctrl+C: the worker has its own process group, so it is ended here
        _end(process)
        outcome = Outcome(kind, "cancelled", cause="interrupted (Ctrl+C)", error_kind="cancelled",
                          exit_code=process.exitcode)
    _remove_sandbox_dir(outcome)
    outcome.started_ns = started_ns
    outcome.wall_s = (time.monotonic_ns() - started_ns) / 1e9
    with contextlib.suppress(Exception):
        messages.close()
    return outcome


def worker_main(target: str, options: dict[str, Any], messages: Any, parent_pid: int) -> None:
    """The worker: its own process group (so the console can end it with every reader it started), a watch that
    exits when the console is gone, then `module:function(options, progress)`; the result or the error is sent
    as one message."""
    if hasattr(os, "setpgid"):
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
    # Stopping it is SIGINT first: a console started in the background by a shell script (`labconsole … &`) has
    # SIGINT ignored, the spawn passes that on, and the kind's clean-up would never run
    signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="parent-watch", daemon=True).start()

    def progress(update: Mapping[str, Any] | str) -> None:
        if isinstance(update, str):
            update = {"text": update}
        messages.put(("progress", json.loads(json.dumps(dict(update), default=str))))

    try:
        module, _, function = target.partition(":")
        result = getattr(importlib.import_module(module), function)(options, progress)
        messages.put(("result", json.loads(json.dumps(result, default=_not_plain))))
    except BaseException as exc:  # everything crosses back as data: the console never unpickles a foreign class
        fix = getattr(exc, "fix", None)
        is_input = type(exc).__name__ == "StorageError" or getattr(exc, "is_bad_input", False) is True
        text = getattr(exc, "message", None) if is_input else None
        messages.put(("error", {"error_kind": "bad-input" if is_input else "raised",
                                "cause": text or f"{type(exc).__name__}: {exc}", "fix": fix or None,
                                "traceback": traceback.format_exc()}))


# ---- Private API
def _wait(kind: str, process: Any, messages: Any, on_progress: Callable[[dict[str, Any]], None] | None,
          timeout_s: float, cancel: threading.Event | None) -> Outcome:
    deadline = time.monotonic() + timeout_s
    outcome = Outcome(kind, "failed")
    late: list[tuple[str, Any]] = []  # messages found in the pipe after the worker had already exited
    while True:
        tag, payload = late.pop(0) if late else _next(messages)
        if tag == "progress":
            outcome.progress_seen += 1
            outcome.last_progress = payload
            if on_progress is not None:
                on_progress(payload)
            continue
        if tag == "result":
            process.join(30)
            _end(process)
            if not isinstance(payload, dict):
                outcome.cause = f"the {kind} benchmark returned {type(payload).__name__}, not a result"
                outcome.error_kind = "raised"
                return outcome
            outcome.status, outcome.result, outcome.exit_code = "completed", payload, process.exitcode
            return outcome
        if tag == "error":
            process.join(10)
            _end(process)
            outcome.cause, outcome.fix = payload.get("cause"), payload.get("fix")
            outcome.error_kind, outcome.traceback = payload.get("error_kind"), payload.get("traceback")
            outcome.exit_code = process.exitcode
            return outcome
        if cancel is not None and cancel.is_set():
            _end(process)
            outcome.status, outcome.error_kind, outcome.exit_code = "cancelled", "cancelled", process.exitcode
            outcome.cause = f"cancelled after {_progress_text(outcome)}"
            return outcome
        if time.monotonic() > deadline:
            _end(process)
            outcome.error_kind, outcome.exit_code = "timeout", process.exitcode
            outcome.cause = (f"the {kind} benchmark did not finish within {timeout_s:g} s and was stopped "
                             f"({_progress_text(outcome)})")
            outcome.fix = "give it longer (--timeout S) or ask for less (a smaller data set, fewer points)"
            return outcome
        if not process.is_alive() and tag is None:
            late = _drain(messages)  # a message sent just before the exit may still be in the pipe
            if late:
                continue
            _end(process)  # readers it started may still run
            outcome.exit_code = process.exitcode
            outcome.error_kind = "died"
            outcome.cause = f"the {kind} worker {_death(process.exitcode)} {_progress_text(outcome)}"
            return outcome


def _remove_sandbox_dir(outcome: Outcome) -> None:
    """A sandboxed worker (a trusted TorchScript cold start) cannot delete its own folder: its starter does."""
    result = getattr(outcome, "result", None)
    if isinstance(result, dict) and isinstance(result.get("sandbox"), dict):
        from engines.sandbox import remove_work_dir

        remove_work_dir(result["sandbox"])


def _next(messages: Any) -> tuple[str | None, Any]:
    try:
        return messages.get(timeout=POLL_S)
    except (queue.Empty, EOFError, OSError):
        return None, None


def _drain(messages: Any) -> list[tuple[str, Any]]:
    found = []
    while True:
        try:
            found.append(messages.get(timeout=0.5))
        except (queue.Empty, EOFError, OSError):
            return found


def _end(process: Any) -> None:
    """Stop the worker: SIGINT to it alone first, so the kind's own clean-up runs (its `finally` removes test
    files and scratch folders, stops its readers); after GRACE_S, SIGTERM to its whole process group; then
    SIGKILL. A worker that has already exited only has what is left of its group ended."""
    steps = ((signal.SIGINT, GRACE_S, False), (signal.SIGTERM, 2.0, True),
             (getattr(signal, "SIGKILL", signal.SIGTERM), 5.0, True))
    for sig, wait, whole_group in steps:
        if not process.is_alive():
            break
        if whole_group and process.pid is not None and hasattr(os, "killpg"):
            with contextlib.suppress(OSError):
                if os.getpgid(process.pid) == process.pid:
                    os.killpg(process.pid, sig)
        if process.is_alive():
            with contextlib.suppress(OSError):
                os.kill(process.pid, sig)
        process.join(wait)
    _reap_group(process.pid)


def _reap_group(pgid: int | None) -> None:
    """Readers the worker started outlive it when it is killed: end what is left of its group."""
    if pgid is None or not hasattr(os, "killpg"):
        return
    with contextlib.suppress(OSError):
        os.killpg(pgid, getattr(signal, "SIGKILL", signal.SIGTERM))


def _death(exit_code: int | None) -> str:
    if exit_code is None:
        return "ended without a result"
    if exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = f"signal {-exit_code}"
        hint = " (SIGKILL: often the out-of-memory killer)" if name == "SIGKILL" else ""
        return f"was killed by {name}{hint}"
    return f"exited with code {exit_code} without a result"


def _progress_text(outcome: Outcome) -> str:
    text = (outcome.last_progress or {}).get("text")
    return f"at: {text}" if text else "before reporting any progress"


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(3)  # the console is gone: nobody is left to read the result


def _not_plain(value: Any) -> Any:
    """numpy numbers and arrays become plain numbers and lists; anything else its text."""
    for attr in ("tolist", "item"):
        if hasattr(value, attr):
            with contextlib.suppress(Exception):
                return getattr(value, attr)()
    return str(value)
