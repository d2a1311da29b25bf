"""What is said about runs after they ran: series and configurations, baselines, tags, notes, summary fields.

One mixin of HistoryStore (store.py says why the store is assembled from parts).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from console.history import damage, schema
from console.history.errors import HistoryError
from console.history.store_base import StoreBase
from console.history.store_values import dicts, dumps


class BaselinesMixin(StoreBase):
    """Series, baselines, tags and notes (schema v4)."""

    # ---- Public API
    def series(self, fingerprint: str) -> list[dict[str, Any]]:
        """The completed runs of one configuration, oldest first: the series regressions are found in."""
        return list(reversed(self.list_runs(status="completed", fingerprint=fingerprint)))

    def configurations(self) -> list[dict[str, Any]]:
        """Every configuration in the history: {fingerprint, configuration, runs (completed), first_started_at,
        last_started_at, baseline_run_id}, the most recently run first."""
        sql = ("SELECT f.fingerprint, MAX(f.configuration) AS configuration, COUNT(*) AS runs, "
               "MIN(runs.started_at) AS first_started_at, MAX(runs.started_at) AS last_started_at, "
               "baselines.run_id AS baseline_run_id FROM runs JOIN run_facts AS f ON f.run_id = runs.run_id "
               "LEFT JOIN baselines ON baselines.fingerprint = f.fingerprint "
               "WHERE runs.status = 'completed' AND f.fingerprint IS NOT NULL "
               "GROUP BY f.fingerprint ORDER BY last_started_at DESC")
        with self._guard("listing configurations"):
            rows = dicts(self._connection.execute(sql))
        for row in rows:  # a damaged configuration reads as unknown: its series is still judged by fingerprint
            row["configuration"] = damage.decode("configuration", row["configuration"])[0]
        return rows

    def set_tags(self, run_id: str, tags: Iterable[str]) -> list[str]:
        """Replace a run's tags (trimmed, empty ones dropped, each once, in the order given). Commits."""
        clean = list(dict.fromkeys(str(tag).strip() for tag in tags if str(tag).strip()))
        self._update_run(run_id, "tags", dumps(clean, "tags"), "tagging")
        return clean

    def set_note(self, run_id: str, note: str | None) -> None:
        """A free-text note on a run (None or blank clears it). Commits."""
        self._update_run(run_id, "note", (note or "").strip() or None, "noting")

    def set_summary_field(self, run_id: str, key: str, value: Any) -> None:
        """Merge one top-level key into a run's stored summary (e.g. its baseline verdict). Commits."""
        with self._guard(f"updating the summary of run {run_id}"):
            row = self._connection.execute("SELECT summary FROM runs WHERE run_id = ?", [run_id]).fetchone()
            if row is None:
                raise HistoryError(f"there is no run {run_id} in {self.path}",
                                   "check the run id (`labconsole history` lists them).", self.path)
            summary, reason = damage.decode("summary", row[0])
            if reason:  # merging into it would replace what is left of it
                raise damage.DamagedRunError(run_id, [{"field": "summary", "reason": reason}], self.path)
            summary = summary or {}
            summary[key] = value
            self._connection.execute("UPDATE runs SET summary = ? WHERE run_id = ?",
                                     [dumps(summary, "summary"), run_id])
            self._set_summary_columns(run_id, summary)
            self._commit_pending()

    def set_baseline(self, run_id: str) -> str:
        """Make a completed, valid run the baseline of its configuration (replacing the previous one); returns
        the configuration's fingerprint. Commits."""
        run = self.get_run(run_id)
        if run is None:
            raise HistoryError(f"there is no run {run_id!r} in {self.path}",
                               "check the run id (`labconsole history` lists them).", self.path)
        short = run["run_id"][:8]
        if run["status"] != "completed":
            raise HistoryError(f"run {short} is {run['status']}, so it cannot be a baseline",
                               "choose a completed run of the same configuration.", self.path)
        if not (run.get("summary") or {}).get("valid"):
            reasons = "; ".join(r.get("detail", "") for r in (run.get("summary") or {}).get("invalid_reasons", []))
            raise HistoryError(f"run {short} is not a valid measurement ({reasons or 'no summary'}), so it cannot "
                               "be a baseline", "rerun the configuration until it is valid (longer duration or "
                               "more iterations) and set that run.", self.path)
        with self._guard(f"setting run {short} as a baseline"):
            self._connection.execute("INSERT INTO baselines (fingerprint, run_id, set_at) VALUES (?, ?, ?) "
                                     "ON CONFLICT(fingerprint) DO UPDATE SET run_id = excluded.run_id, "
                                     "set_at = excluded.set_at", [run["fingerprint"], run["run_id"], schema.utc_now()])
            self._commit_pending()
        return str(run["fingerprint"])

    def baseline_of(self, fingerprint: str) -> dict[str, Any] | None:
        """The baseline run of a configuration, or None."""
        with self._guard("reading a baseline"):
            row = self._connection.execute("SELECT run_id FROM baselines WHERE fingerprint = ?",
                                           [fingerprint]).fetchone()
        return self.get_run(row[0]) if row else None

    def clear_baseline(self, fingerprint: str) -> bool:
        """Forget a configuration's baseline; False when it had none. Commits."""
        with self._guard("clearing a baseline"):
            cursor = self._connection.execute("DELETE FROM baselines WHERE fingerprint = ?", [fingerprint])
            self._commit_pending()
        return cursor.rowcount > 0

    def baselines(self) -> list[dict[str, Any]]:
        with self._guard("listing baselines"):
            return dicts(self._connection.execute("SELECT fingerprint, run_id, set_at FROM baselines "
                                                   "ORDER BY set_at DESC"))

    # ---- Private API
    def _update_run(self, run_id: str, column: str, value: Any, doing: str) -> None:
        with self._guard(f"{doing} run {run_id}"):
            cursor = self._connection.execute(f"UPDATE run_facts SET {column} = ? WHERE run_id = ?", [value, run_id])
            self._require_run(cursor, run_id)
            self._commit_pending()
