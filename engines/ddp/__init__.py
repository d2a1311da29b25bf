"""Data-parallel training runs (torch DistributedDataParallel over local processes or Ray actors).

The package splits one job per module: `plan` (what each rank runs, decided before any process starts), `rank`
(one rank's timed training loop), `data` (where a rank's batches come from), `launch` (local rank processes and
their watcher), `driver` (the worker side: events and the result). This module stays torch-free: the console asks
`is_distributed` of a spec without importing an engine.
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_distributed"]


def is_distributed(spec_or_dict: Any) -> bool:
    """True when the run asks for data-parallel ranks (`torch.ranks` set, even to 1: a DDP run of one rank is the
    baseline E(N) is measured against). Takes a RunSpec or its plain dict (either engine_options layout)."""
    if isinstance(spec_or_dict, dict):
        options = (spec_or_dict.get("engine_options") or {}).get("torch") or spec_or_dict.get("torch") or {}
        ranks = options.get("ranks") if isinstance(options, dict) else getattr(options, "ranks", None)
        return ranks is not None
    options = getattr(spec_or_dict, "engine_options", None) or {}
    torch_options = options.get("torch") if isinstance(options, dict) else None
    if isinstance(torch_options, dict):
        return torch_options.get("ranks") is not None
    return getattr(torch_options, "ranks", None) is not None
