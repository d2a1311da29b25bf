"""`labconsole doctor`: what on this machine adds noise to measurements — each setting with its reading and fix —
and which builds of PyTorch and ONNX Runtime are installed.

The noise checks live in `engines.doctor` (Qt-free, read-only: /proc and /sys only), the build checks in
`engines.installed_builds` (package metadata only: neither engine is imported); this command prints them as a
table, or with --json the report itself ("schema": "labconsole.doctor/1", the build checks under "install"). The
exit status is 0 whatever the machine's state (a report, not a gate); 2 for a bad option.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from console.cli.common import EXIT_OK, emit_json, wants_json
from console.cli.numbers import number

NAME = "doctor"
HELP = "what on this machine adds noise to measurements (governor, turbo, SMT, VM/steal, other processes, swap, " \
       "thermal, power profile), each with its fix; and which torch and ONNX Runtime builds are installed"
DESCRIPTION = ("Reads /proc and /sys (never writes) and samples the busiest other processes over --sample seconds. "
               "Each check is ok, warn (adds noise), bad (noisy enough to move results) or not available (why). "
               "pyperf's `system show` is the model; the fixes name the command that changes each setting. "
               "Then the installed builds, from package metadata: PyTorch (CPU, or which CUDA/ROCm) and ONNX "
               "Runtime (a warning when two builds, e.g. onnxruntime and onnxruntime-gpu, shadow each other).")
USES_HISTORY = False
SYMBOLS = {"ok": "ok", "warn": "WARN", "bad": "BAD", "not_available": "n/a"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sample", type=number(0.1, 60.0, unit="s"), default=1.0, metavar="S",
                        help="seconds between the two readings of the counters (steal, swap, throttling, other "
                             "processes); 0.1 to 60, default 1")
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def main(args: argparse.Namespace) -> int:
    from engines import installed_builds
    from engines.doctor import diagnose

    report = diagnose(sample_s=args.sample)
    report["install"] = installed_builds.report()
    if wants_json(args):
        emit_json(report)
    else:
        print("\n".join(report_lines(report)))
    return EXIT_OK


def report_lines(report: dict[str, Any], width: int = 100) -> list[str]:
    """One block per check: status, label, reading; the fix indented under it."""
    from engines.doctor import summary_line

    lines = [f"{report.get('host')} at {report.get('measured_at')} (counters sampled over {report.get('sample_s'):g} s)"
             f" — {summary_line(report)}", ""]
    for check in report.get("checks") or []:
        lines.extend(_check_lines(check, width))
    if report.get("install"):
        lines += ["", "Installed builds (from package metadata; neither engine imported):"]
        for check in report["install"].get("checks") or []:
            lines.extend(_check_lines(check, width))
    return lines


def _check_lines(check: dict[str, Any], width: int) -> list[str]:
    """Status, label and reading; the fix indented under it."""
    head = f"{SYMBOLS.get(check['status'], check['status']):>4}  {check['label']}: "
    lines = textwrap.wrap(check["reading"], width, initial_indent=head, subsequent_indent=" " * 6)
    if check.get("fix"):
        lines.extend(textwrap.wrap(check["fix"], width, initial_indent="      fix: ", subsequent_indent=" " * 11))
    return lines
