"""Input pipeline: the model fed from real files — read, decoded and batched by loader threads — as training and
batch inference are fed in practice, to see whether storage and decoding keep up with the model.

Each step takes the next ready batch (the time spent waiting for it is the pipeline's cost), copies it into the
model's input (`LoadedModel.feed`: cast, and moved to the device) and runs the model once. A step's latency is
the whole step (wait + feed + compute), so samples/s = steps × batch / measured time. Result fields:
`wait_fraction` (0..1, the share of measured time the model waited for data; near 1 means input-pipeline
bound), `feed_fraction`, `compute_fraction`, `samples_per_s`, `loader_workers`, `disk_read_mb_s`, `iops`,
`iowait`, `cache_state` (cold: each file's cached pages dropped before it is read, where the OS allows and the
counters confirm it; otherwise warm, with `cache_reason`), the loader's own read and decode rates, the model
load's storage figures, and — with `--checkpoint` — checkpoint save and load MB/s on the same storage.

The directory is checked in the worker, not when the spec is validated: it lives where the worker runs (a Ray
node reads its own disks). A missing, unreadable or empty directory, a file that does not decode or does not fit
the model's input fails the run with the file's name and the fix. Standard library only at import (the console
reads the options); numpy and the loader are imported when the scenario runs.
"""

from __future__ import annotations

import importlib
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engines import protocol
from engines.backends.base import LoadedModel
from engines.figures import Figure, Figures
from engines.options import SpecError, option
from engines.scenarios import _timing
from engines.scenarios.base import WARMUP_FIGURES, ScenarioInfo, WarmupOptions

if TYPE_CHECKING:  # type hints only: engines.spec imports the scenarios
    from engines.spec import RunSpec

COLD_CONFIRMED = 0.5  # a cold run must fetch at least this share of the bytes it read from storage


@dataclass
class InputPipelineOptions(WarmupOptions):
    data_dir: str | None = option(None, flag="--data-dir", metavar="DIR", label="Data directory",
                                  help="input-pipeline: the directory of sample files (.npy, raw .f32/.bin), one "
                                       "sample of the model's first input each (labconsole make-data writes one)")
    loader_workers: int = option(2, flag="--loader-workers", metavar="N", minimum=0, maximum=64,
                                 label="Loader workers",
                                 help="input-pipeline: threads reading and decoding batches ahead of the model "
                                      "(0: each batch loaded when the model asks for it; default 2)")
    prefetch: int | None = option(None, flag="--prefetch", metavar="N", maximum=1024, label="Prefetch (batches)",
                                  help="input-pipeline: ready batches kept waiting at most (default 2 × workers)")
    cache: str = option("cold", flag="--cache", choices=("cold", "warm"), label="Page cache",
                        help="input-pipeline: cold drops each file from the page cache before reading it (where "
                             "the OS allows); warm reads through the cache")
    checkpoint: bool = option(False, flag="--checkpoint", label="Checkpoint save/load",
                              help="input-pipeline: after measuring, save the catalog model's weights in the data "
                                   "directory (torch.save) and load them back (weights_only): MB/s both ways")
    max_queries: int | None = option(None, flag="--max-queries", metavar="N", label="Max queries",
                                     help="input-pipeline: stop after N batches even before --duration")

    def check(self, spec: RunSpec) -> None:
        super().check(spec)
        if not self.data_dir:
            raise SpecError("scenario_options.data_dir", "scenario input-pipeline reads sample files: give "
                            "--data-dir DIR (make one with labconsole make-data --dir DIR --model MODEL --count N)")
        if self.checkpoint and spec.is_file:
            raise SpecError("scenario_options.checkpoint", "checkpoint save/load measures a catalog model's "
                            "weights; a model file is run as saved — turn --checkpoint off for files")


INFO = ScenarioInfo("input-pipeline", "Input pipeline", __name__, InputPipelineOptions,
                    summary="the model fed from files by loader threads: samples/s, time waiting for data, "
                            "disk MB/s, IOPS, iowait, cold or warm page cache",
                    figures=WARMUP_FIGURES + Figures((
                        Figure("wait_fraction", "Waiting for data"), Figure("loader_workers", "Loader workers"),
                        Figure("disk_read_mb_s", "Disk read", "MB/s"), Figure("iops", "Disk reads", "IOPS"),
                        Figure("iowait", "iowait"), Figure("cache_state", "Page cache"),
                        Figure("checkpoint_save_mb_s", "Checkpoint save", "MB/s"),
                        Figure("checkpoint_load_mb_s", "Checkpoint load", "MB/s")),
                        detail=("feed_fraction", "compute_fraction", "cache_reason")))


def run(model: LoadedModel, spec: RunSpec, emit: Callable[[dict[str, Any]], None],
        cancelled: Callable[[], bool]) -> dict[str, Any]:
    """Check the data, warm up the whole pipeline, measure steps, and return the fields of the `result` event."""
    from engines import block_device, datafiles, iostats, loaders

    options = spec.scenario_options
    if model.feed is None:
        raise RuntimeError(f"engine {spec.engine} cannot take fed inputs (its LoadedModel has no feed), so the "
                           "input-pipeline scenario cannot give it file data; run another scenario on it")
    layout = datafiles.layout_from_details(model.details)
    files = datafiles.list_files(options.data_dir)
    datafiles.decode(files[0], datafiles.read_file(files[0], cold=False), layout)  # a bad first file fails now
    cold, cache_reason = (datafiles.can_drop_cache(options.data_dir) if options.cache == "cold" else
                          (False, "warm asked for (--cache warm): reads go through the page cache"))
    feed, infer = model.feed, model.infer
    clock = time.perf_counter_ns

    with loaders.BatchLoader(files, layout, spec.batch, options.loader_workers, cold, options.prefetch) as loader:
        def step() -> None:
            feed({layout.name: loader.get().array})
            infer()

        warmup = _timing.warm_up(step, spec, emit, cancelled, clock)
        loader.reset_totals()
        limit = spec.iterations or options.max_queries
        duration_ns = int(spec.duration_s * 1e9)
        emit(protocol.make("phase", phase="measuring", t_ns=clock()))
        before = iostats.snapshot(options.data_dir)
        starts, durations = array("q", bytes(8 * _timing.CHUNK)), array("q", bytes(8 * _timing.CHUNK))
        filled = steps = wait_ns = feed_ns = 0
        begin = clock()
        next_flush = begin + _timing.FLUSH_NS
        end = begin
        while not cancelled():
            start = clock()
            batch = loader.get()
            got = clock()
            feed({layout.name: batch.array})
            fed = clock()
            infer()
            end = clock()
            wait_ns += got - start
            feed_ns += fed - got
            starts[filled], durations[filled] = start, end - start
            filled += 1
            steps += 1
            if filled == _timing.CHUNK or end >= next_flush:
                _timing.ship_arrays(emit, starts, durations, filled)
                filled = 0
                fraction = steps / limit if limit and spec.iterations else (end - begin) / duration_ns
                _timing.progress(emit, "measuring", fraction, steps, (end - begin) / 1e9)
                next_flush = end + _timing.FLUSH_NS
            if limit and steps >= limit:
                break
            if not spec.iterations and end - begin >= duration_ns:
                break
        after = iostats.snapshot(options.data_dir)
        if filled:
            _timing.ship_arrays(emit, starts, durations, filled)
        totals = loader.totals
    measured_ns = end - begin
    measured_s = measured_ns / 1e9
    io = iostats.delta(before, after)
    state, reason = _cache_state(options.cache, cold, cache_reason, io.get("storage_bytes"), totals.bytes_read)
    samples = steps * spec.batch
    result: dict[str, Any] = {
        **_timing.result_head(steps, measured_s, warmup, spec.batch),
        "scenario_note": "latencies are whole steps (wait for the batch + feed + compute); first_inference_ms "
                         "includes loading the first batch",
        "samples_per_s": samples / measured_s if measured_s > 0 else None,
        "samples": samples,
        "loader_workers": options.loader_workers,
        "prefetch": loader.prefetch if options.loader_workers else 0,
        "wait_fraction": _share(wait_ns, measured_ns),
        "feed_fraction": _share(feed_ns, measured_ns),
        "compute_fraction": _share(measured_ns - wait_ns - feed_ns, measured_ns),
        "wait_ms_per_batch": wait_ns / steps / 1e6 if steps else None,
        "disk_read_mb_s": io["disk_read_mb_s"],
        "iops": io["iops"],
        "iowait": io["iowait"],
        "cache_state": state,
        "cache_reason": reason,
        "data_dir": str(options.data_dir),
        "data_device": block_device.describe(options.data_dir),  # which disk feeds it (the verdict names it)
        "data_files": len(files),
        "sample_bytes": totals.bytes_read // totals.files if totals.files else None,
        "loader_read_mb_s": totals.bytes_read / 1e6 / measured_s if measured_s > 0 else None,
        "loader_read_ms_per_sample": totals.read_ns / totals.files / 1e6 if totals.files else None,
        "loader_decode_ms_per_sample": totals.decode_ns / totals.files / 1e6 if totals.files else None,
        "loader_busy_fraction": (_share(totals.read_ns + totals.decode_ns, measured_ns * options.loader_workers)
                                 if options.loader_workers else None),
        "storage_bytes": io["storage_bytes"],
        "io_method": io["io_method"],
        **_model_storage(model),
        **warmup.result_fields(),
    }
    if options.checkpoint and not cancelled():
        emit(protocol.make("phase", phase="finishing", t_ns=clock()))  # the measurement window ends here
        # Imported by name, as backends are (engines.registry): it imports torch, and only a worker gets here.
        checkpoints = importlib.import_module("engines.checkpoints")
        result.update(checkpoints.measure(spec.model, spec.model_params, options.data_dir))
    return result


# ---- Private API
def _share(part_ns: int, whole_ns: int) -> float | None:
    return min(1.0, max(0.0, part_ns / whole_ns)) if whole_ns > 0 else None


def _cache_state(asked: str, cold: bool, reason: str, storage_bytes: int | None,
                 read_bytes: int) -> tuple[str, str]:
    """Cold only when the cache was dropped AND the counters show the reads reached storage."""
    if asked == "warm" or not cold:
        return "warm", reason
    if storage_bytes is None:
        return "cold", reason + " (not confirmed: this OS has no /proc/self/io)"
    if read_bytes and storage_bytes < COLD_CONFIRMED * read_bytes:
        return "warm", (f"pages were dropped before each read, yet only {storage_bytes / read_bytes:.0%} of the "
                        "bytes read came from storage (the kernel kept or refetched them from memory)")
    return "cold", reason


def _model_storage(model: LoadedModel) -> dict[str, Any]:
    """The model load's storage side: a file's timed read (the worker's), else a note that nothing was read."""
    details = model.details
    fields: dict[str, Any] = {"model_load_s": model.load_s, "model_bytes": model.model_bytes}
    if details.get("read_bytes"):
        fields.update({"model_read_bytes": details["read_bytes"], "model_read_s": details.get("read_s"),
                       "model_read_mb_s": details.get("read_mb_per_s")})
    else:
        fields["model_read_note"] = "catalog model built in memory: no model file read"
    return fields
