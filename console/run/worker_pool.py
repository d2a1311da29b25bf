"""Warm workers for the window: a spare worker process per engine, spawned ahead with its engine imported, handed to
the next run of that engine so Run → first iteration skips interpreter start-up and the engine's import (~2 s).

Rules that keep the numbers honest and the pool safe:
- a spare is used once: it runs one spec and exits like any worker, so nothing a run did (a crash, a leak, a
  sandbox it entered for a user's file) reaches another run; a pooled worker is never reused after anything;
- a spare is made only while nothing measures (`prepare` is called when a run ends, and at start-up), and a spare
  still importing its engine when a run starts is stopped, so its import never competes with a measurement;
- the run records how its worker started (`warm`: engine imported; `warming`: spawned ahead, still importing;
  `cold`: spawned for the run);
- a spare may be taken at any moment of its start-up (the window makes its first one 2 s after launch, when a user
  may press Run): the pool keeps a taken spare's start-up objects until its child has them, since the `ready`
  event is named semaphores that the last reference in this process unlinks, and a child that had not yet opened
  them died in start-up (FileNotFoundError, "worker exited with code 1").
Qt-free; the window's workspace owns one pool, and `analyze --confirm` one for its rounds (other CLI commands run
one measurement per process and have none).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import threading
from dataclasses import dataclass
from typing import Any


@dataclass
class Spare:
    process: Any  # multiprocessing.Process
    conn: Any  # the console's end of its pipe
    ready: Any  # multiprocessing.Event: set once the engine is imported

    @property
    def state(self) -> str:
        return "warm" if self.ready.is_set() else "warming"


class WorkerPool:
    """At most one spare per engine. Thread-safe: runs start on the GUI thread or a sweep's thread."""

    def __init__(self, partition: Any = None) -> None:
        """`partition`: a console.run.partition.Partition; each spare is moved to its worker cores as it is spawned,
        so its engine import runs there and the run that takes it finds it on them."""
        self.partition = partition
        self._spares: dict[str, Spare] = {}
        self._handed: list[Spare] = []  # taken while still starting: kept until their child is past its start-up
        self._lock = threading.Lock()
        self._closed = False

    def prepare(self, engine: str) -> None:
        """Spawn a spare for `engine` unless one is alive (call only while nothing measures)."""
        from engines.worker import pool_main

        with self._lock:
            if self._closed:
                return
            spare = self._spares.get(engine)
            if spare is not None and spare.process.is_alive():
                return
            ctx = multiprocessing.get_context("spawn")
            conn, child_conn = ctx.Pipe(duplex=True)
            ready = ctx.Event()
            process = ctx.Process(target=pool_main, args=(child_conn, engine, ready),
                                  name=f"labconsole-spare-{engine}", daemon=True)
            process.start()
            child_conn.close()  # only the child holds its end: our death is its EOF
            if self.partition is not None and self.partition.confined:
                from console.run.partition import place_worker

                place_worker(self.partition, process.pid)  # the run that takes it moves it again and records that
            self._spares[engine] = Spare(process, conn, ready)

    def take(self, engine: str, distributed: bool = False) -> Spare | None:
        """The spare for `engine`, now the caller's (None: spawn cold). Spares of other engines still importing are
        stopped: their import would compete with the run about to measure.

        `distributed` (a data-parallel spec, engines.ddp): None, always. A spare is daemonic and its worker must
        start rank processes, which a daemonic process may not; the spare is kept (still importing: stopped)."""
        with self._lock:
            spare = None if distributed else self._spares.pop(engine, None)
            for other, idle in list(self._spares.items()):
                if not idle.ready.is_set():
                    _stop(self._spares.pop(other))
            self._handed = [handed for handed in self._handed if _starting(handed)]
            if spare is not None and _starting(spare):
                self._handed.append(spare)  # the caller keeps its process and pipe, maybe not its `ready`
        if spare is None or not spare.process.is_alive():
            return None
        return spare

    def states(self) -> dict[str, str]:
        """engine → warm | warming, for the spares alive now."""
        with self._lock:
            return {engine: spare.state for engine, spare in self._spares.items() if spare.process.is_alive()}

    def close(self) -> None:
        """Stop every spare (the window closes)."""
        with self._lock:
            self._closed = True
            spares, self._spares = list(self._spares.values()), {}
        for spare in spares:
            _stop(spare)


def _starting(spare: Spare) -> bool:
    """The spare's child may still have to open its start-up objects: it has not set `ready` (it sets it after
    opening them) and has not ended. Reads the process's sentinel, so it never reaps a process its run joins."""
    if spare.ready.is_set():
        return False
    try:
        return not multiprocessing.connection.wait([spare.process.sentinel], 0)
    except (OSError, ValueError):  # its process object was closed: it has ended
        return False


def _stop(spare: Spare) -> None:
    try:
        spare.conn.close()  # EOF: an idle spare exits by itself
    except OSError:
        pass
    spare.process.join(1.0)
    if spare.process.is_alive():
        spare.process.kill()
        spare.process.join(2.0)
