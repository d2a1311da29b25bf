"""Start a run's ranks as local processes (spawn context) and watch them until each returns its output.

Why a watcher and not torch.multiprocessing.spawn: a rank that dies (the OOM killer, a crash in the backend) or
hangs (a peer stopped, a transport that never answers) must end the run `failed` with the cause and the place it
was at, not block the console's worker until its hour-long timeout. Each rank reports after every size; the
watcher ends the run when a rank exits without its result, when one reports an error (after a moment, so a peer's
death is named as the cause rather than the broken connection it left behind), or when no rank has reported for
`stall_timeout_s`. Every rank is ended before this returns.

The watcher serves the collectives benchmark (its default `target`) and the data-parallel training ranks
(engines.ddp.launch passes its own `target`, `describe` and `on_message`): a rank is any function
`target(rank, plan, addr, port, conn)` that sends (tag, rank, payload) tuples on `conn`, "result" once and
"error" on failure; every other tag is progress, which `describe` turns into where the rank was.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import Any

from engines.collectives.options import format_size
from engines.collectives.rank import free_port, run_rank

POLL_S = 0.25
ERROR_GRACE_S = 1.5  # after a rank's error, how long to look for a peer that died (the real cause)
STARTUP_S = 120.0  # added to the stall limit until a rank first reports: spawning and importing torch take time

__all__ = ["run_local"]


# ---- Public API
def run_local(plan: dict[str, Any], progress: Callable[[dict[str, Any]], None], *,
              target: Callable[..., None] | None = None, describe: Callable[[str, int, Any], str | None] | None = None,
              on_message: Callable[[str, int, Any], None] | None = None, name: str = "collectives",
              before_first: str = "before the first size was timed (starting, importing torch, joining the group)",
              unit: str = "size",
              ) -> list[dict[str, Any]]:
    """Each rank's output ("result" payload), in rank order; RuntimeError naming the rank and the cause otherwise.

    `target`: the rank process's entry (default: a collectives rank); `unit`: what one report covers (a size, a
    step), for the stall message. `describe(tag, rank, payload)`: where a
    progress message says the rank is, for error texts (None: unchanged). `on_message(tag, rank, payload)`: sees
    every message but "result" and "error" as it arrives (it may raise to stop the run: every rank is ended)."""
    ranks = int(plan["ranks"])
    target = target or _rank_main
    describe = describe or _describe
    ctx = multiprocessing.get_context("spawn")
    pipes = [ctx.Pipe(duplex=False) for _ in range(ranks)]  # (reader, writer) per rank: sent at once, no feeder
    port = free_port("127.0.0.1")
    procs = [ctx.Process(target=target, args=(rank, plan, "127.0.0.1", port, pipes[rank][1]), daemon=True,
                         name=f"labconsole-{name}-rank{rank}") for rank in range(ranks)]
    for proc in procs:
        proc.start()
    for _, writer in pipes:
        writer.close()  # the rank holds its own end: a rank that exits closes its pipe
    readers = [reader for reader, _ in pipes]
    progress({"text": f"started {ranks} ranks (rendezvous 127.0.0.1:{port})", "fraction": 0.0,
              "rank_pids": [p.pid for p in procs]})
    try:
        return _watch(procs, readers, plan, progress, describe, on_message, before_first, unit)
    finally:
        _end(procs)
        for reader in readers:
            with contextlib.suppress(OSError):
                reader.close()


# ---- Private API
def _rank_main(rank: int, plan: dict[str, Any], addr: str, port: int, conn: Any) -> None:
    """A rank process: its times (before it leaves the group, which takes seconds), or its error as text (a torch
    exception may not unpickle in the watcher), sent on its own pipe."""
    try:
        run_rank(rank, plan, addr, port, report=lambda update: conn.send(("progress", rank, update)),
                 on_done=lambda out: conn.send(("result", rank, out)))
    except BaseException as exc:
        with contextlib.suppress(OSError):
            conn.send(("error", rank, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"))


def _watch(procs: list[Any], readers: list[Any], plan: dict[str, Any], progress: Callable[[dict[str, Any]], None],
           describe: Callable[[str, int, Any], str | None], on_message: Callable[[str, int, Any], None] | None,
           before_first: str, unit: str = "size") -> list[dict[str, Any]]:
    stall = float(plan["stall_timeout_s"])
    results: dict[int, dict[str, Any]] = {}
    errors: dict[int, str] = {}
    where = before_first
    where_of: dict[int, str] = {}  # each rank's own last report (a dead rank is named where it last was)
    heard_any = False
    last_heard = time.monotonic()
    first_error_at: float | None = None
    open_readers = list(readers)
    pending: list[tuple[str, int, Any]] = []
    while len(results) < len(procs):
        if not pending:
            pending = _receive(open_readers)
        tag, rank, payload = pending.pop(0) if pending else (None, None, None)
        now = time.monotonic()
        if tag is not None:
            last_heard, heard_any = now, True
            if tag == "result":
                results[rank] = payload
            elif tag == "error":
                errors.setdefault(rank, payload)
                first_error_at = first_error_at or now
            else:
                said = describe(tag, rank, payload)
                if said:
                    where = where_of[rank] = said
                if on_message is not None:
                    on_message(tag, rank, payload)
                elif tag == "progress" and rank == 0:
                    progress({"text": f"{payload['op']} {format_size(payload['size_bytes'])}: "
                                      f"{payload['time_us']:.1f} us", "fraction": payload["step"] / payload["steps"]})
            continue
        dead = [(rank, proc.exitcode) for rank, proc in enumerate(procs)
                if proc.exitcode is not None and rank not in results and rank not in errors]
        if dead:
            rank, code = dead[0]
            raise RuntimeError(f"rank {rank} {_death(code)} {where_of.get(rank, where)}" + _others(errors))
        if errors and now - (first_error_at or now) >= ERROR_GRACE_S:
            rank = min(errors)
            raise RuntimeError(f"rank {rank} failed {where_of.get(rank, where)}: {errors[rank]}" + _others(errors, rank))
        if now - last_heard > stall + (0.0 if heard_any else STARTUP_S):
            silent = [r for r, p in enumerate(procs) if r not in results]
            raise RuntimeError(f"no rank reported for {now - last_heard:.0f} s {where}: rank(s) "
                               f"{', '.join(map(str, silent))} hang (a stopped peer, or a transport that never "
                               f"answers); raise stall_timeout_s only if one {unit} really takes that long")
    return [results[rank] for rank in range(len(procs))]


def _describe(tag: str, rank: int, payload: Any) -> str | None:
    """Where a collectives rank's progress message says it is."""
    if tag != "progress":
        return None
    return f"after {payload['op']} {format_size(payload['size_bytes'])} (step {payload['step']} of {payload['steps']})"


def _receive(readers: list[Any]) -> list[tuple[str, int, Any]]:
    """Every message ready within POLL_S; a closed pipe (its rank exited) is dropped from `readers`."""
    found = []
    for reader in wait(readers, timeout=POLL_S):
        try:
            found.append(reader.recv())
        except (EOFError, OSError):
            readers.remove(reader)
    return found


def _others(errors: dict[int, str], skip: int | None = None) -> str:
    rest = [f"rank {r}: {text}" for r, text in sorted(errors.items()) if r != skip]
    return f" ({'; '.join(rest)})" if rest else ""


def _death(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}" + (" (often the out-of-memory killer)" if name == "SIGKILL" else "")
    return f"exited with code {code} without its times"


def _end(procs: list[Any]) -> None:
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    deadline = time.monotonic() + 3.0
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():  # a stopped (SIGSTOP) or stuck rank ignores SIGTERM
            proc.kill()
            proc.join(2.0)
