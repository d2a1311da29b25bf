"""Worker entry point: run one RunSpec and report everything as protocol events through a sink.

`run_spec` knows nothing of processes: it takes an `emit` callable and a `cancelled` callable, so the
same loop runs in a local spawn-context worker (`worker_main`, below), in-process for benchmarks,
or later on a Ray node.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import os
import platform
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from engines import backends, hygiene, profiling, protocol, sandbox, scenarios
from engines import inputs as model_inputs
from engines.ddp import is_distributed
from engines.spec import RunSpec, SpecError

Emit = Callable[[dict[str, Any]], None]
IN_PROCESS = {"active": False, "summary": "not applied: run in this process, not in a worker", "dir": None,
              "abi": None}


# ---- Public API
def run_spec(spec_data: dict[str, Any], emit: Emit, cancelled: Callable[[], bool] = lambda: False,
             confined: dict[str, Any] | None = None) -> None:
    """Run a spec to the end, emitting hello → … → result | error. Never raises for run failures.

    `confined`: this process's sandbox state (engines.sandbox; `worker_main` applies it), sent in hello."""
    confined = confined or IN_PROCESS
    emit(protocol.make("hello", pid=os.getpid(), versions=_versions(), t_ns=time.perf_counter_ns(),
                       sandbox=confined))
    try:
        spec = RunSpec.from_dict(spec_data).validate()
    except (SpecError, TypeError) as exc:
        emit(_error("spec", exc))
        return
    if is_distributed(spec):  # DDP ranks (engines.ddp): the driver emits loading → … → result | error itself
        # By name, as backends are (engines.registry): its ranks import torch, and the console imports this module
        importlib.import_module("engines.ddp.driver").run_distributed(spec, emit, cancelled)
        return
    # On its own thread: the load does not wait for the process sample; sent with `loaded` when the load outlasted
    # it, else with `result` (its last pass falls in the load or the warm-up, 1 s by default; a run with a shorter
    # warm-up ends it at the load's end, before its first iteration, so it never falls on a measured one)
    sample = hygiene.InBackground(exclude_pids=[os.getppid()])
    emit(protocol.make("phase", phase="loading", t_ns=time.perf_counter_ns()))
    try:
        read = _timed_read(spec.model) if spec.is_file else None
        model = backends.module(spec.engine).load(spec)
    except Exception as exc:  # noqa: BLE001 — any load failure becomes a reported error
        emit(_error("load", exc, f"could not load {spec.model} on {spec.engine}/{spec.target}", confined))
        return
    if read:
        model.details.update(read)
    try:
        _adopt_batch_of_inputs(spec, model.details)
    except SpecError as exc:
        model.close()
        emit(_error("spec", exc))
        return
    if spec.warmup_s < hygiene.SAMPLE_S:
        sample.end()  # no warm-up to hide its last pass in: taken now, shorter, not on a measured iteration
        sample.result()
    sent_hygiene = sample.done()
    emit(protocol.make("loaded", load_s=model.load_s, params=model.params, model_bytes=model.model_bytes,
                       versions=model.versions, details=model.details,
                       **({"hygiene": sample.result()} if sent_hygiene else {})))
    try:
        result = scenarios.module(spec.scenario).run(model, spec, emit, cancelled)
        if spec.profile_iterations and not cancelled():
            emit(protocol.make("phase", phase="profiling", t_ns=time.perf_counter_ns()))
            emit(protocol.make("profile", **_profile(model, spec)))
    except Exception as exc:  # noqa: BLE001
        emit(_error("runtime", exc, f"{spec.model} failed while running", confined))
        return
    finally:
        model.close()
    emit(protocol.make("phase", phase="finishing", t_ns=time.perf_counter_ns()))
    late = {} if sent_hygiene else {"hygiene": sample.result()}
    emit(protocol.make("result", cancelled=cancelled(), **late, **result))


def worker_main(conn, spec_data: dict[str, Any]) -> None:
    """Child-process entry: events go up the pipe; a 'cancel' message or a dead console stop the run."""
    faulthandler.enable()
    confined = _confine(spec_data)  # before any thread starts: Landlock binds only threads started after it
    cancel = threading.Event()
    threading.Thread(target=_listen, args=(conn, cancel), name="control", daemon=True).start()
    try:
        run_spec(spec_data, conn.send, cancel.is_set, confined)
    except (BrokenPipeError, EOFError, OSError):
        os._exit(3)  # the console is gone: nobody to report to
    finally:
        try:
            conn.close()
        except OSError:
            pass


def pool_main(conn, engine: str, ready) -> None:
    """A spare worker (console.run.worker_pool): import `engine` now, set `ready`, then wait for the one spec it will
    run and run it exactly as `worker_main` does. A closed pipe before that means the pool let it go."""
    faulthandler.enable()
    _import_engine(engine)
    ready.set()
    try:
        message = conn.recv()
    except (EOFError, OSError):
        os._exit(0)
    if not (isinstance(message, dict) and message.get("cmd") == "run" and isinstance(message.get("spec"), dict)):
        os._exit(0)
    worker_main(conn, message["spec"])


# ---- Private API
def _confine(spec_data: dict[str, Any]) -> dict[str, Any]:
    """Sandbox this worker (engines.sandbox) when it loads a user's model file: after the engine's imports,
    before the file is opened. Its own folder becomes the temp dir (profile traces go there; the runner removes
    it); a backend that must write elsewhere names the folders in its module's `sandbox_writes(spec)` (ONNX
    Runtime's int8 cache: the quantizer works on a staged view of the file in the temp dir, so the model's folder
    is never written)."""
    try:
        spec = RunSpec.from_dict(spec_data)
    except (SpecError, TypeError, ValueError):
        return {**IN_PROCESS, "summary": "not applied: the spec is invalid, so nothing is loaded"}
    if not spec.is_file:
        return {**IN_PROCESS, "summary": "not applied: a catalog model, not a user's file"}
    _import_engine(spec.engine)
    try:
        module = sys.modules.get(backends.info(spec.engine).module) if spec.engine in backends.names() else None
        writes = getattr(module, "sandbox_writes", None)  # folders the backend must write besides its own
        return sandbox.confine(sandbox.work_dir(), list(writes(spec)) if writes else [])
    except OSError as exc:  # no temporary folder to give it: the run goes on, and its record says so
        return {**IN_PROCESS, "summary": f"not applied (no folder for the worker: {exc})"}


def _import_engine(engine: str) -> None:
    """Import the engine's libraries: before a sandbox (an import may write caches it would refuse), or ahead of
    time (a spare)."""
    if engine in backends.names():
        for name in (backends.info(engine).module, *backends.info(engine).preload):
            with contextlib.suppress(Exception):  # an engine that does not import fails at load, saying why
                importlib.import_module(name)


def _adopt_batch_of_inputs(spec: RunSpec, details: dict[str, Any]) -> None:
    """A model file's batch is what its inputs hold (`--input x=3x512`: 3 samples a call), so every count of
    samples (scenarios, the summary's throughput) uses it; `samples_per_call` in `loaded` tells the console.
    Named dims the user's shapes give different sizes travel as `input_warnings` (the summary's notes)."""
    resolved = details.get("inputs") or []
    if not any("declared" in item for item in resolved):  # the torch backend keeps the resolved list with the file
        resolved = (details.get("file") or {}).get("inputs") or []
    if warnings := model_inputs.input_warnings(item for item in resolved if isinstance(item, dict)):
        details["input_warnings"] = warnings
    if not spec.is_file:
        return
    per_call = model_inputs.samples_per_call(resolved)
    if per_call is None:
        return
    details["samples_per_call"] = per_call
    if per_call != spec.batch:
        spec.batch = per_call
        spec.validate()  # a scenario may not take this batch (multi-stream: it must divide the streams)


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


def _error(kind: str, exc: BaseException, context: str = "", confined: dict[str, Any] | None = None) -> dict[str, Any]:
    message = sandbox.explain_denial(exc, confined) or f"{type(exc).__name__}: {exc}"
    if context:
        message = f"{context}: {message}"
    return protocol.make("error", kind=kind, message=message, traceback=traceback.format_exc())
