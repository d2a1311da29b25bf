"""Machine cards: the measured ceilings of a target (peak FLOP/s per precision, memory bandwidth, the engines'
per-call floors, cache sizes, storage read throughput, host↔device bandwidth on GPUs, what a second thread gives
the GEMM and the memory-bandwidth kernel), each with its spread.

`measure_card(target, storage_dir=None, repeats=5, quick=False)` runs in a worker: torch and onnxruntime are
imported inside the functions, so importing this package stays standard-library only.
"""

from engines.machine.card import measure_card
from engines.machine.errors import MachineError, Unavailable

__all__ = ["measure_card", "MachineError", "Unavailable"]
