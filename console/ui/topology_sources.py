"""Where the Topology page's figures come from, Qt-free: the topology to draw (this machine, or a developer
file), the collectives runner if this build has one, the form's check, and the newest card with measured links.

Split from `console.ui.topology_page` (the widgets); each part is imported when used, so a build without one
says which is missing and why instead of the page failing.
"""

from __future__ import annotations

import importlib
import json
import os
import socket
from typing import Any

TOPOLOGY_FILE_ENV = "LABCONSOLE_TOPOLOGY_FILE"


def discover_topology() -> dict[str, Any]:
    """The topology to draw: the developer file when LABCONSOLE_TOPOLOGY_FILE is set, else this machine's
    (engines.topology.discover). Raises with a message naming the problem (a bad file, discovery missing)."""
    path = os.environ.get(TOPOLOGY_FILE_ENV)
    if path:
        try:
            with open(path, encoding="utf-8") as handle:
                topology = json.load(handle)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{TOPOLOGY_FILE_ENV}={path} could not be read as topology JSON ({exc}); unset it to "
                             f"discover this machine") from exc
        if not isinstance(topology, dict) or not isinstance(topology.get("nodes"), list):
            raise ValueError(f"{TOPOLOGY_FILE_ENV}={path} is not a topology (no 'nodes' list); write one with "
                             "`labconsole topology --json > FILE`")
        topology["source"] = f"developer file {path} ({topology.get('source', 'no source given')})"
        return topology
    try:
        from engines.topology import discover
    except ImportError as exc:
        raise RuntimeError(f"topology discovery is not available in this build (engines.topology: {exc})") from exc
    return discover("/")


def collectives_module() -> tuple[Any | None, str | None]:
    """console.collectives (run, store, latest), or None and why it cannot be used."""
    try:
        module = importlib.import_module("console.collectives")
    except ImportError as exc:
        return None, f"console.collectives cannot be imported ({exc})"
    missing = [name for name in ("run", "store", "latest") if not callable(getattr(module, name, None))]
    if missing:
        return None, f"console.collectives has no {', '.join(missing)}"
    return module, None


def check_options(options: dict[str, Any]) -> str | None:
    """What is wrong with the form's options and how to fix it (engines.collectives.options.normalize, the check
    the CLI and the worker make too), or None when they are fine."""
    try:
        from engines.collectives.options import normalize
    except ImportError:  # the runner is missing too: the page says so already
        return None
    try:
        normalize(options)
    except ValueError as exc:  # CollectivesError: the message and its fix
        return str(exc)
    return None


def figure_text(name: str, value: Any) -> str:
    """'all_reduce_peak_busbw_gbs', 3.14 → 'all reduce peak busbw: 3.14 GB/s' (the unit from the name's suffix)."""
    units = {"_gbs": "GB/s", "_us": "µs", "_ms": "ms", "_bytes": "B"}
    unit = next((u for suffix, u in units.items() if name.endswith(suffix)), "")
    stem = name[: -len(next(s for s in units if name.endswith(s)))] if unit else name
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        shown = f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"  # 1020 µs, not 1.02e+03
    else:
        shown = str(value)
    return f"{stem.replace('_', ' ')}: {shown}{' ' + unit if unit and shown != 'None' else ''}"


def newest_card_with_links(store: Any, hostname: str | None = None) -> dict[str, Any] | None:
    """This host's newest machine card (any target) whose "links" block has entries, a full card before a quick one
    (a quick card's buffers fit in the caches: its figures check the machinery, they are not ceilings); None when
    there is none."""
    cards = [card for card in store.machine_cards(hostname=hostname or socket.gethostname())
             if isinstance(card.get("links"), dict) and card["links"].get("entries")]
    full = [card for card in cards if not card.get("quick")]
    return (full or cards or [None])[0]


def card_caption(card: dict[str, Any]) -> str:
    """Which card the figures come from, and — for a quick card — that they are not ceilings."""
    text = (f"machine card {str(card.get('card_id', '?'))[:8]} of {card.get('host', '?')} ({card.get('target', '?')}), "
            f"measured {str(card.get('measured_at', '?'))[:16]}")
    if card.get("quick"):
        text += " · QUICK card: small buffers that fit in the caches check the machinery, they are not ceilings"
    return text
