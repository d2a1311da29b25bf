"""Collectives (all-reduce, all-gather, reduce-scatter, all-to-all, broadcast, reduce) timed as nccl-tests times
them, with torch.distributed ranks placed locally or by Ray. `formulas`, `options` and `result` are pure Python (the
console uses them); `bench.run` is the worker's entry point (kind "collectives")."""

from engines.collectives.errors import CollectivesError
from engines.collectives.formulas import FACTOR_TEXT, OPS, busbw_factor

KIND = "engines.collectives.bench:run"

__all__ = ["CollectivesError", "OPS", "FACTOR_TEXT", "busbw_factor", "KIND"]
