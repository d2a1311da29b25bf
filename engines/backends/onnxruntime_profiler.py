"""The ONNX Runtime backend's profiler hook: ORT's own profiler on a second session, to the op table and a trace."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from engines import profiling
from engines.backends import onnxruntime_session as sessions
from engines.backends.onnxruntime_session import PROVIDER_DEVICE
from engines.spec import RunSpec


def profiler(ort, spec: RunSpec, path: Path, providers, provider: str, provider_options: dict[str, Any],
              feeds: dict[str, Any]):
    """ONNX Runtime's own profiler, on a second session of the same model, options and inputs.

    A second session because profiling is a session option: the measured session is never slowed by it. Its
    first run (allocations, pre-packing) is left out of the op table; the Chrome trace keeps every event.
    """

    def profile(iterations: int, trace_path: str | None) -> dict[str, Any]:
        import json
        import os
        import tempfile

        options = sessions.session_options(spec, ort)
        options.enable_profiling = True
        with tempfile.TemporaryDirectory(prefix="labconsole-ort-profile-") as folder:
            options.profile_file_prefix = os.path.join(folder, "ort")
            session = sessions.session(ort, path, options, providers, provider)
            used = list(session.get_providers())
            infer, close = sessions.runner(session, feeds, used[0] if used else provider, provider_options, ort)
            try:
                infer()  # the first run: allocations and pre-packing, left out below
                walls = []
                started = time.perf_counter()
                for _ in range(iterations):
                    began = time.perf_counter()
                    infer()
                    walls.append(time.perf_counter() - began)
                wall_s = time.perf_counter() - started
            finally:
                close()
            with open(session.end_profiling(), encoding="utf-8") as handle:
                trace = json.load(handle)
            del session
        calls = profiling.ort_calls(trace, skip_runs=1)
        ops = profiling.aggregate(calls, profiling.ORT_METHOD)
        per_iteration = profiling.iteration_table(calls, walls)  # each node's model_run: resampled for stability
        if trace_path:
            with open(trace_path, "w", encoding="utf-8") as handle:
                json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, handle)
        notes = ["op times are ONNX Runtime's node times (kernel_time) on a second, profiling session of the same "
                 "model and options; its first run is left out of the table (it stays in the trace)",
                 "wall_s minus op_time_s is time outside the nodes (session.run, input and output handling)"]
        if PROVIDER_DEVICE.get(used[0] if used else provider) == "cuda":
            notes.append("on a GPU provider, node times are what the host sees of each node, not kernel times")
        return profiling.profile_event("onnxruntime", iterations, wall_s, ops, trace_path, notes,
                                       per_iteration=per_iteration)

    return profile
