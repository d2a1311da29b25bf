"""`labconsole make-data`: a directory of deterministic sample files for the input-pipeline scenario."""

from __future__ import annotations

import argparse
import errno
from collections.abc import Callable
from typing import Any

from console.cli.common import EXIT_OK, emit_json, error, fail, wants_json
from console.cli.numbers import number, whole

NAME = "make-data"
HELP = "write deterministic sample files (one sample of a model's input each) for --scenario input-pipeline"
USES_HISTORY = False
MAX_COUNT = 10_000_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", required=True, metavar="DIR", help="where to write the files (created if missing)")
    parser.add_argument("--model", default=None, metavar="NAME", help="catalog model whose first input the "
                                                                      "samples fit (see labconsole models)")
    parser.add_argument("--shape", default=None, metavar="SHAPE", help="instead of --model: one sample's shape, "
                                                                       "batch excluded (e.g. 3x224x224)")
    parser.add_argument("--dtype", default="float32", help="with --shape: the samples' dtype (default float32)")
    parser.add_argument("--count", type=whole(1, MAX_COUNT), default=256, metavar="N",
                        help=f"how many files, 1 to {MAX_COUNT:,} (default 256)")
    parser.add_argument("--format", default="npy", choices=("npy", "f32", "bin"),
                        help="npy (numpy.save), f32 (raw float32) or bin (raw, the input's dtype); default npy")
    parser.add_argument("--seed", type=whole(0, 2**32 - 1), default=0, help="content seed (default 0)")
    parser.add_argument("--workload", default=None, choices=("unet3d", "resnet50", "cosmoflow"),
                        help="instead of --model/--shape: files shaped like an MLPerf Storage workload for "
                             "`labconsole storage feed` (sizes from engines/storage/workloads.py)")
    parser.add_argument("--files", type=whole(1, MAX_COUNT), default=None, metavar="N",
                        help="with --workload: how many files (each holds the workload's samples per file)")
    parser.add_argument("--scale", type=number(0, 1, low_open=True), default=1.0, metavar="F",
                        help="with --workload: shrink each sample to this fraction, for small disks (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def main(args: argparse.Namespace) -> int:
    from engines.datafiles import DataError, InputLayout, layout_for_catalog
    from engines.inputs import InputError, parse_shape
    from engines.sample_writer import SampleRequestError, check_request, write_samples

    if args.workload is not None:
        return _workload_data(args)
    if args.files is not None or args.scale != 1.0:
        return fail("--files and --scale go with --workload (for --model/--shape give --count)")
    if (args.model is None) == (args.shape is None):
        return fail("give either --model NAME (a catalog model) or --shape SHAPE (one sample, batch excluded)")
    try:
        layout = (layout_for_catalog(args.model) if args.model else
                  InputLayout("input", tuple(parse_shape(args.shape)), args.dtype))
        # dtype, one sample's memory, all files' disk space: refused before anything is allocated or created
        check_request(args.dir, layout, args.count, args.format)
    except (DataError, InputError, SampleRequestError) as exc:
        return fail(str(exc))
    # SampleRequestError again: the disk filled between the check and the write
    return _write(args, lambda: write_samples(args.dir, layout, args.count, args.format, args.seed),
                  SampleRequestError, "lower --count", _samples_text)


def _workload_data(args: argparse.Namespace) -> int:
    """`make-data --workload W --dir D --files N [--scale F]`: a feed data set (engines.storage.dataset)."""
    from engines.storage import dataset, workloads
    from engines.storage.errors import StorageError

    if args.model is not None or args.shape is not None:
        return fail("give --workload, or --model/--shape, not both")
    if args.files is None:
        return fail("--workload needs --files N (how many files to write)")
    if args.format not in ("npy", "bin"):
        return fail("--workload writes npy or bin files; give --format npy or --format bin")
    workload = workloads.published(args.workload)

    def text(written: dict[str, Any]) -> str:
        scaled = (f", samples scaled to {args.scale:g} of {workload.sample_bytes:,} bytes: the feed result will "
                  "say its samples are smaller than the workload's" if args.scale != 1.0 else "")
        return (f"wrote {written['files']} {args.workload} {written['format']} files of "
                f"{written['samples_per_file']} sample(s) x {written['sample_bytes']:,} bytes "
                f"({written['bytes'] / 1e6:,.1f} MB) to {written['dir']}{scaled}")

    return _write(args, lambda: dataset.write(args.dir, workload, args.files, args.scale, args.format, args.seed),
                  StorageError, "lower --files or --scale", text)


def _write(args: argparse.Namespace, write: Callable[[], dict[str, Any]], refused: type[Exception], smaller: str,
           text: Callable[[dict[str, Any]], str]) -> int:
    """Both kinds of data set end alike: a request refused (`refused`) exits 2, a failed write as _write_failed
    says, and what was written is printed as JSON with --json, else as `text` tells it."""
    try:
        written = write()
    except refused as exc:
        return fail(str(exc))
    except OSError as exc:
        return _write_failed(args.dir, exc, smaller)
    if wants_json(args):
        emit_json(written)
    else:
        print(text(written))
    return EXIT_OK


def _samples_text(written: dict[str, Any]) -> str:
    shape = "x".join(map(str, written["input"]["sample_shape"]))
    return (f"wrote {written['files']} {written['format']} files ({written['bytes'] / 1e6:.1f} MB, "
            f"{written['input']['name']} {shape} {written['input']['dtype']}) to {written['dir']}")


def _write_failed(directory: str, exc: OSError, smaller: str) -> int:
    """A write that failed: a disk that filled part-way is a failure (exit 1, the partial file removed), any other
    OSError a --dir that cannot be written (exit 2). `smaller` names the flags that write less."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return error(f"--dir {directory}: the disk filled while writing ({exc.strerror}); free some space, "
                     f"{smaller}, or give a --dir on a disk with room")
    return fail(f"--dir {directory}: cannot write there ({exc.strerror or exc}); choose a writable directory")
