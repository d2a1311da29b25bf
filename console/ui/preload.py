"""Imports the Qt-free modules that opening the workspace needs on a thread, while the window's shell is built and
painted: the history (sqlite-utils, numpy), the run session (analysis, worker), telemetry. Two cores do the two
jobs at once; the GUI thread joins the thread before it opens the workspace, so nothing is used half-imported.

Only imports run here (no database is opened: a sqlite connection belongs to the thread that opens it) and only
Qt-free modules (no Qt object is made off the GUI thread). An import that fails here is simply done again by the
GUI thread, which then raises it where it always did.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable

MODULES = ("console.history", "console.run.partition", "console.telemetry.hub", "console.run.worker_pool",
           "console.run.session",  # the RunController's
           "console.analysis.confirm", "console.analysis.summary_markdown", "console.analysis.stability_text",
           "console.analysis.kv_offload",  # the Run page's verdict panel and summary card
           "console.spec.choices", "console.spec.build", "console.spec.model_info",
           "console.machine.targets",  # the form's choices, the model's inputs, target discovery
           "multiprocessing.spawn")  # the telemetry sampler's process


class Preload:
    """One thread importing `modules` in order; `join()` waits for it (at once when it is done)."""

    def __init__(self, modules: Iterable[str] = MODULES):
        self.modules = tuple(modules)
        self.failed: dict[str, str] = {}  # module → why its import failed (the GUI thread's import says it again)
        self._thread = threading.Thread(target=self._run, name="labconsole-preload", daemon=True)

    # ---- Public API
    def start(self) -> Preload:
        self._thread.start()
        return self

    def join(self) -> None:
        self._thread.join()

    @property
    def done(self) -> bool:
        return self._thread.ident is not None and not self._thread.is_alive()

    # ---- Internals
    def _run(self) -> None:
        for name in self.modules:
            try:
                importlib.import_module(name)
            except Exception as exc:  # noqa: BLE001 - the GUI thread imports it again and reports it there
                self.failed[name] = f"{type(exc).__name__}: {exc}"
