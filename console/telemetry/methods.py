"""How a telemetry value is obtained: measured (a counter or gauge), integrated (derived from measured samples over
time) or estimated (a model, e.g. TDP x utilisation) -- an estimate is never shown as a measurement.

Its own module, below both the source interface (base) and the metric metadata (metadata), which both check it.
"""

from __future__ import annotations

from typing import Literal

Method = Literal["measured", "integrated", "estimated"]
METHODS: tuple[str, ...] = ("measured", "integrated", "estimated")
