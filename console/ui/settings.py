"""Remembered settings (QSettings): the last run setup, window geometry, the open page, the History filters,
demo mode's theme and playlist, the lab cluster's address (never its token), how the window paints while a run
measures."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from PySide6 import QtCore, QtWidgets

if TYPE_CHECKING:
    from widgets.live_plot import PaintRates

ORGANIZATION = "LabConsole"
APPLICATION = "Lab Console"


class Settings:
    def __init__(self) -> None:
        self._qs = QtCore.QSettings(ORGANIZATION, APPLICATION)

    def form_values(self) -> dict[str, Any]:
        try:
            return json.loads(self._qs.value("run/form", "{}"))
        except (TypeError, ValueError):
            return {}

    def save_form_values(self, values: dict[str, Any]) -> None:
        self._qs.setValue("run/form", json.dumps(values))

    def model_files(self) -> list[str]:
        try:
            files = json.loads(self._qs.value("run/model_files", "[]"))
        except (TypeError, ValueError):
            return []
        return [f for f in files if isinstance(f, str)]

    def save_model_files(self, files: list[str]) -> None:
        self._qs.setValue("run/model_files", json.dumps(files))

    def history_filters(self) -> dict[str, Any]:
        """The History page's filters as last set (JSON: None = any)."""
        try:
            values = json.loads(self._qs.value("history/filters", "{}"))
        except (TypeError, ValueError):
            return {}
        return values if isinstance(values, dict) else {}

    def save_history_filters(self, values: dict[str, Any]) -> None:
        self._qs.setValue("history/filters", json.dumps(values))

    def demo_theme(self) -> str | None:
        """Demo mode's own light/dark choice, as last made (D in demo mode, or --light/--dark); None: never made."""
        value = self._qs.value("demo/theme")
        return value if value in ("light", "dark") else None

    def save_demo_theme(self, name: str) -> None:
        self._qs.setValue("demo/theme", name)

    def demo_playlist(self) -> str:
        """The playlist file demo mode last played ("" if none)."""
        value = self._qs.value("demo/playlist", "")
        return value if isinstance(value, str) else ""

    def save_demo_playlist(self, path: str) -> None:
        self._qs.setValue("demo/playlist", path)

    def confirm_rounds(self) -> int | None:
        """The Confirm action's cap on rounds a side, as last set ("confirm/max_rounds"); None: never set, or
        not a whole number from 2 to 50."""
        try:
            value = int(self._qs.value("confirm/max_rounds", 0))
        except (TypeError, ValueError):
            return None
        return value if 2 <= value <= 50 else None

    def save_confirm_rounds(self, rounds: int) -> None:
        self._qs.setValue("confirm/max_rounds", int(rounds))

    def storage_form(self, kind: str) -> dict[str, Any]:
        """The Storage page's form of one kind as last run ("storage/<kind>": flag → text or bool)."""
        try:
            values = json.loads(self._qs.value(f"storage/{kind}", "{}"))
        except (TypeError, ValueError):
            return {}
        return values if isinstance(values, dict) else {}

    def save_storage_form(self, kind: str, values: dict[str, Any]) -> None:
        self._qs.setValue(f"storage/{kind}", json.dumps(values))

    def storage_kind(self) -> str:
        """The Storage page's tab last open ("" when never)."""
        value = self._qs.value("storage/tab", "")
        return value if isinstance(value, str) else ""

    def save_storage_kind(self, kind: str) -> None:
        self._qs.setValue("storage/tab", kind)

    def cluster_address(self) -> str:
        """The lab cluster (Ray head HOST:PORT) the window last joined ("" if none). The token is never stored:
        it comes from where the CLI reads it (console.cluster.auth)."""
        value = self._qs.value("cluster/address", "")
        return value if isinstance(value, str) else ""

    def save_cluster_address(self, address: str) -> None:
        self._qs.setValue("cluster/address", address)

    def paint_rates(self) -> PaintRates:
        """How the window paints while a run measures (widgets.live_plot.PaintRates): "paint/latency_hz" (default
        2), "paint/telemetry_hz" (1) and "paint/block_px" (4). A value that is not a number in range is ignored
        (the default holds) rather than breaking the window (README.md lists the keys)."""
        from widgets.live_plot import REFRESH_INTERVAL_MS, PaintRates

        defaults = PaintRates()
        top_hz = 1000.0 / REFRESH_INTERVAL_MS  # no faster than full-speed painting

        def hz_ms(key: str, default_ms: int) -> int:
            try:
                hz = float(self._qs.value(key, 1000.0 / default_ms))
            except (TypeError, ValueError):
                return default_ms
            return round(1000.0 / hz) if 0.05 <= hz <= top_hz else default_ms

        try:
            block = int(self._qs.value("paint/block_px", defaults.block_px))
        except (TypeError, ValueError):
            block = defaults.block_px
        return PaintRates(latency_ms=hz_ms("paint/latency_hz", defaults.latency_ms),
                          telemetry_ms=hz_ms("paint/telemetry_hz", defaults.telemetry_ms),
                          block_px=block if 1 <= block <= 64 else defaults.block_px)

    def save_paint_rates(self, latency_hz: float, telemetry_hz: float, block_px: int) -> None:
        self._qs.setValue("paint/latency_hz", latency_hz)
        self._qs.setValue("paint/telemetry_hz", telemetry_hz)
        self._qs.setValue("paint/block_px", block_px)

    def page_name(self, names: list[str]) -> str:
        """The page open when the window last closed, if it is still one of `names`; else the first page.

        Pages are remembered by name, so adding or reordering pages does not open the wrong one. A setting from a
        version that remembered the tab's position is read by position.
        """
        saved = self._qs.value("window/page")
        if saved in names:
            return saved
        try:
            index = int(self._qs.value("window/tab", 0))
        except (TypeError, ValueError):
            index = 0
        return names[index] if saved is None and 0 <= index < len(names) else names[0]

    def save_page_name(self, name: str) -> None:
        self._qs.setValue("window/page", name)

    def restore_window(self, window: QtWidgets.QMainWindow) -> None:
        geometry = self._qs.value("window/geometry")
        if geometry is None or not window.restoreGeometry(geometry):  # (a restored one is kept on its screen)
            # 1400×860 where there is room; on a laptop's 1366×768 no larger than what the screen leaves a window.
            room = window.screen().availableGeometry() if window.screen() else None
            window.resize(min(1400, room.width()) if room else 1400, min(860, room.height()) if room else 860)

    def save_window(self, window: QtWidgets.QMainWindow) -> None:
        self._qs.setValue("window/geometry", window.saveGeometry())
        self._qs.sync()
