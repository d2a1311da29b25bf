"""Worker entries for test_oom (spawned): they die as the OOM killer would make them, or hang while loading.

The fake cgroup's oom_kill counter lives at $LABCONSOLE_TEST_OOM_EVENTS: a worker "killed for memory" bumps it
before its SIGKILL, as the kernel does.
"""

import os
import signal
import time

from engines import protocol


def _loading(conn) -> None:
    conn.send(protocol.make("hello", pid=os.getpid(), versions={}))
    conn.send(protocol.make("phase", phase="loading", t_ns=time.perf_counter_ns()))


def killed_by_oom(conn, spec):
    _loading(conn)
    events = os.environ["LABCONSOLE_TEST_OOM_EVENTS"]
    with open(events, "w") as handle:
        handle.write("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n")
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(10)


def killed_by_someone(conn, spec):
    _loading(conn)
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(10)


def hangs_loading(conn, spec):
    _loading(conn)
    time.sleep(3600)
