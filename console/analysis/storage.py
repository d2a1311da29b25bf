"""A run's storage reads beside the machine's measured ceiling: model file, sample data and checkpoints.

The worker times what it reads (the cold-start block's read_s/read_bytes for a model file; the input-pipeline
scenario's disk_read_mb_s and checkpoint MB/s); the machine card holds `storage_read_gbs`, the sequential read
throughput measured on a chosen directory. Put side by side, a model load reading at 90% of the ceiling is
storage-bound, one at 5% is not (or read from the page cache, which the card's and the run's cache states say).

Pure functions over plain dicts (the summary and a card); Qt-free, numpy-free. `stored_card` reads the
newest card of this host and target from the history.
"""

from __future__ import annotations

from typing import Any


# ---- Public API
def storage_block(summary: dict[str, Any], card: dict[str, Any] | None) -> dict[str, Any] | None:
    """Every storage figure of the run in GB/s, each with its share of the card's ceiling; None when none."""
    cold = summary.get("cold_start") or {}
    scenario = summary.get("scenario") or {}
    reads = {
        "model_read": _rate(cold.get("read_bytes"), cold.get("read_s")),
        "data_read": _mb_to_gb(scenario.get("disk_read_mb_s")),
        "checkpoint_save": _mb_to_gb(scenario.get("checkpoint_save_mb_s")),
        "checkpoint_load": _mb_to_gb(scenario.get("checkpoint_load_mb_s")),
    }
    if all(value is None for value in reads.values()):
        return None
    ceiling = _number((card or {}).get("storage_read_gbs"))
    block: dict[str, Any] = {f"{name}_gbs": value for name, value in reads.items()}
    block["storage_read_gbs"] = ceiling
    for name, value in reads.items():
        block[f"{name}_of_ceiling"] = value / ceiling if value is not None and ceiling else None
    block["cache_state"] = scenario.get("cache_state")
    block["ceiling_state"] = ((card or {}).get("storage") or {}).get("state")
    if card is None:
        block["reason"] = ("no machine card for this host and target, so no ceiling to compare with; measure one "
                           "with labconsole machine --storage DIR")
    elif ceiling is None:
        why = ((card.get("not_available") or {}).get("storage_read_gbs") or "the card has no storage figure")
        block["reason"] = f"the machine card has no storage ceiling ({why}); measure it with --storage DIR"
    block["method"] = ("model_read: the worker's timed read of the model file (cold_start read_bytes / read_s); "
                       "data_read: bytes this process fetched from storage per second while measuring; checkpoint: "
                       "torch.save to fsync and torch.load(weights_only); each ÷ the card's sequential read ceiling")
    return block


def stored_card(store: Any, target: str, hostname: str | None = None) -> dict[str, Any] | None:
    """The card to compare with: the newest stored for this host and target — read, never measured here.

    `store` is a HistoryStore (read-only use). Hook: once console.machine.card_for exists, callers that may
    measure a missing card use it instead; a summary must not start a measurement, so this reads only.
    """
    import socket

    cards = store.machine_cards(hostname=hostname or socket.gethostname(), target=target, latest_only=True)
    return cards[0] if cards else None


# ---- Private API
def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _rate(size: Any, seconds: Any) -> float | None:
    size, seconds = _number(size), _number(seconds)
    return size / seconds / 1e9 if size and seconds else None


def _mb_to_gb(value: Any) -> float | None:
    number = _number(value)
    return number / 1e3 if number is not None else None
