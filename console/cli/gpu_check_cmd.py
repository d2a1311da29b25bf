"""`labconsole gpu-check` (`make gpu-check`): the acceptance check of a machine with NVIDIA GPUs.

Runs the product's own commands in child processes against one fresh temporary history (targets, NVML
telemetry, a CUDA run of each engine, the machine card, topology, NCCL collectives), judges each, prints a table
and writes one JSON document. Where there is no NVIDIA GPU every GPU step is skipped with the reason and the exit
status is 0; any failed step makes it 1. The steps themselves are console.gpucheck.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile

from console.cli.common import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, emit_json, error, fail
from console.cli.numbers import number

NAME = "gpu-check"
HELP = "acceptance check of an NVIDIA GPU machine: targets, NVML, CUDA runs, card, topology, NCCL"
DESCRIPTION = ("Run the console's own commands on this machine's NVIDIA GPUs, each in a child process against a "
               "fresh temporary history, and judge each: targets list the GPUs; NVML telemetry reads power, "
               "utilisation and memory; a CUDA run of each engine completes and is valid; the machine card of "
               "cuda:0 has its device and host-to-device figures; the topology holds every GPU (and NVLink when "
               "NVML reports it); NCCL collectives run with 2 or more GPUs. Without an NVIDIA GPU every GPU step "
               "is skipped with the reason (exit 0); a failed step exits 1. The whole check keeps to --budget.")
USES_HISTORY = False  # its own fresh history, removed afterwards: the user's runs are never touched


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from console.gpucheck.check import BUDGET_S

    parser.add_argument("--out", metavar="FILE", default=None,
                        help="write the JSON document here (- for standard output)")
    parser.add_argument("--json", action="store_true", help="print the JSON document instead of the table")
    parser.add_argument("--quick", action="store_true",
                        help="machine card at small sizes: checks the plumbing in seconds, the figures are not "
                             "ceilings")
    parser.add_argument("--budget", type=number(60, 3600, unit="s"), default=BUDGET_S, metavar="S",
                        help=f"seconds the whole check may take; a step not started in time fails (default "
                             f"{BUDGET_S:g})")


def main(args: argparse.Namespace) -> int:
    from console.files.output_file import OutputError, check_out, write_out
    from console.gpucheck import probe
    from console.gpucheck.check import cli_runner, run_check

    target = None
    if args.out is not None:
        try:
            target = check_out(args.out, example="gpu-check.json")
        except OutputError as exc:
            return fail(str(exc))
        if target.is_stdout and args.json:
            target.close()
            return fail("--json and --out - both write to standard output; drop one")
    said = sys.stderr if args.json or (target is not None and target.is_stdout) else sys.stdout
    workdir = tempfile.mkdtemp(prefix="labconsole-gpu-check-")
    try:
        nvidia = probe.nvidia()
        print(f"gpu-check: {len(nvidia['gpus'])} NVIDIA GPU(s) by NVML"
              + (f" ({nvidia['reason']})" if nvidia["reason"] else ""), file=said, flush=True)
        document = run_check(cli_runner(), nvidia, db=f"{workdir}/history.db", workdir=workdir, quick=args.quick,
                             budget_s=args.budget, on_step=lambda record: print(_row(record), file=said, flush=True))
    except KeyboardInterrupt:
        return EXIT_CANCELLED
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if target is not None:
        try:
            with target:
                write_out(target, lambda stream: stream.write(json.dumps(_stamped(document), indent=2) + "\n"),
                          binary=False)
        except OutputError as exc:
            return error(exc)
    summary = document["summary"]
    print(f"gpu-check: {summary['result']} ({summary['pass']} passed, {summary['fail']} failed, "
          f"{summary['skipped']} skipped) in {summary['seconds']:.0f} s"
          + ("" if summary["within_budget"] else f", over the {document['budget_s']:g} s budget")
          + (f"; written to {args.out}" if target is not None and not target.is_stdout else ""), file=said)
    if args.json:
        emit_json(document)
    return EXIT_FAILED if summary["exit_code"] else EXIT_OK


# ---- Private API
def _row(record: dict) -> str:
    return f"  {record['step']:<17} {record['status']:<8} {record['seconds']:>6.1f} s  {record['reason']}"


def _stamped(document: dict) -> dict:
    from console.cli.schema import stamp

    return stamp(document, NAME)
