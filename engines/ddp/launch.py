"""Start a data-parallel run's ranks as local processes and watch them (engines.collectives.local_ranks).

The watcher is the collectives benchmark's: spawn context, one pipe per rank, every rank ended before this
returns; a rank that dies, raises or goes silent ends the run with a RuntimeError naming the rank and the last
step it reported ("rank 1 exited with code 9 after measured step 4 of 20 (the last it reported)"). Each rank
pins itself to its share of the worker's cores and kills itself when the worker dies (engines.ddp.rank).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from engines.collectives.local_ranks import run_local

__all__ = ["run_ranks"]


# ---- Public API
def run_ranks(plan: dict[str, Any], progress: Callable[[dict[str, Any]], None],
              on_message: Callable[[str, int, Any], None]) -> list[dict[str, Any]]:
    """Every rank's output, in rank order. `on_message(tag, rank, payload)` sees "ready", "phase", "progress"
    and "steps" messages as they arrive; it may raise to stop the run (cancel)."""
    return run_local(plan, progress, target=_rank_entry, describe=_Where().describe, on_message=on_message,
                     name="ddp", before_first="before its first step (starting, importing torch, building the model, "
                                              "joining the group)", unit="step")


# ---- Private API
def _rank_entry(rank: int, plan: dict[str, Any], addr: str, port: int, conn: Any) -> None:
    """A rank process: rank_main with its messages on its own pipe; a failure sent as text (a torch exception
    may not unpickle in the watcher)."""
    try:
        from engines.ddp.rank import rank_main

        rank_main(rank, plan, addr, port, conn.send)
    except BaseException as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        with contextlib.suppress(OSError):
            conn.send(("error", rank, f"{type(exc).__name__}: {text}"))


class _Where:
    """Each rank's place, from its messages: loaded, warm-up step i of n, measured step i of n."""

    def __init__(self) -> None:
        self.measured: int | None = None

    def describe(self, tag: str, rank: int, payload: Any) -> str | None:
        if tag == "ready":
            return "after loading, before its first step"
        if tag == "phase" and payload.get("phase") == "warmup":
            self.measured = int(payload["measured_steps"])
            return None
        if tag == "progress":
            return f"after warm-up step {payload['step']} of {payload['of']} (the last it reported)"
        if tag == "steps":
            done = int(payload["first"]) + len(payload["t0_ns"])
            of = f" of {self.measured}" if self.measured else ""
            return f"after measured step {done}{of} (the last it reported)"
        return None
