"""Scaling of data-parallel training in the console (Qt-free): E(N) with its interval, the series of a sweep or a
run across rank counts, and which knob moved E(N). The window's Scaling page and the report read these."""

from console.scaling.efficiency import efficiency
from console.scaling.levers import levers
from console.scaling.series import partner, series

__all__ = ["efficiency", "levers", "partner", "series"]
