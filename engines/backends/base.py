"""What every backend hands the scenario: a ready-to-call model and facts about its loading."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class LoadedModel:
    """A model ready to run: `infer()` runs one inference on the prepared input and waits for it to finish.

    `infer` must block until the result is really computed (synchronise the device), so that a
    perf_counter pair around it measures the work and not just the launch.
    """

    infer: Callable[[], Any]
    load_s: float
    params: int
    model_bytes: int
    versions: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    close: Callable[[], None] = lambda: None
