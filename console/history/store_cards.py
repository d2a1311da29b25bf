"""What is kept beside runs: machine cards (a target's measured ceilings, per host), per-op profiles, artifacts.

One mixin of HistoryStore (store.py says why the store is assembled from parts).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from console.history import schema
from console.history.store_base import StoreBase
from console.history.store_values import as_dict, dicts, dumps, int_or_none, text_or_none


class CardsMixin(StoreBase):
    """Machine cards, ops and artifacts (schema v3)."""

    # ---- Public API
    def add_machine_card(self, card: Mapping[str, Any], card_id: str | None = None,
                         host_row: Mapping[str, Any] | None = None) -> str:
        """Keep a target's measured ceilings (engines.machine's card) for this host, or for the host of `host_row`
        (a card a lab node measured of itself). Commits."""
        card = as_dict(card)
        card_id = card_id or uuid.uuid4().hex
        with self._guard("storing a machine card"):
            host_id = self._upsert_host(host_row) if host_row else self.host_id
            row = {"card_id": card_id, "host_id": host_id, "hostname": text_or_none(card.get("host")),
                   "target": str(card.get("target") or "cpu"), "device_name": text_or_none(card.get("device_name")),
                   "measured_at": str(card.get("measured_at") or schema.utc_now()), "card": dumps(card, "card")}
            self._connection.execute(f"INSERT INTO machine_cards ({', '.join(row)}) VALUES "
                                     f"({', '.join('?' * len(row))})", list(row.values()))
            self._commit_pending()
        return card_id

    def machine_cards(self, hostname: str | None = None, target: str | None = None,
                      latest_only: bool = False) -> list[dict[str, Any]]:
        """Stored cards newest first (each the card dict plus card_id), optionally of one host and target;
        `latest_only`: the newest card of each (host, target)."""
        sql, params = "SELECT card_id, hostname, target, card FROM machine_cards WHERE 1 = 1", []
        for column, value in (("hostname", hostname), ("target", target)):
            if value is not None:
                sql, params = sql + f" AND {column} = ?", [*params, value]
        with self._guard("reading machine cards"):
            rows = dicts(self._connection.execute(sql + " ORDER BY measured_at DESC, rowid DESC", params))
        cards, seen = [], set()
        for row in rows:
            if latest_only and (row["hostname"], row["target"]) in seen:
                continue
            seen.add((row["hostname"], row["target"]))
            cards.append({**json.loads(row["card"]), "card_id": row["card_id"]})
        return cards

    def add_ops(self, run_id: str, ops: Iterable[Mapping[str, Any]]) -> None:
        """A run's per-op profile: op, calls, time_s, flops, bytes; the rest of each row kept as detail. Commits."""
        core = ("op", "calls", "time_s", "flops", "bytes")
        rows = [(run_id, str(op["op"]), int_or_none(op.get("calls")), op.get("time_s"), op.get("flops"),
                 op.get("bytes"), dumps({k: v for k, v in op.items() if k not in core}, "op detail")) for op in ops]
        with self._guard(f"storing the profile of run {run_id}"):
            self._connection.executemany("INSERT INTO ops (run_id, op, calls, time_s, flops, bytes, detail) "
                                         "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            self._commit_pending()

    def ops(self, run_id: str) -> list[dict[str, Any]]:
        """A run's per-op profile in the order it was stored (details merged back in)."""
        with self._guard(f"reading the profile of run {run_id}"):
            rows = dicts(self._connection.execute("SELECT op, calls, time_s, flops, bytes, detail FROM ops "
                                                   "WHERE run_id = ? ORDER BY rowid", [run_id]))
        return [{**json.loads(row.pop("detail") or "{}"), **row} for row in rows]

    def add_artifact(self, run_id: str, kind: str, path: str | os.PathLike, size: int | None = None) -> str:
        """Remember a file kept with a run (a Chrome trace, a report). Commits."""
        artifact_id = uuid.uuid4().hex
        with self._guard(f"storing an artifact of run {run_id}"):
            self._connection.execute("INSERT INTO artifacts (artifact_id, run_id, kind, path, bytes, created_at) "
                                     "VALUES (?, ?, ?, ?, ?, ?)",
                                     [artifact_id, run_id, kind, str(path), int_or_none(size), schema.utc_now()])
            self._commit_pending()
        return artifact_id

    def artifacts(self, run_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        sql, params = "SELECT * FROM artifacts WHERE run_id = ?", [run_id]
        if kind is not None:
            sql, params = sql + " AND kind = ?", [*params, kind]
        with self._guard(f"reading the artifacts of run {run_id}"):
            return dicts(self._connection.execute(sql + " ORDER BY created_at", params))
