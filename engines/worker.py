"""Worker entry point: run one RunSpec and report everything as protocol events through a sink.

`run_spec` knows nothing of processes: it takes an `emit` callable and a `cancelled` callable, so the
same loop runs in a local spawn-context worker (`worker_main`, below), in-process for benchmarks,
or later on a Ray node.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import platform
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from engines import backends, hygiene, profiling, protocol, scenarios
from engines.spec import RunSpec, SpecError

Emit = Callable[[dict[str, Any]], None]


# ---- Public API
def run_spec(spec_data: dict[str, Any], emit: Emit, cancelled: Callable[[], bool] = lambda: False) -> None:
    """Run a spec to the end, emitting hello → … → result | error. Never raises for run failures."""
    emit(protocol.make("hello", pid=os.getpid(), versions=_versions(), t_ns=time.perf_counter_ns(),
                       hygiene=hygiene.collect(exclude_pids=[os.getppid()])))
    try:
        spec = RunSpec.from_dict(spec_data).validate()
    except (SpecError, TypeError) as exc:
        emit(_error("spec", exc))
        return
    emit(protocol.make("phase", phase="loading", t_ns=time.perf_counter_ns()))
    try:
        read = _timed_read(spec.model) if spec.is_file else None
        model = backends.module(spec.engine).load(spec)
    except Exception as exc:  # noqa: BLE001 — any load failure becomes a reported error
        emit(_error("load", exc, f"could not load {spec.model} on {spec.engine}/{spec.target}"))
        return
    if read:
        model.details.update(read)
    emit(protocol.make("loaded", load_s=model.load_s, params=model.params, model_bytes=model.model_bytes,
                       versions=model.versions, details=model.details))
    try:
        result = scenarios.module(spec.scenario).run(model, spec, emit, cancelled)
        if spec.profile_iterations and not cancelled():
            emit(protocol.make("phase", phase="profiling", t_ns=time.perf_counter_ns()))
            emit(protocol.make("profile", **_profile(model, spec)))
    except Exception as exc:  # noqa: BLE001
        emit(_error("runtime", exc, f"{spec.model} failed while running"))
        return
    finally:
        model.close()
    emit(protocol.make("phase", phase="finishing", t_ns=time.perf_counter_ns()))
    emit(protocol.make("result", cancelled=cancelled(), **result))


def worker_main(conn, spec_data: dict[str, Any]) -> None:
    """Child-process entry: events go up the pipe; a 'cancel' message or a dead console stop the run."""
    faulthandler.enable()
    cancel = threading.Event()
    threading.Thread(target=_listen, args=(conn, cancel), name="control", daemon=True).start()
    try:
        run_spec(spec_data, conn.send, cancel.is_set)
    except (BrokenPipeError, EOFError, OSError):
        os._exit(3)  # the console is gone: nobody to report to
    finally:
        try:
            conn.close()
        except OSError:
            pass


# ---- Private API
def _listen(conn, cancel: threading.Event) -> None:
    """Read control messages; when the console's end of the pipe closes, the console died: exit now."""
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            os._exit(3)
        if isinstance(message, dict) and message.get("cmd") == "cancel":
            cancel.set()


def _profile(model, spec: RunSpec) -> dict[str, Any]:
    """The engine's profile over `spec.profile_iterations` more calls, after the timed measurement.

    A profile that fails leaves the measured run intact: the event then carries no ops and says why. The Chrome
    trace goes to a temporary file; the console moves it next to its history.
    """
    iterations = int(spec.profile_iterations)
    if model.profile is None:
        return profiling.profile_event(spec.engine, iterations, 0.0, [], None,
                                       [f"the {spec.engine} backend has no profiler hook: no op table"])
    handle, trace_path = tempfile.mkstemp(prefix="labconsole-trace-", suffix=".json")
    os.close(handle)
    try:
        event, counters, note = _counted(lambda: model.profile(iterations, trace_path))
    except Exception as exc:  # noqa: BLE001 — the measurement is done and stays valid without a profile
        with contextlib.suppress(OSError):
            os.unlink(trace_path)
        return profiling.profile_event(spec.engine, iterations, 0.0, [], None,
                                       [f"profiling failed ({type(exc).__name__}: {exc}); the timed "
                                        "measurement is unaffected"])
    if not os.path.getsize(trace_path):
        os.unlink(trace_path)
        event["trace_path"] = None
    event["counters"] = counters
    if note:
        event["notes"] = [*event.get("notes", []), note]
    return event


def _counted(run: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any] | None, str]:
    """Run the profile inside the hardware counters (engines.counters) when this build has them.

    engines.counters.measure(run) → (run's result, COUNTERS); without the module the profile still runs, and the
    note says why there are no counters.
    """
    try:
        from engines.counters import measure
    except ImportError:
        return run(), None, "hardware counters: not read (engines.counters.measure is not part of this build)"
    result, counters = measure(run)
    return result, counters, ""


def _timed_read(path: str) -> dict[str, Any]:
    """Storage side of a cold start: read the model file (and ONNX external data beside it) once, timed.

    The OS page cache may already hold the file; the figure is then memory speed, and `read_note` says so.
    """
    files = [path] + [p for p in (path + ".data",) if os.path.isfile(p)]
    started = time.perf_counter()
    total = 0
    for name in files:
        with open(name, "rb", buffering=0) as handle:
            while chunk := handle.read(8 << 20):
                total += len(chunk)
    seconds = time.perf_counter() - started
    return {"read_s": seconds, "read_bytes": total,
            "read_mb_per_s": total / 1e6 / seconds if seconds > 0 else None,
            "read_note": "one sequential read of the model file before loading; a file already in the OS page "
                         "cache reads at memory speed"}


def _versions() -> dict[str, str]:
    return {"python": platform.python_version(), "platform": platform.platform(),
            "protocol": str(protocol.PROTOCOL_VERSION), "executable": sys.executable}


def _error(kind: str, exc: BaseException, context: str = "") -> dict[str, Any]:
    message = f"{type(exc).__name__}: {exc}"
    if context:
        message = f"{context}: {message}"
    return protocol.make("error", kind=kind, message=message, traceback=traceback.format_exc())
