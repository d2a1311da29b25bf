"""Worker entry points that misbehave on purpose, for the runner's failure tests (spawned by the tests)."""

import os
import signal
import time

from engines import protocol


def _start(conn, phase: str) -> None:
    conn.send(protocol.make("hello", pid=os.getpid(), versions={}))
    conn.send(protocol.make("phase", phase="loading", t_ns=time.perf_counter_ns()))
    conn.send(protocol.make("loaded", load_s=0.0, params=1, model_bytes=4))
    conn.send(protocol.make("phase", phase=phase, t_ns=time.perf_counter_ns()))


def segfault_in_warmup(conn, spec):
    _start(conn, "warmup")
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(10)


def raises_uncaught(conn, spec):
    conn.send(protocol.make("hello", pid=os.getpid(), versions={}))
    raise RuntimeError("a bug outside the run loop")


def hangs_in_warmup(conn, spec):
    _start(conn, "warmup")
    time.sleep(3600)


def ignores_cancel(conn, spec):
    _start(conn, "measuring")
    while True:  # keeps talking, never reads the cancel message
        conn.send(protocol.make("progress", phase="measuring", fraction=0.1, iterations=1, elapsed_s=0.1))
        time.sleep(0.05)


def sends_garbage(conn, spec):
    conn.send({"v": 1, "type": "hello"})
    time.sleep(3600)
