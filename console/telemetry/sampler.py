"""The telemetry sampler: its own process, a fixed schedule, batches to the parent.

Why a process of its own: the GUI thread stalls on redraws and the engine saturates cores and holds its GIL;
a sampler living in either would sample late and irregularly exactly when it matters. In a separate process
(spawn context: no inherited Qt or engine state) it keeps its own schedule.

Protocol (plain dicts over one duplex ``multiprocessing`` Pipe)
---------------------------------------------------------------
child -> parent:
    ``{"type": "sources", "sources": [description, ...]}``  first, after opening the sources; sent again if
        a source fails while sampling (it is then listed ``available: False`` with the reason).
        A description is ``{"name", "available", "reason", "metrics": [{"name", "unit", "description",
        "method"}], "unavailable_metrics": {metric: why}}`` (see :func:`registry.describe`).
    ``{"type": "samples", "rows": [Sample, ...]}``  about every 200 ms (FLUSH_NS); a Sample is
        ``(t_ns, source, metric, value, unit, method)`` with ``t_ns`` from ``time.perf_counter_ns()``
        (CLOCK_MONOTONIC: the engine workers' clock too).
parent -> child:
    ``{"cmd": "watch", "pid": int | None}``  follow this worker pid (None: stop following).
    ``{"cmd": "stop"}``  flush what is buffered and exit.

The child exits by itself when the pipe closes or its parent dies (parent sentinel, ``os.getppid()``),
so it is never left orphaned.

Schedule
--------
Ticks lie on an absolute grid (``start + k × period``), so jitter does not accumulate; a tick more than a
period late skips the missed grid points instead of bursting. Each source is stamped with the clock read just
before *its* ``sample()`` (a slow source does not shift the next one's time). A source with a ``period_s``
hint longer than the tick is polled every n-th tick (n = round(period_s × rate)); sources that mix fast and
slow metrics throttle their slow group themselves (:class:`base.Every`), told the tick period through
``Source.tick_ns`` before ``open()``.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import selectors
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from .base import Sample, Source
from .registry import check_names, describe, load_and_open

log = logging.getLogger(__name__)

MIN_RATE_HZ = 0.5
MAX_RATE_HZ = 50.0
DEFAULT_RATE_HZ = 10.0
FLUSH_NS = 200_000_000  # batch period towards the parent


def validate_rate(rate_hz: float) -> float:
    """The rate as float; ValueError naming the allowed range otherwise."""
    try:
        rate = float(rate_hz)
    except (TypeError, ValueError):
        rate = math.nan
    if not (MIN_RATE_HZ <= rate <= MAX_RATE_HZ):
        raise ValueError(f"rate_hz must be between {MIN_RATE_HZ:g} and {MAX_RATE_HZ:g} Hz, got {rate_hz!r}")
    return rate


# ---- Child side


def _open_all(names: list[str] | None, tick_ns: int = 100_000_000) -> tuple[list[Source], list[dict[str, Any]]]:
    active: list[Source] = []
    described: list[dict[str, Any]] = []
    for name in check_names(names):
        source, desc = load_and_open(name, tick_ns)
        described.append(desc)
        if source is not None and desc["available"]:
            active.append(source)
        elif source is not None:
            _close_quietly(source)
    return active, described


def _ticks_per_poll(source: Source, tick_ns: int) -> int:
    """How many ticks apart this source is polled: its ``period_s`` on the tick grid, at least every tick."""
    period_s = getattr(source, "period_s", None)
    if not period_s or period_s <= 0:
        return 1
    return max(1, round(period_s * 1e9 / tick_ns))


def _close_quietly(source: Source) -> None:
    try:
        source.close()
    except Exception:
        log.debug("closing telemetry source %s failed", source.name, exc_info=True)


def sampler_main(conn: multiprocessing.connection.Connection, rate_hz: float,
                 source_names: list[str] | None) -> None:
    """Child entry point: open the sources, then sample on an absolute schedule until told to stop."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the parent's business; it stops us
    period = round(1e9 / validate_rate(rate_hz))
    parent = multiprocessing.parent_process()  # None when run in-process (tests)
    ppid = os.getppid()
    # One selector for the whole life of the loop (multiprocessing.connection.wait builds a new one per call):
    # it wakes on a control message or the parent's death (its sentinel), else at the deadline.
    selector = selectors.DefaultSelector()
    selector.register(conn, selectors.EVENT_READ, "conn")
    if parent is not None:
        selector.register(parent.sentinel, selectors.EVENT_READ, "parent")
    clock = time.perf_counter_ns

    active, described = _open_all(source_names, period)
    by_name = {d["name"]: i for i, d in enumerate(described)}
    # A source with a period_s hint is polled every n-th tick of the grid (n >= 1).
    every = {id(s): _ticks_per_poll(s, period) for s in active}
    last_tick: dict[int, int] = {}
    rows: list[Sample] = []

    def send(msg: dict[str, Any]) -> bool:
        try:
            conn.send(msg)
            return True
        except (BrokenPipeError, EOFError, OSError):
            return False

    def flush() -> bool:
        if not rows:
            return True
        ok = send({"type": "samples", "rows": rows.copy()})
        rows.clear()
        return ok

    try:
        if not send({"type": "sources", "sources": described}):
            return
        start = next_tick = clock()
        next_flush = next_tick + FLUSH_NS
        while True:
            # Sleep until the deadline, serving control messages meanwhile.
            while (remaining := next_tick - clock()) > 0:
                ready = {key.data for key, _ in selector.select(remaining / 1e9)}
                if "parent" in ready:
                    return  # parent died
                if "conn" in ready:
                    try:
                        msg = conn.recv()
                    except (EOFError, OSError):
                        return  # pipe closed
                    cmd = msg.get("cmd") if isinstance(msg, dict) else None
                    if cmd == "stop":
                        flush()
                        return
                    if cmd == "watch":
                        pid = msg.get("pid")
                        for source in active:
                            try:
                                source.watch_pid(pid)
                            except Exception:  # following the worker is a nicety; sampling goes on
                                log.warning("telemetry source %s: watch_pid(%r) failed", source.name, pid,
                                            exc_info=True)
                    else:
                        log.warning("telemetry sampler: ignoring unknown message %r", msg)
            if os.getppid() != ppid:
                return  # re-parented: our parent is gone (its sentinel is watched in the select too)

            tick = (next_tick - start) // period
            failed: list[Source] = []
            for source in active:
                key = id(source)
                n = every[key]
                if n > 1:
                    last = last_tick.get(key)
                    if last is not None and tick - last < n:
                        continue
                    last_tick[key] = tick
                try:
                    # Each source is stamped when it is read: a slow one must not shift the next one's time.
                    rows.extend(source.sample(clock()))
                except Exception as exc:  # a broken source is dropped and reported, the others go on
                    failed.append(source)
                    described[by_name[source.name]] = describe(source, error=f"sample() failed: {exc!r}")
            if failed:
                for source in failed:
                    active.remove(source)
                    _close_quietly(source)
                if not (flush() and send({"type": "sources", "sources": described})):
                    return

            now = clock()
            next_tick += period
            if now - next_tick > period:  # more than a period late: skip the missed ticks, keep the grid
                next_tick += ((now - next_tick) // period + 1) * period
            if now >= next_flush:
                if not flush():
                    return
                next_flush = now + FLUSH_NS
    finally:
        selector.close()
        for source in active:
            _close_quietly(source)
        try:
            conn.close()
        except OSError:
            pass


# ---- Parent side


class Sampler:
    """Parent-side handle of the sampler process. Qt-free.

    ``on_samples(rows)`` and ``on_sources(descriptions)`` are called from a daemon reader thread, not the
    caller's thread: a GUI must marshal them to its own thread (e.g. a queued Qt signal).
    """

    def __init__(self, rate_hz: float = DEFAULT_RATE_HZ, sources: list[str] | None = None, *,
                 on_samples: Callable[[list[Sample]], None],
                 on_sources: Callable[[list[dict[str, Any]]], None] | None = None,
                 on_death: Callable[[dict[str, Any]], None] | None = None) -> None:
        """`on_death(death)`: the process ended without being stopped (see `death`); from the reader thread."""
        self.rate_hz = validate_rate(rate_hz)
        self.source_names = check_names(sources)
        self._on_samples = on_samples
        self._on_sources = on_sources
        self._on_death = on_death
        self._stopping = False
        self._first_t_ns: int | None = None
        self._last_t_ns: int | None = None
        self._rows = 0
        # Set when the process died on its own: {"exitcode", "t_ns" (when noticed), "first_t_ns", "last_t_ns"
        # (the samples it delivered), "rows"}; None while it lives or after a clean stop().
        self.death: dict[str, Any] | None = None
        self._proc: multiprocessing.process.BaseProcess | None = None
        self._conn: multiprocessing.connection.Connection | None = None
        self._reader: threading.Thread | None = None
        self._send_lock = threading.Lock()
        self._watched: int | None = None
        self.sources: list[dict[str, Any]] = []  # latest description received from the child

    # ---- Public API

    @property
    def pid(self) -> int | None:
        """Pid of the sampler process (None before start)."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        if self._proc is not None:
            raise RuntimeError("Sampler already started; create a new one to restart")
        ctx = multiprocessing.get_context("spawn")
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        proc = ctx.Process(target=sampler_main, args=(child_conn, self.rate_hz, self.source_names),
                           name="labconsole-telemetry", daemon=True)
        proc.start()
        child_conn.close()
        self._proc, self._conn = proc, parent_conn
        self._reader = threading.Thread(target=self._read_loop, name="telemetry-reader", daemon=True)
        self._reader.start()
        if self._watched is not None:
            self._send({"cmd": "watch", "pid": self._watched})

    def watch(self, pid: int | None) -> None:
        """Follow this worker pid (None: stop). Remembered if called before ``start()``."""
        self._watched = pid
        if self._conn is not None:
            self._send({"cmd": "watch", "pid": pid})

    def is_alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def stop(self, timeout: float = 2.0) -> None:
        """Ask the child to stop; terminate, then kill, if it does not within ``timeout`` seconds."""
        proc = self._proc
        if proc is None:
            return
        self._stopping = True
        self._send({"cmd": "stop"})
        proc.join(timeout)
        if proc.is_alive():
            log.warning("telemetry sampler %s did not stop in %.1f s; terminating", proc.pid, timeout)
            proc.terminate()
            proc.join(1.0)
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(1.0)
        if self._conn is not None:
            self._conn.close()
        try:
            proc.close()
        except ValueError:  # still running after kill (should not happen); leave it to the OS
            pass
        self._proc = self._conn = self._reader = None

    # ---- Private API

    def _count(self, rows: list[Sample]) -> None:
        if rows:
            self._first_t_ns = rows[0][0] if self._first_t_ns is None else self._first_t_ns
            self._last_t_ns = max(self._last_t_ns or rows[-1][0], rows[-1][0])
            self._rows += len(rows)

    def _died(self) -> None:
        """The pipe closed while nobody asked the process to stop: it died (killed, crashed, OOM)."""
        proc = self._proc
        if proc is not None:
            proc.join(1.0)
        self.death = {"exitcode": proc.exitcode if proc is not None else None, "t_ns": time.perf_counter_ns(),
                      "first_t_ns": self._first_t_ns, "last_t_ns": self._last_t_ns, "rows": self._rows}
        log.warning("telemetry sampler died (exit code %s) after %d rows", self.death["exitcode"], self._rows)
        if self._on_death is not None:
            try:
                self._on_death(self.death)
            except Exception:
                log.exception("telemetry on_death callback failed")

    def _send(self, msg: dict[str, Any]) -> bool:
        conn = self._conn
        if conn is None:
            return False
        with self._send_lock:
            try:
                conn.send(msg)
                return True
            except (BrokenPipeError, EOFError, OSError):
                return False

    def _read_loop(self) -> None:
        conn = self._conn
        assert conn is not None
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                if not self._stopping:
                    self._died()
                return
            kind = msg.get("type") if isinstance(msg, dict) else None
            try:
                if kind == "samples":
                    self._count(msg["rows"])
                    self._on_samples(msg["rows"])
                elif kind == "sources":
                    self.sources = msg["sources"]
                    if self._on_sources is not None:
                        self._on_sources(msg["sources"])
                else:
                    log.warning("telemetry sampler: ignoring unknown message %r", msg)
            except Exception:
                log.exception("telemetry callback failed for a %s message", kind)
