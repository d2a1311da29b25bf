"""The training workloads the feed benchmark emulates: MLPerf Storage's U-Net3D, ResNet-50 and CosmoFlow.

Why a table: the benchmark's answer ("this storage feeds N accelerators") is only comparable with published
MLPerf Storage results when the sample size, samples per file, batch size, per-step compute time and AU threshold
are the benchmark's own. The numbers below are copied from DLIO's workload configs, which MLPerf Storage runs:

  argonne-lcf/dlio_benchmark @ e1919d7b (2026-06-17), dlio_benchmark/configs/workload/<name>_<gpu>.yaml
  (the same values are in mlcommons/storage @ caa90c9c (2025-06-13), configs/dlio/workload/<name>_<gpu>.yaml)

  workload   dataset.record_length_bytes  num_samples_per_file  reader.batch_size  train.computation_time  metric.au
  unet3d     146,600,628 (stdev 68,341,808)   1                   7                H100 0.323 s, A100 0.636 s  0.90
  resnet50   114,660.07                    1,251                  400              H100 0.224 s, A100 0.435 s  0.90
  cosmoflow  2,828,486 (stdev 71,311)         1                   1                H100 0.00350 s, A100 0.00551 s 0.70

DLIO stores unet3d as npz and the other two as tfrecord; the feed benchmark reads the bytes without decoding
(the emulated accelerator's step time stands for the whole training step), so the file format here is npy or raw.
The sample-size spread (stdev) is recorded but make-data writes every sample at the mean size: the mean decides
bytes per step, which is what the arithmetic behind "N accelerators" uses.

`custom` takes its sample size, batch and compute time from the caller (--sample-bytes/--batch/--compute-ms).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from engines.storage.errors import StorageError

GPUS = ("h100", "a100")
_DLIO = "argonne-lcf/dlio_benchmark@e1919d7b dlio_benchmark/configs/workload/{name}_{gpu}.yaml"
_MLC = "mlcommons/storage@caa90c9c configs/dlio/workload/{name}_{gpu}.yaml"
CUSTOM_THRESHOLD = 0.90  # custom workloads are judged like U-Net3D and ResNet-50 unless told otherwise


@dataclass(frozen=True)
class Workload:
    """One training workload as the feed benchmark emulates it (one accelerator's view)."""

    name: str
    sample_bytes: int
    samples_per_file: int
    batch: int
    compute_s: float  # one training step's compute time on the chosen accelerator (the emulation sleeps it)
    au_threshold: float  # a run passes when accelerator utilization ≥ this (0..1)
    gpu: str | None
    source: str
    sample_bytes_stdev: int = 0
    dlio_format: str = ""
    dlio_read_threads: int | None = None

    @property
    def bytes_per_step(self) -> int:
        return self.sample_bytes * self.batch

    def max_accelerators(self, device_bytes_per_s: float) -> float:
        """The arithmetic: how many accelerators a device delivering `device_bytes_per_s` keeps at the threshold.

        N accelerators at utilization a each take compute_s / a per step and read batch × sample bytes per step, so
        they need N · batch · sample · a / compute_s bytes/s; a ≥ threshold holds while that is ≤ the device's rate.
        """
        return device_bytes_per_s * self.compute_s / (self.bytes_per_step * self.au_threshold)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# name: (record_length_bytes, stdev, samples_per_file, batch, {gpu: computation_time}, au, dlio format, threads)
_PUBLISHED: dict[str, tuple[int, int, int, int, dict[str, float], float, str, int]] = {
    "unet3d": (146_600_628, 68_341_808, 1, 7, {"h100": 0.323, "a100": 0.636}, 0.90, "npz", 4),
    "resnet50": (114_660, 0, 1_251, 400, {"h100": 0.224, "a100": 0.435}, 0.90, "tfrecord", 8),
    "cosmoflow": (2_828_486, 71_311, 1, 1, {"h100": 0.00350, "a100": 0.00551}, 0.70, "tfrecord", 4),
}
NAMES = (*_PUBLISHED, "custom")


# ---- Public API
def published(name: str, gpu: str = "h100") -> Workload:
    """One of MLPerf Storage's workloads as published for `gpu` (h100 or a100)."""
    if name not in _PUBLISHED:
        raise StorageError(f"unknown workload {name!r}", f"choose one of {', '.join(NAMES)}")
    if gpu not in GPUS:
        raise StorageError(f"unknown accelerator {gpu!r} for workload {name}",
                           f"choose --gpu {' or '.join(GPUS)} (MLPerf Storage publishes step times for those)")
    size, stdev, per_file, batch, compute, au, fmt, threads = _PUBLISHED[name]
    source = f"{_DLIO.format(name=name, gpu=gpu)} (same in {_MLC.format(name=name, gpu=gpu)})"
    return Workload(name, size, per_file, batch, compute[gpu], au, gpu, source, stdev, fmt, threads)


def custom(sample_bytes: int, batch: int, compute_s: float, au_threshold: float = CUSTOM_THRESHOLD,
           samples_per_file: int = 1) -> Workload:
    """A workload of the caller's own: every number is given, none is published."""
    if sample_bytes < 1 or batch < 1 or samples_per_file < 1:
        raise StorageError(f"custom workload: sample bytes {sample_bytes}, batch {batch} and samples per file "
                           f"{samples_per_file} must each be ≥ 1", "give --sample-bytes, --batch ≥ 1")
    if not compute_s > 0:
        raise StorageError(f"custom workload: compute time {compute_s * 1e3:g} ms must be > 0",
                           "give --compute-ms, the accelerator's time for one step's compute")
    if not 0 < au_threshold <= 1:
        raise StorageError(f"AU threshold {au_threshold:g} is outside (0, 1]", "give --au-threshold as a percentage "
                           "from 1 to 100")
    return Workload("custom", int(sample_bytes), int(samples_per_file), int(batch), float(compute_s),
                    float(au_threshold), None, "given by the user (--sample-bytes, --batch, --compute-ms)")


def from_options(options: Mapping[str, Any]) -> Workload:
    """The workload an options dict names: `workload` (+ `gpu`), or custom's sample_bytes/batch/compute_ms."""
    name = str(options.get("workload") or "")
    if name == "custom":
        missing = [key for key in ("sample_bytes", "batch", "compute_ms") if options.get(key) is None]
        if missing:
            flags = ", ".join("--" + key.replace("_", "-") for key in missing)
            raise StorageError(f"workload custom needs {flags}", "give the sample size in bytes, the batch and "
                               "the step's compute time in ms")
        threshold = options.get("au_threshold_percent")
        return custom(int(options["sample_bytes"]), int(options["batch"]), float(options["compute_ms"]) / 1e3,
                      CUSTOM_THRESHOLD if threshold is None else float(threshold) / 100,
                      int(options.get("samples_per_file") or 1))
    given = [key for key in ("sample_bytes", "batch", "compute_ms") if options.get(key) is not None]
    if given and name in _PUBLISHED:
        flags = ", ".join("--" + key.replace("_", "-") for key in given)
        raise StorageError(f"{flags} change a published workload ({name})", "use --workload custom to give your "
                           "own numbers, or drop those flags to keep MLPerf Storage's")
    return published(name, str(options.get("gpu") or "h100"))


def table() -> list[dict[str, Any]]:
    """Every published workload for every accelerator (for docs, --help and the Storage page)."""
    return [published(name, gpu).as_dict() for name in _PUBLISHED for gpu in GPUS]
