"""The window's link to a lab cluster (Ray): join it in the background, list the other nodes' targets, and make
the RemoteRun factory a run on one of them goes through.

Ray is imported only here, only on a thread, and only once the user connects (Run ▸ Connect to lab cluster…, or
a remembered address at start-up): the window starts as fast without a cluster. Joining can take seconds, and
each node answers with its own target discovery; the status signal says where it is meanwhile.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from PySide6 import QtCore


class ClusterLink(QtCore.QObject):
    sig_status = QtCore.Signal(str)  # progress, on the GUI thread
    sig_targets = QtCore.Signal(object)  # the remote targets (console.cluster.listing.window_targets), GUI thread
    sig_failed = QtCore.Signal(str)  # what went wrong and how to fix it, GUI thread

    _progress = QtCore.Signal(int, str)  # (attempt, text), emitted from the joining thread
    _done = QtCore.Signal(int, str, object)  # (attempt, address, listing)
    _error = QtCore.Signal(int, str)

    # ---- Public API
    def __init__(self, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.address = ""  # the cluster joined ("" when none)
        self.targets: list[dict[str, Any]] = []
        self.listing: dict[str, Any] | None = None
        self._attempt = 0
        self.joining = False
        self._progress.connect(self._on_progress)
        self._done.connect(self._on_done)
        self._error.connect(self._on_error)

    def connect_to(self, address: str) -> None:
        """Join the cluster at `address` (HOST:PORT) and list its targets, on a thread; a newer call wins."""
        self._attempt += 1
        self.joining = True
        threading.Thread(target=self._join, args=(self._attempt, address.strip()), name="cluster-join",
                         daemon=True).start()

    def disconnect(self) -> None:
        self._attempt += 1  # drop any answer still to come
        self.joining = False
        address, self.address, self.targets, self.listing = self.address, "", [], None
        if address:
            from console.cluster.connect import disconnect

            disconnect()
        self.sig_targets.emit([])

    def stop(self) -> None:
        """The window is closing: drop any answer still to come."""
        self._attempt += 1

    def find(self, target_id: str | None) -> dict[str, Any] | None:
        return next((t for t in self.targets if t["id"] == target_id), None) if target_id else None

    def remote_for(self, target: dict[str, Any]) -> Any:
        """The RunSession `remote=` factory for a run on this target's node."""
        from console.cluster.dispatch import RemoteRun

        return functools.partial(RemoteRun, address=self.address, on={"node": target["node"]["node_id"]})

    # ---- Private API
    def _join(self, attempt: int, address: str) -> None:
        from console.cluster import ClusterError, ClusterUnavailable

        try:
            from console.cluster.connect import connect
            from console.cluster.listing import describe

            self._progress.emit(attempt, f"Joining the lab cluster at {address}…")
            ray = connect(address)
            self._progress.emit(attempt, f"Joined the lab cluster at {address}: asking each node for its targets…")
            listing = describe(ray, with_targets=True)
        except (ClusterError, ClusterUnavailable) as exc:
            self._error.emit(attempt, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 — whatever Ray raises, the user reads why
            from console.cluster import auth

            self._error.emit(attempt, auth.redact(f"joining {address} failed: {type(exc).__name__}: {exc}"))
            return
        self._done.emit(attempt, address, listing)

    def _on_progress(self, attempt: int, text: str) -> None:
        if attempt == self._attempt:
            self.sig_status.emit(text)

    def _on_done(self, attempt: int, address: str, listing: dict[str, Any]) -> None:
        if attempt != self._attempt:
            return
        from console.cluster.listing import window_targets

        self.joining = False
        self.address, self.listing = address, listing
        self.targets = window_targets(listing)
        self.sig_targets.emit(self.targets)

    def _on_error(self, attempt: int, message: str) -> None:
        if attempt == self._attempt:
            self.joining = False
            self.sig_failed.emit(message)


class ClusterWindow:
    """The main window's lab-cluster part (mixed into MainWindow): Run ▸ Connect to lab cluster…, the other nodes'
    targets in the Run page's target list as `node/target`, and the RemoteRun factory of a run on one of them."""

    CONNECT_TEXT = "Co&nnect to lab cluster…"

    # ---- Public API
    def connect_cluster(self, address: str | None = None, quiet: bool = False) -> bool:
        """Join the lab cluster at `address` (asked for, with the remembered one offered, when None) in the
        background; the status bar says how far it got. `quiet`: a failure is only said in the status bar (the
        remembered address, at start-up). False when nothing was started."""
        if self._cluster is None:
            return False
        if address is None:
            from PySide6 import QtWidgets

            from console.cluster import auth

            source = auth.token_source()
            address, ok = QtWidgets.QInputDialog.getText(
                self, "Connect to lab cluster",
                "Address of the cluster's head (HOST:PORT, printed by `labconsole node start --head`).\n"
                + (f"Token: from {source}." if source else
                   f"No token here yet: copy the head's {auth.default_path()} to this machine, or set "
                   f"${auth.TOKEN_ENV}."), text=self.settings.cluster_address() or "127.0.0.1:6379")
            if not ok or not address.strip():
                return False
        address = address.strip()
        self.settings.save_cluster_address(address)
        self._cluster_quiet = quiet
        self._cluster_label.setText(f"Lab cluster {address}: joining…")
        self._cluster_label.show()
        self._cluster.connect_to(address)
        return True

    def disconnect_cluster(self) -> None:
        if self._cluster is None or not (self._cluster.address or self._cluster.joining):
            return
        if self.controller is not None and self.controller.busy:
            self._show_error("A run is in progress: stop it first (Esc), then leave the lab cluster.",
                             "Run in progress")
            return
        self._cluster.disconnect()
        self.settings.save_cluster_address("")
        self._cluster_label.hide()
        self.status.showMessage("Left the lab cluster: only this machine's targets are offered")

    # ---- Private API
    def _attach_cluster(self, auto: bool) -> None:
        """Called by attach(): the link, its status-bar label, and (`auto`) the remembered cluster joined again."""
        from PySide6 import QtWidgets

        self._cluster = ClusterLink(self)
        self._cluster_quiet = False
        self._cluster_label = QtWidgets.QLabel()
        self._cluster_label.setObjectName("cluster_label")
        self._cluster_label.hide()
        self.status.addPermanentWidget(self._cluster_label)
        self._cluster.sig_status.connect(self.status.showMessage)
        self._cluster.sig_targets.connect(self._show_cluster_targets)
        self._cluster.sig_failed.connect(self._cluster_failed)
        remembered = self.settings.cluster_address()
        if auto and remembered:
            self.connect_cluster(remembered, quiet=True)

    def _all_targets(self) -> list[dict[str, Any]]:
        """This machine's targets, then the other nodes' (`node/target`)."""
        return list(self._targets) + (list(self._cluster.targets) if self._cluster is not None else [])

    def _remote_choice(self, values: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """The form's values with a `node/target` choice turned into the node's target id, and the RemoteRun
        factory of that node (None for a target of this machine)."""
        target = self._cluster.find(values.get("target")) if self._cluster is not None else None
        if target is None:
            return values, None
        return {**values, "target": target["target"]}, self._cluster.remote_for(target)

    def _show_cluster_targets(self, targets: list[dict[str, Any]]) -> None:
        from console.spec.choices import target_choices

        current = self.run_page.form.values().get("target")
        self.run_page.form.set_choices("target", target_choices(self._all_targets()))
        self.run_page.form.set_values({"target": current})
        self._refresh_choices()
        if not self._cluster.address:
            return
        nodes = {t["node"]["node_id"] for t in targets}
        usable = sum(bool(t.get("available")) for t in targets)
        self._cluster_label.setText(f"Lab cluster {self._cluster.address}: {len(nodes)} "
                                    f"node{'s' * (len(nodes) != 1)}")
        self._cluster_label.setToolTip("\n".join(f"{t['id']} — {t.get('name')}" for t in targets))
        self.status.showMessage(
            f"Joined the lab cluster at {self._cluster.address}: {usable} targets on {len(nodes)} other "
            f"node{'s' * (len(nodes) != 1)}, offered as node/target in the Run page's target list"
            if nodes else f"Joined the lab cluster at {self._cluster.address}, but it has no node that takes runs "
                          "(start one with `labconsole node start --address …`)")

    def _cluster_failed(self, message: str) -> None:
        self._cluster_label.setText("Lab cluster: not joined")
        self._cluster_label.setToolTip(message)
        self.status.showMessage(f"Lab cluster not joined: {message}")
        if not self._cluster_quiet:
            self._show_error(message, "Cannot join the lab cluster")
