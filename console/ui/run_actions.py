"""Starting and stopping runs, the main window's part (mixed into MainWindow): the Run page's Run and Analyze, the
History page's Re-run, Stop, and the verdict's Confirm; each refused, saying why, while anything else measures."""

from __future__ import annotations

from typing import Any


class RunActionsWindow:
    """Expects the window's `run_page`, `pages`, `tabs`, `controller`, `workspace`, `store`, `settings`, `status`,
    `confirm`, `_links`, `_analyze_card`, `_remote_choice`, `_confirm_code`, `_trusts_code`, `show_page` and
    `_show_error` (console.ui.main_window)."""

    # ---- Public API
    def start_run(self, values: dict[str, Any] | None = None) -> str | None:
        """Validate the form and start a run; a bad field is named in a dialog, nothing is spawned."""
        if not self._free_to_run():
            return None
        from console.spec.build import SpecError, build_spec, label_for, window_values
        from engines.spec import is_model_path

        values = dict(values or self.run_page.form.values())
        self.settings.save_form_values(values)
        values = window_values(values)  # Iterations set: the until-stable default gives way
        values, remote = self._remote_choice(values)  # a `node/target` choice runs on that lab node
        inputs, input_values = self.run_page.inputs.values()
        missing = self.run_page.inputs.errors() if is_model_path(values.get("model") or "") else []
        if missing:
            self._show_error("The run was not started: " + "; ".join(missing) + ".", "Model inputs needed")
            return None
        try:
            spec = build_spec({**values, "inputs": inputs, "input_values": input_values})
        except SpecError as exc:
            self._show_error(f"The run was not started: {label_for(exc.field)}: {exc.detail}", "Invalid run setup")
            return None
        refused = self._place_ranks(spec, remote)  # Ranks with a joined lab cluster: Ray places them
        if refused:
            self._show_error(f"The run was not started: {refused}.", "Invalid run setup")
            return None
        if not self._confirm_code(spec, spec.trust_code):
            return None
        return self._start_spec(spec, remote=remote)

    def _place_ranks(self, spec, remote) -> str:
        """A data-parallel run (Ranks > 1) with a lab cluster joined: Ray places its ranks on the cluster's nodes
        and the worker stays here (engine_options.torch.ranks_cluster, as `run --ranks N --cluster`); a lab
        node's target runs a whole run on that node, which a run over many nodes is not: refused, saying why."""
        import dataclasses

        options = spec.options_for("torch")
        if getattr(options, "ranks", None) is None:
            return ""
        if remote is not None:
            return ("a lab node's target runs a whole run on that node; with Ranks Ray places the ranks on the "
                    "joined cluster's nodes: pick a target of this machine")
        address = self._cluster.address if self._cluster is not None else ""
        if address and options.ranks > 1:
            spec.engine_options["torch"] = dataclasses.replace(options, ranks_cluster=address)
        return ""

    def _free_to_run(self) -> bool:
        """A run may start: the history is usable and nothing measures (else the reason is shown)."""
        if self.controller is None:
            return False
        from console.ui.workspace import RUN, Busy

        try:
            self.workspace.check_free(RUN)
        except Busy as exc:
            self._show_error(str(exc), exc.title)
            return False
        return True

    def rerun(self, spec_data: dict[str, Any]) -> str | None:
        """Run a stored spec again (the History page's Re-run): the same path as the Run page's runs, refused
        while anything measures."""
        if not self._free_to_run():
            return None
        from engines.spec import RunSpec, SpecError

        try:
            spec = RunSpec.from_dict(dict(spec_data)).validate()
        except (SpecError, TypeError, ValueError) as exc:
            self._show_error(f"The stored setup cannot be run again: {exc}", "Cannot re-run")
            return None
        # a stored run that trusted its file (perhaps a colleague's, imported) is asked about again
        if not self._confirm_code(spec, spec.trust_code):
            return None
        return self._start_spec(spec, "re-run")

    def _start_spec(self, spec, what: str = "started", remote=None) -> str | None:
        from console.analysis.rules_file import RulesError
        from console.spec.build import SpecError, label_for

        try:
            run_id = self.controller.start(spec, remote=remote)
        except SpecError as exc:
            self._show_error(f"The run was not started: {label_for(exc.field)}: {exc.detail}", "Invalid run setup")
            return None
        except RulesError as exc:  # the lab's rules.toml in the data folder cannot be used
            self._show_error(f"The run was not started: the validity rules file {exc}", "Validity rules")
            return None
        except RuntimeError as exc:
            self._show_error(str(exc), "Run in progress")
            return None
        self.show_page("run")
        self.status.showMessage(f"Run {run_id[:8]} {what}: {spec.label()}" + (f" on {self.run_page.form.values().get('target')}" if remote else ""))
        return run_id

    def analyze_run(self, values: dict[str, Any] | None = None) -> str | None:
        """Start a run that is profiled after its timed measurement: the op table appears on the Run page.

        As `labconsole analyze` does, this host's machine card for the target comes first — measured in the
        background when none is stored (console.ui.analyze_card), so the verdict stored with the run is judged
        against roofs. The run id, or None when nothing started yet (the run starts once the card is there)."""
        from console.analysis.profile_view import PROFILE_ITERATIONS
        from console.spec.build import SpecError, build_spec, window_values
        from console.ui.workspace import MACHINE

        if self.run_page is None or self.controller is None:
            return None
        # a card being measured on the Machine page is waited for; anything else measuring refuses, as for a run
        if self.workspace.measuring != MACHINE and not self._free_to_run():
            return None
        values = window_values(values or self.run_page.form.values())
        values.setdefault("profile_iterations", PROFILE_ITERATIONS)
        local, remote = self._remote_choice(values)
        try:
            build_spec(local)
            valid = True
        except SpecError:
            valid = False
        if remote or not valid:  # a bad field is named now, not after minutes of measuring; a lab node's card
            return self.start_run(values)  # is the node's (the session judges a remote run without one)
        if self._analyze_card is None:
            from console.ui.analyze_card import CardBeforeAnalyze

            self._analyze_card = CardBeforeAnalyze(self.workspace, self.db_path, self.run_page.progress,
                                                   self.run_page.form.set_running, self.status.showMessage,
                                                   parent=self)
        return self._analyze_card.then(str(local.get("target") or "cpu"), lambda: self.start_run(values))

    def _machine_card(self, target: str) -> dict[str, Any] | None:
        """This host's stored machine card for the target (roofs for the op table); None when none is stored."""
        from console.history import HistoryError
        from console.machine.cards import newest_card

        try:
            return newest_card(self.store, target) if self.store is not None else None
        except HistoryError:
            return None

    def stop_run(self) -> None:
        if self._analyze_card is not None and self._analyze_card.cancel():  # Analyze still waits for its card
            self.status.showMessage("Analyze cancelled before its run started")
            return
        if self.confirm is not None and self.confirm.cancel():  # a verdict's confirmation rounds
            self.status.showMessage("Cancelling the confirmation… (the round measuring now is stopped)")
            return
        if self.controller is not None and self.controller.busy:
            self.controller.stop()
            self.status.showMessage("Stopping… (the worker stops between iterations)")

    def confirm_verdict(self) -> bool:
        """Run ▸ Confirm verdict: confirm the run the History page shows when it is in front, else the Run
        page's (console.ui.confirm_action); False when nothing started (the reason is in the status bar)."""
        if self.confirm is None:
            return False
        shown = self.pages.get("history")
        history = shown is not None and self.tabs.currentWidget() is shown and shown.opened_run_id
        return self.confirm.confirm("history" if history else "run")

    def _attach_confirm(self) -> None:
        """The Confirm action beside the verdict, on the Run page (the run just finished) and the History page
        (the run opened): the rounds run on the window's core partition, never beside a run or a sweep."""
        from console.ui.confirm_action import ConfirmAction

        self.confirm = ConfirmAction(self.workspace, card=self._machine_card, trusts_code=self._trusts_code,
                                     max_rounds=self.settings.confirm_rounds(), say=self.status.showMessage,
                                     parent=self)
        self.confirm.sig_rounds_changed.connect(self.settings.save_confirm_rounds)
        self._links.when_built("run", lambda page: self.confirm.bind("run", page.confirm_panel))
        self._links.when_built("history", self._confirm_on_history)
        if self.controller is not None:
            self.controller.sig_event.connect(self._confirm_follows_run)

    def _confirm_on_history(self, history_page) -> None:
        self.confirm.bind("history", history_page.confirm_panel)
        history_page.sig_run_opened.connect(lambda run: self.confirm.show("history", run))
        self.confirm.sig_stored.connect(lambda _run_id: history_page.reload())

    def _confirm_follows_run(self, event: dict[str, Any]) -> None:
        """The Run page's panel belongs to the run it shows: hidden when a run starts, its verdict's once done."""
        kind = event.get("type")
        if kind == "started":
            self.confirm.show("run", None)
        elif kind == "finished":
            self.confirm.show("run", event)
        elif kind == "phase":
            self.confirm.refresh()
