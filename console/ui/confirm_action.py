"""The window's Confirm action: run the experiments a run's bottleneck verdict predicts, off the GUI thread, and
show and keep the answer beside the verdict (Run page and History page).

The planning, the rounds and the storing are the CLI's own (console.cli.analyze_confirm.confirm_run: args-free,
made for a background thread), so `analyze --confirm` and the button give the same answer stored in the same
place (summary["bottleneck"]["confirmation"], which the report and the History page read). Why a thread and not
a worker process: the rounds are ordinary RunSession runs, whose workers are already separate processes; the
thread only waits for them. The rounds use the window's core partition, and they hold the workspace's one
"measuring" state (CONFIRM) while they go on: a run or a sweep at the same time would share their cores and
measure the confirmation, and the reverse. Cancel stops the round measuring now (its RunSession, handed over by
`on_session`) and stores nothing: the run keeps what it had (its earlier confirmation, or none).

Qt-free helpers (`why_not`, `headline`, `progress_text`) say in words why the button is off, what the outcome is
and where the rounds are; the ConfirmAction object holds the state and drives the pages' ConfirmPanels.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

from PySide6 import QtCore

from console.ui.workspace import CONFIRM, MACHINE, RUN, SWEEP, Busy, Workspace
from widgets.confirm_panel import ConfirmPanel

SHORTCUT = "Ctrl+Shift+K"  # Run ▸ Confirm verdict; Esc cancels, as it stops a run
LOOK_MS = 500  # how often the panels look whether something else started or stopped measuring
RECANCEL_MS = 500  # after Cancel, the round's session is asked again until the rounds end (one may be starting)

# what measures → why the button is off meanwhile
_BUSY = {RUN: "a run is in progress: the rounds would share its cores (let it finish first)",
         SWEEP: "a sweep is running: the rounds would share its cores (let it finish first)",
         MACHINE: "the machine card is being measured: the rounds would disturb it (let it finish first)"}


# ---- Qt-free words
def verdict_of(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """The run's stored bottleneck verdict (summary["bottleneck"]), None when it has none."""
    summary = (record or {}).get("summary")
    verdict = summary.get("bottleneck") if isinstance(summary, dict) else None
    return verdict if isinstance(verdict, dict) and verdict.get("class") else None


def why_not(record: dict[str, Any] | None, measuring: str | None = None, this_host: str | None = None,
            history_error: str = "") -> str | None:
    """Why the run shown cannot be confirmed now (None: it can). `measuring`: the workspace's state;
    `this_host`: this console's host id (a run measured elsewhere cannot be confirmed here)."""
    if not record:
        return "no run is shown"
    if history_error:
        return f"the history cannot be written, so the rounds could not be kept ({history_error})"
    status = record.get("status", "completed")
    if status != "completed":
        return f"the run {status}: only a completed run's verdict can be confirmed"
    if verdict_of(record) is None:
        return ("no verdict to confirm: this run was not analysed (Analyze, Ctrl+Shift+R, profiles a run and "
                "gives the verdict)")
    node = (record.get("environment") or {}).get("node") if isinstance(record.get("environment"), dict) else None
    if node:
        name = (node.get("host") or {}).get("hostname") or str(node.get("node_id") or "?")[:8]
        return (f"the run was measured on lab node {name}: the rounds would run on this machine, which is not the "
                "one the verdict is about")
    host = record.get("host_id")
    if this_host and host and host != this_host:
        return (f"the run was measured on {record.get('hostname') or 'another machine'}: the rounds would run on "
                "this machine, which is not the one the verdict is about")
    if not isinstance(record.get("spec"), dict) or not record.get("spec"):
        return "the run stored no setup to run again"
    if measuring == CONFIRM:
        return "a confirmation is already running (Cancel it first, Esc)"
    if measuring in _BUSY:
        return _BUSY[measuring]
    return None


def headline(block: dict[str, Any]) -> str:
    """The outcome in a few words: "Confirmed: compute", "Refuted — the data says host-overhead instead",
    "Undecided at this machine's noise", …"""
    outcome = block.get("outcome")
    if outcome == "confirmed":
        return f"Confirmed: {block.get('says') or block.get('tested') or block.get('verdict')}"
    if outcome == "refuted":
        says, also = block.get("says"), list(block.get("also_fits") or [])
        if says == "none of the classes":
            return "Refuted — the data fits none of the classes"
        if block.get("shown", True):
            return f"Refuted — the data says {says} instead"
        return f"Refuted — only {' and '.join([str(says), *also])} {'are' if also else 'is'} not ruled out"
    if outcome == "undecided":
        return "Undecided at this machine's noise"
    if outcome == "untestable":
        return "Not testable here"
    return "Confirmation not finished"


def detail(block: dict[str, Any]) -> str:
    """The block's sentence without the outcome words the headline already says ("refuted — the data says X
    instead: batch ×4 …" → "batch ×4 …")."""
    sentence = str(block.get("sentence") or "")
    head, _, rest = sentence.partition(": ")
    said = head.lower().startswith(("confirmed", "refuted", "undecided", "not tested", "not finished"))
    return rest if rest and said else sentence


# outcome.table's columns, in words short enough for the summary card's width (the History page's is ~400 px)
TABLE_HEADERS = ["Change", "Predicted", "Measured\n(95% CI)", "Rounds\na side", "Outcome"]


def table_rows(block: dict[str, Any]) -> list[list[str]]:
    """The experiments as the panel's rows (outcome.table's columns, each figure on two lines so the table fits
    the summary card's width): intervention, the tested class's range (the class is the headline's: naming it in
    each row pushed the outcome column off a ~330-px History card), ratio and interval, rounds, outcome."""
    from console.analysis.confirm.experiment import range_text

    rows = []
    for e in block.get("experiments") or []:
        low, high = e["ci95"]
        rows.append([str(e["intervention"]), range_text(e["predicted"]["range"]).replace("–", "–\n", 1),
                     f"×{e['ratio']:.3g}\n[{low:.3g}, {high:.3g}]", str(e["rounds"]),
                     str(e["outcome"]).replace("as predicted", "as\npredicted")])
    return rows


def notes(block: dict[str, Any], stored: str) -> list[str]:
    """What else the panel says: notes on the plan, what could not be tested, the round length, where it is kept."""
    out = [str(n) for n in block.get("notes") or []]
    out += [f"cannot test {why}" for why in block.get("untestable") or []]
    if block.get("round_s"):
        out.append(f"each round measured {block['round_s']:g} s, original (A) and changed (B) interleaved A B B A")
    if stored:
        out.append(stored)
    return out


def progress_text(planned: Any, event: dict[str, Any], index: int, total: int, max_rounds: int) -> str:
    """"batch ×4 (experiment 1 of 2): round 3 of at most 10, B — 1,204 iterations", or after a look, the ratio
    so far against the prediction."""
    which = f"{planned.axis.name} (experiment {index + 1} of {max(total, index + 1)})"
    if "side" in event:
        return (f"{which}: round {event['round'] + 1} of at most {max_rounds}, {event['side']} — "
                f"{event['n']:,} iterations")
    low, high = event["result"]["ci95"]
    said = {"yes": "inside", "no": "outside", "undecided": "not yet inside or outside"}.get(event.get("answer"), "?")
    from console.analysis.confirm.experiment import range_text

    return (f"{which}: after {event['rounds']} rounds a side ×{event['result']['ratio']:.3g} "
            f"[{low:.3g}, {high:.3g}], {said} {planned.tested.cls}'s {range_text(planned.tested.to_dict()['range'])}")


def _into_view(widget: Any) -> None:
    """Scroll the nearest scroll area holding `widget` so that it shows (the Run page's left column scrolls)."""
    from PySide6 import QtWidgets

    parent = widget.parentWidget()
    while parent is not None and not isinstance(parent, QtWidgets.QScrollArea):
        parent = parent.parentWidget()
    if parent is not None:
        parent.ensureWidgetVisible(widget, 0, 40)


def default_confirm(*args: Any, **kwargs: Any) -> tuple[dict[str, Any], str | None]:
    """console.cli.analyze_confirm.confirm_run, imported when first used (the window's start-up does not pay
    for it)."""
    from console.cli.analyze_confirm import confirm_run

    return confirm_run(*args, **kwargs)


class _Job:
    """One confirmation in flight: its run, its page, the round session measuring now, whether it was cancelled."""

    def __init__(self, run_id: str, page: str, verdict: dict[str, Any], max_rounds: int):
        self.run_id, self.page, self.verdict, self.max_rounds = run_id, page, verdict, max_rounds
        self.cancelled = False
        self.session: Any = None
        self.lock = threading.Lock()
        self.seen: list[str] = []  # the experiments started, in order
        self.total = 0
        self.last = ("Planning the experiments…", None)


class ConfirmAction(QtCore.QObject):
    """Drives the pages' ConfirmPanels: whether each can confirm the run it shows, the rounds on a thread, their
    progress, Cancel, and the answer shown and stored with the run."""

    sig_progress = QtCore.Signal(str, object)  # text, fraction (None: busy): from the rounds' thread
    sig_finished = QtCore.Signal(str, dict, str)  # run id, the confirmation block, the problem ("" when stored)
    sig_stored = QtCore.Signal(str)  # run id whose summary now has its confirmation (the History page reloads)
    sig_rounds_changed = QtCore.Signal(int)  # the cap on rounds a side the user set (the window remembers it)
    _sig_done = QtCore.Signal(object)  # the thread's (block, problem) or exception text, to the GUI thread

    # ---- Public API
    def __init__(self, workspace: Workspace, card: Callable[[str], dict[str, Any] | None] | None = None,
                 confirm: Callable[..., tuple[dict[str, Any], str | None]] = default_confirm,
                 trusts_code: Callable[[str], bool] | None = None, max_rounds: int | None = None,
                 say: Callable[[str], None] | None = None, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        from console.analysis.confirm import MAX_ROUNDS

        self._workspace, self._card, self._confirm = workspace, card, confirm
        self._trusts_code, self._say = trusts_code, say or (lambda _text: None)
        self.max_rounds = int(max_rounds or MAX_ROUNDS)
        self._panels: dict[str, ConfirmPanel] = {}
        self._records: dict[str, dict[str, Any] | None] = {}
        self.job: _Job | None = None
        self._measuring = workspace.measuring
        self._look = QtCore.QTimer(self)
        self._look.setInterval(LOOK_MS)
        self._look.timeout.connect(self._look_again)
        self._look.start()
        self._recancel = QtCore.QTimer(self)
        self._recancel.setInterval(RECANCEL_MS)
        self._recancel.timeout.connect(self._cancel_session)
        self.sig_progress.connect(self._show_progress)
        self._sig_done.connect(self._done)

    @property
    def running(self) -> bool:
        return self.job is not None

    def bind(self, page: str, panel: ConfirmPanel) -> None:
        """`panel` shows the confirmation of the run the page `page` shows."""
        self._panels[page] = panel
        self._records[page] = None
        panel.sig_confirm_requested.connect(lambda: self.confirm(page))
        panel.sig_cancel_requested.connect(self.cancel)
        panel.sig_rounds_changed.connect(self.set_max_rounds)
        panel.set_rounds(self.max_rounds)
        panel.hide()

    def set_max_rounds(self, rounds: int) -> None:
        """The cap on rounds a side for the next confirmation, shown alike on every page's panel."""
        self.max_rounds = int(rounds)
        for panel in self._panels.values():
            panel.set_rounds(self.max_rounds)
        self.refresh()
        self.sig_rounds_changed.emit(self.max_rounds)

    def show(self, page: str, record: dict[str, Any] | None) -> None:
        """The page now shows `record` (a finished record, or a stored run; None: none): its stored confirmation,
        or the button (off, with the reason, when it cannot run)."""
        self._records[page] = record
        panel = self._panels[page]
        panel.setVisible(record is not None)
        if record is None:
            return
        panel.clear_result()
        block = (verdict_of(record) or {}).get("confirmation")
        if isinstance(block, dict) and block.get("outcome"):
            self._show_block(panel, block, "")
        if self.job is not None and record.get("run_id") == self.job.run_id:
            panel.show_progress(*self.job.last)
        else:
            panel.end_progress()
        self.refresh()

    def refresh(self) -> None:
        """Each panel's button: on, or off with why (a run measures, no verdict, another machine's run …)."""
        this_host = getattr(self._workspace.store, "host_id", None)
        for page, panel in self._panels.items():
            record = self._records.get(page)
            if record is None:
                continue
            if self.job is not None and record.get("run_id") != self.job.run_id:
                why = f"a confirmation of run {self.job.run_id[:8]} is running (Cancel it first, Esc)"
            else:
                why = why_not(record, self._workspace.measuring, this_host, self._history_error())
            again = "again " if (verdict_of(record) or {}).get("confirmation") else ""
            panel.set_available(why is None, why or "", f"Run {again}the experiments this verdict predicts, "
                                f"interleaved with this setup (A B B A, up to {self.max_rounds} rounds a side "
                                f"each), and keep the answer with the run ({SHORTCUT})")

    def confirm(self, page: str) -> bool:
        """Start confirming the run `page` shows; False (and the reason said) when it cannot start."""
        record = self._records.get(page)
        if self.job is not None:
            self._say(f"A confirmation of run {self.job.run_id[:8]} is already running")
            return False
        why = why_not(record, self._workspace.measuring, getattr(self._workspace.store, "host_id", None),
                      self._history_error())
        if why is not None:
            self._say(f"Cannot confirm: {why}")
            self.refresh()
            return False
        assert record is not None
        from engines.spec import RunSpec, SpecError

        try:
            spec = RunSpec.from_dict(dict(record["spec"])).validate()
        except (SpecError, TypeError, ValueError) as exc:
            self._say(f"Cannot confirm: the run's stored setup cannot run here ({exc})")
            return False
        if spec.is_file and spec.trust_code:  # a stored spec never grants trust in a model that is code
            if self._trusts_code is None or not self._trusts_code(spec.model):
                self._say("Not confirmed: the model file is code and was not trusted")
                return False
        else:
            spec.trust_code = False
        try:
            self._workspace.claim(CONFIRM)
        except Busy as exc:
            self._say(f"Cannot confirm: {exc}")
            return False
        verdict = verdict_of(record)
        assert verdict is not None
        full = dict(record)
        if "ops" not in full and self._workspace.store is not None:  # a stored run: its op table, for the plan
            try:
                full["ops"] = self._workspace.store.ops(record["run_id"])
            except Exception:  # noqa: BLE001 — the plan then goes without the op figures; the rounds still run
                full["ops"] = []
        card = self._card(spec.target) if self._card is not None else None
        self.job = job = _Job(str(record["run_id"]), page, copy.deepcopy(verdict), self.max_rounds)
        for name, shown in self._records.items():
            if shown is not None and shown.get("run_id") == job.run_id:
                self._panels[name].show_progress(*job.last)
        _into_view(self._panels[page])  # started from the menu, the panel may be below the column's fold
        self.refresh()
        self._say(f"Confirming the verdict of run {job.run_id[:8]} ({verdict['class']})…")
        threading.Thread(target=self._rounds, args=(job, spec, full, verdict, card), name="confirm-rounds",
                         daemon=True).start()
        return True

    def cancel(self) -> bool:
        """Stop the confirmation: the round measuring now is cancelled, nothing is stored. True when one ran."""
        job = self.job
        if job is None:
            return False
        with job.lock:
            job.cancelled = True
        for name, record in self._records.items():
            if record is not None and record.get("run_id") == job.run_id:
                self._panels[name].show_cancelling()
        self._cancel_session()
        self._recancel.start()
        return True

    def shutdown(self) -> None:
        """The window closes: cancel the rounds and stop looking."""
        self._look.stop()
        self.cancel()

    # ---- Private API (rounds' thread)
    def _rounds(self, job: _Job, spec: Any, record: dict[str, Any], verdict: dict[str, Any],
                card: dict[str, Any] | None) -> None:
        try:
            job.total = self._count(verdict, spec, record, card)
            block, problem = self._confirm(
                self._workspace.db_path, spec, record, verdict, card, job.max_rounds, self._workspace.partition,
                on_text=lambda text: self.sig_progress.emit(text.strip(" …"), None),
                on_progress=lambda planned, event: self._progress(job, planned, event),
                on_session=lambda session: self._hand_over(job, session))
            if job.cancelled:
                problem = self._restore(job)
            self._sig_done.emit((block, problem or ""))
        except Exception as exc:  # noqa: BLE001 — said beside the verdict, not lost on a thread
            if job.cancelled:
                self._restore(job)
            self._sig_done.emit(f"{type(exc).__name__}: {exc}")

    @staticmethod
    def _count(verdict: dict[str, Any], spec: Any, record: dict[str, Any], card: dict[str, Any] | None) -> int:
        """How many experiments the plan holds (for "experiment 1 of 2"); 0 when it cannot be told beforehand."""
        try:
            from console.analysis.confirm import plan_for

            return len(plan_for(verdict, spec, record, card).experiments)
        except Exception:  # noqa: BLE001 — the count is a courtesy; confirm_run plans for real and says why
            return 0

    def _progress(self, job: _Job, planned: Any, event: dict[str, Any]) -> None:
        name = planned.axis.name
        if not job.seen or job.seen[-1] != name:
            job.seen.append(name)
        index = len(job.seen) - 1
        total = max(job.total, index + 1)
        done = (event["round"] + 0.5 * ("side" in event)) if "side" in event else event["rounds"]
        fraction = (index + min(done / job.max_rounds, 1.0)) / total
        self.sig_progress.emit(progress_text(planned, event, index, total, job.max_rounds), fraction)

    def _hand_over(self, job: _Job, session: Any) -> None:
        with job.lock:
            if job.cancelled:  # cancelled between rounds: this one never starts
                raise RuntimeError("cancelled in the window")
            job.session = session

    def _restore(self, job: _Job) -> str:
        """Cancelled: put the run's verdict back as it was (confirm_run stores even a cut-short answer)."""
        from console.history import HistoryError, HistoryStore

        try:
            with HistoryStore(self._workspace.db_path) as history:
                history.set_summary_field(job.run_id, "bottleneck", job.verdict)
        except HistoryError as exc:
            return f"the cancelled confirmation could not be taken back from the history ({exc})"
        return ""

    # ---- Private API (GUI thread)
    def _cancel_session(self) -> None:
        job = self.job
        if job is None:
            self._recancel.stop()
            return
        with job.lock:
            session = job.session
        if session is not None:
            try:
                session.cancel()
            except AttributeError:  # handed over, not started yet: asked again on the next tick
                pass

    def _show_progress(self, text: str, fraction: object) -> None:
        job = self.job
        if job is None:
            return
        if job.cancelled:
            return
        job.last = (text, fraction if isinstance(fraction, float) else None)
        for name, record in self._records.items():
            if record is not None and record.get("run_id") == job.run_id:
                self._panels[name].show_progress(*job.last)

    def _done(self, answer: object) -> None:
        job, self.job = self.job, None
        self._recancel.stop()
        self._workspace.release(CONFIRM)
        if job is None:
            return
        if isinstance(answer, str):  # the thread raised
            block: dict[str, Any] = {"outcome": "failed", "sentence": f"not finished: {answer}",
                                     "experiments": [], "untestable": []}
            problem, stored = answer, ""
        else:
            block, problem = answer  # type: ignore[misc]
            stored = "" if problem or job.cancelled else f"kept with run {job.run_id[:8]} in the history"
        if job.cancelled:
            for name, record in self._records.items():
                if record is not None and record.get("run_id") == job.run_id:
                    self._panels[name].end_progress()
                    self._panels[name].show_result(
                        "cancelled", "Confirmation cancelled",
                        "nothing was stored: the run keeps " + ("its earlier confirmation" if
                                                                job.verdict.get("confirmation") else
                                                                "its verdict unconfirmed"),
                        notes=[problem] if problem else [])
            self._say(f"Confirmation of run {job.run_id[:8]} cancelled; nothing stored")
            self.refresh()
            self.sig_finished.emit(job.run_id, block, problem or "cancelled")
            return
        if not problem:
            self._keep(job, block)
        for name, record in self._records.items():
            if record is not None and record.get("run_id") == job.run_id:
                panel = self._panels[name]
                panel.end_progress()
                self._show_block(panel, block, stored or (f"not kept: {problem}" if problem else ""))
        if self._records.get(job.page) is not None:  # the answer, not only the button, once it is laid out
            QtCore.QTimer.singleShot(0, lambda panel=self._panels[job.page]: _into_view(panel))
        self._say(f"Run {job.run_id[:8]}: {headline(block)}" + (f" ({problem})" if problem else ""))
        self.refresh()
        if not problem:
            self.sig_stored.emit(job.run_id)
        self.sig_finished.emit(job.run_id, block, problem or "")

    def _keep(self, job: _Job, block: dict[str, Any]) -> None:
        """The pages' records of the run get the confirmation too (Copy as Markdown, showing it again)."""
        for record in self._records.values():
            if record is not None and record.get("run_id") == job.run_id and isinstance(record.get("summary"), dict):
                record["summary"]["bottleneck"] = {**(verdict_of(record) or job.verdict), "confirmation": block}

    def _show_block(self, panel: ConfirmPanel, block: dict[str, Any], stored: str) -> None:
        try:
            rows = table_rows(block)
        except (KeyError, TypeError, IndexError, ValueError):  # a block from another version: its words only
            rows = []
        panel.show_result(str(block.get("outcome")), headline(block), detail(block), TABLE_HEADERS, rows,
                          notes(block, stored))

    def _look_again(self) -> None:
        if self._workspace.measuring != self._measuring:
            self._measuring = self._workspace.measuring
            self.refresh()

    def _history_error(self) -> str:
        return "" if self._workspace.usable else (self._workspace.startup_error or "it did not open")
