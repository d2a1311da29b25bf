"""Time-to-train, scored as MLPerf Training scores: the catalog's ttt-mlp task trained with DDP on N ranks from its
first step to the evaluation that reaches a target quality, with the energy the CPU package(s) used meanwhile.

`options` and `errors` are pure Python (the console checks a request with them); `bench.run` is the worker's entry
point (kind "time-to-train"), `rank.rank_main` one rank's training loop; both import torch, never in the console.
"""

from engines.ttt.errors import TimeToTrainError

KIND = "engines.ttt.bench:run"
NAME = "time-to-train"

__all__ = ["KIND", "NAME", "TimeToTrainError"]
