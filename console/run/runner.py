"""Runs one RunSpec in a spawn-context worker process and turns whatever happens into an outcome.

The GUI must survive anything a worker does: a clean result, a Python error, a segfault, a hang, a
user who presses Stop. One reader thread receives events (never the GUI thread), a watchdog ends a
worker that stops talking, and cancel escalates: message → join → terminate → kill.
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.util  # noqa: F401 — its exit hook (joins non-daemonic children) is registered before ours
import signal
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from console.run.oom import MemoryWatch
from engines import phases, protocol, sandbox
from engines.ddp import is_distributed
from engines.spec import RunSpec
from engines.worker import worker_main

CANCEL_GRACE_S = 3.0
JOIN_S = 5.0
RSS_EVERY_S = 0.25  # how often the worker's peak RSS is read while it lives (for an out-of-memory message)
_PARENTS: weakref.WeakSet[WorkerRun] = weakref.WeakSet()  # live non-daemonic workers: ended when we exit


@dataclass
class Outcome:
    """How a worker run ended: status is completed | cancelled | failed; message says why for the last two."""

    status: str
    message: str = ""
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    exitcode: int | None = None


class RunHandle:
    """What RunSession holds of any run, a local worker (WorkerRun) or one on a cluster node
    (console.cluster.dispatch.RemoteRun): the phase it is in, and its outcome once it has ended, which is handed
    to `on_end` once, on the run's reader thread, before wait() returns it."""

    def __init__(self, on_end: Callable[[Outcome], None]):
        self._on_end = on_end
        self._phase: str | None = None
        self._outcome: Outcome | None = None
        self._done = threading.Event()

    def wait(self, timeout: float | None = None) -> Outcome | None:
        self._done.wait(timeout)
        return self._outcome

    @property
    def phase(self) -> str | None:
        return self._phase

    def _end(self, outcome: Outcome) -> None:
        self._outcome = outcome
        try:
            self._on_end(outcome)
        finally:
            self._done.set()


class WorkerRun(RunHandle):
    """One worker process for one spec. Events and the final outcome are delivered on the reader thread."""

    # ---- Public API
    def __init__(self, spec: RunSpec, on_event: Callable[[dict[str, Any]], None],
                 on_end: Callable[[Outcome], None], entry: Callable[..., None] = worker_main,
                 memory: MemoryWatch | None = None, pool: Any = None, partition: Any = None):
        """`memory`: where the OOM-kill counters are read (tests give one over a fake cgroup). `pool`: a
        console.run.worker_pool.WorkerPool whose spare, when it has one for the engine, runs the spec (default entry
        only); `start_kind` then says warm or warming instead of cold. `partition`: a console.run.partition.Partition;
        the worker is moved to its worker cores right after it is spawned (or taken from the pool), and
        `placement` says how that went."""
        super().__init__(on_end)
        self.spec = spec
        self._partition = partition
        self.placement: dict[str, Any] | None = None
        self._pool = pool if entry is worker_main else None
        self.start_kind = "cold"
        self._on_event = on_event
        self._entry = entry
        self._cancel_at: float | None = None
        self._lock = threading.Lock()
        self.pid: int | None = None
        self._sandbox: dict[str, Any] | None = None  # the worker's sandbox (hello); its folder goes at the end
        self._memory = memory or MemoryWatch()
        self._rss_at = 0.0

    def start(self) -> None:
        """Spawn the worker (or hand the spec to the pool's spare). A data-parallel spec (engines.ddp) gets a
        worker of its own that is not daemonic: it starts the rank processes, which a daemonic process may not.
        It still ends when our pipe closes (and its ranks with it); should this process exit while it runs, it
        is stopped first (multiprocessing would otherwise wait for it at exit)."""
        self._memory.start()
        distributed = is_distributed(self.spec)
        spare = self._pool.take(self.spec.engine, distributed=distributed) if self._pool is not None else None
        if spare is not None:
            try:
                spare.conn.send({"cmd": "run", "spec": self.spec.to_dict()})
                self._process, self._conn, self.start_kind = spare.process, spare.conn, spare.state
            except (OSError, ValueError):  # it died since it was made: this run starts cold
                spare.process.kill()
                spare = None
        if spare is None:
            ctx = multiprocessing.get_context("spawn")
            self._conn, child_conn = ctx.Pipe(duplex=True)
            self._process = ctx.Process(target=self._entry, args=(child_conn, self.spec.to_dict()),
                                        name=f"labconsole-worker-{self.spec.model}", daemon=not distributed)
            self._process.start()
            child_conn.close()  # only the child holds its end: our death is its EOF
            if distributed:
                _PARENTS.add(self)
        self.pid = self._process.pid
        if self._partition is not None and self._partition.confined:  # while it starts: its threads follow
            from console.run.partition import place_worker

            self.placement = place_worker(self._partition, self.pid)
        self._last_event = time.monotonic()
        threading.Thread(target=self._pump, name="worker-reader", daemon=True).start()

    def cancel(self) -> None:
        """Ask the worker to stop between iterations; escalate if it does not within a few seconds."""
        with self._lock:
            if self._cancel_at is not None or self._done.is_set():
                return
            self._cancel_at = time.monotonic()
        try:
            self._conn.send({"cmd": "cancel"})
        except (OSError, ValueError):
            pass

    # ---- Private API
    def _pump(self) -> None:
        outcome = None
        while outcome is None:
            try:
                ready = self._conn.poll(0.1)
                event = self._conn.recv() if ready else None
            except (EOFError, OSError):
                outcome = self._died()
                break
            if event is not None:
                self._last_event = time.monotonic()
                outcome = self._handle(event)
            if outcome is None:  # also while events flow: a worker that talks but ignores cancel
                self._follow_memory()
                outcome = self._check_timeouts()
        self._finish(outcome)

    def _handle(self, event: Any) -> Outcome | None:
        try:
            protocol.check(event)
        except protocol.ProtocolError as exc:
            self._stop_process()
            return Outcome("failed", f"worker sent a malformed event ({exc}); it was stopped")
        kind = event["type"]
        if kind == "hello" and self._sandbox is None:  # the first hello only: later events come after the load
            self._sandbox = event.get("sandbox") or {}
        if kind == "phase":
            self._phase = event["phase"]
        self._on_event(event)
        if kind == "result":
            cancelled = bool(event.get("cancelled")) or self._cancel_at is not None
            self._join()
            return Outcome("cancelled" if cancelled else "completed",
                           "cancelled by the user; measurements up to the stop are kept" if cancelled else "",
                           result=event, exitcode=self._process.exitcode)
        if kind == "error":
            self._join()
            where = phases.get(self._phase).during
            return Outcome("failed", f"{event['message']} (during {where})", error=event,
                           exitcode=self._process.exitcode)
        return None

    def _check_timeouts(self) -> Outcome | None:
        now = time.monotonic()
        if self._cancel_at is not None and now - self._cancel_at > CANCEL_GRACE_S:
            how = self._stop_process()
            return Outcome("cancelled", f"cancelled by the user; the worker did not stop within {CANCEL_GRACE_S:g} s "
                                        f"during {phases.get(self._phase).during} and was {how}",
                           exitcode=self._process.exitcode)
        if not self._process.is_alive() and not self._conn.poll(0):
            return self._died()
        limits = self.spec.limits
        quiet_limit = limits.load_timeout_s if self._phase in (None, "loading") else limits.stall_timeout_s
        if now - self._last_event > quiet_limit:
            phase = phases.get(self._phase).during
            how = self._stop_process()
            path = "limits.load_timeout_s" if self._phase in (None, "loading") else "limits.stall_timeout_s"
            return Outcome("failed", f"worker stopped responding: no event for {quiet_limit:g} s during {phase}; "
                                     f"it was {how}. If the model is just slow, raise the time-out: "
                                     f"{timeout_hint(path, quiet_limit)}",
                           exitcode=self._process.exitcode)
        return None

    def _follow_memory(self) -> None:
        now = time.monotonic()
        if now - self._rss_at >= RSS_EVERY_S:
            self._rss_at = now
            self._memory.follow(self.pid)

    def _died(self) -> Outcome:
        self._process.join(JOIN_S)
        code = self._process.exitcode
        phase = phases.get(self._phase).during
        if code is not None and code < 0:
            out_of_memory = self._memory.diagnose(code, phase)
            if out_of_memory:
                return Outcome("failed", out_of_memory, exitcode=code)
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            not_memory = " (not for memory: the kernel's OOM-kill counters did not rise)" \
                if code == -signal.SIGKILL and self._memory.ruled_out() else ""
            return Outcome("failed", f"worker killed by {name} during {phase}{not_memory}", exitcode=code)
        if self._cancel_at is not None:
            return Outcome("cancelled", "cancelled by the user", exitcode=code)
        return Outcome("failed", f"worker exited with code {code} during {phase} without a result", exitcode=code)

    def _join(self) -> None:
        self._process.join(JOIN_S)
        if self._process.is_alive():
            self._stop_process()

    def _stop_process(self) -> str:
        """terminate, then kill; returns how it ended, for the message."""
        process = self._process
        if not process.is_alive():
            return "already stopped"
        process.terminate()
        process.join(2.0)
        if not process.is_alive():
            return "terminated (SIGTERM)"
        process.kill()
        process.join(2.0)
        return "killed (SIGKILL)"

    def _finish(self, outcome: Outcome) -> None:
        sandbox.remove_work_dir(self._sandbox)  # the worker is gone; its profile trace was moved out already
        try:
            self._conn.close()
        except OSError:
            pass
        self._end(outcome)


@atexit.register  # registered after multiprocessing's own exit hook, so it runs before it (atexit is LIFO)
def _stop_parents() -> None:
    """At exit, end the non-daemonic workers still running: multiprocessing would join them, and a worker whose
    pipe we still hold open never sees its EOF."""
    for run in list(_PARENTS):
        if not run._done.is_set():
            run._stop_process()


def timeout_hint(path: str, current_s: float) -> str:
    """How to raise a worker time-out, in the words of the surface the user has: the flag and the form's label."""
    from console.spec.build import flag_for, label_for

    return f"{flag_for(path)} S on the command line, or {label_for(path)} in the run form (now {current_s:g} s)"
