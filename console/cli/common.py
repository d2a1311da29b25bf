"""What the commands share: exit codes, JSON output, errors, the history, and the spec options as flags."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from console import paths
from console.cluster import parse_on  # noqa: F401 — the commands' import point for --on

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130
# `compare` and `regressions` could not judge: an unknown run, a history that cannot be read, too few
# iterations, or runs that cannot answer --fail-on. 1 from them means only "a slow-down was found" (README).
EXIT_UNDECIDED = 3


def emit_json(data: Any, schema: str | None = None) -> None:
    """Print one JSON document with its `"schema"` first (console.cli.schema). `schema` names a variant's own
    document (`machine.nodes`); by default it is the calling command module's NAME."""
    from console.cli.schema import stamp

    name = schema or str(sys._getframe(1).f_globals.get("NAME", ""))
    json.dump(stamp(data, name), sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def fail(problem: str) -> int:
    """A bad option: say which and why, exit 2."""
    print(f"labconsole: error: {problem}", file=sys.stderr)
    return EXIT_USAGE


def undecided(problem: Any) -> int:
    """`compare` or `regressions` cannot judge (unknown run, unusable history …): say why, exit EXIT_UNDECIDED."""
    print(f"labconsole: cannot judge: {problem}", file=sys.stderr)
    return EXIT_UNDECIDED


def error(problem: Any) -> int:
    """A failure that is not the user's typing (history unusable …): exit 1."""
    print(f"labconsole: error: {problem}", file=sys.stderr)
    return EXIT_FAILED


def wants_json(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def db_path(args: argparse.Namespace):
    return paths.history_db(getattr(args, "db", None))


def status_exit(status: str) -> int:
    """A stored run's status as the command's exit code: 0 completed, 130 cancelled, 1 anything else."""
    return {"completed": EXIT_OK, "cancelled": EXIT_CANCELLED}.get(status, EXIT_FAILED)


def bad_input(exc: Any) -> int:
    """A benchmark's bad-input error (engines.bad_input.BadInputError: message and fix) as exit 2."""
    return fail(f"{exc.message}. Fix: {exc.fix}" if exc.fix else exc.message)


def with_history(args: argparse.Namespace, work: Callable[[Any], int]) -> int:
    """`work(store)` with the history open, closed after. Opened first because a history that cannot take the
    run must not cost minutes of measuring first: exit 1, nothing run, when it cannot be opened."""
    from console.history import HistoryError, HistoryStore

    try:
        store = HistoryStore(db_path(args))
    except HistoryError as exc:
        return error(exc)
    try:
        return work(store)
    finally:
        store.close()


def progress_text(prefix: str, update: Mapping[str, Any]) -> str:
    """A worker's progress update as one line: "PREFIX: text (40%)"."""
    fraction = update.get("fraction")
    shown = f" ({fraction:.0%})" if isinstance(fraction, (int, float)) else ""
    return f"{prefix}: {update.get('text', '')}{shown}"


def open_writer(args: argparse.Namespace):
    """The history writer, or None after printing why it cannot be opened."""
    from console.history import HistoryError, HistoryWriter

    try:
        return HistoryWriter.open(db_path(args))
    except HistoryError as exc:
        error(exc)
        return None


def add_cluster_options(parser: argparse.ArgumentParser, cluster_help: str, schedule_help: str,
                        on: bool) -> None:
    """--cluster, --on (when `on`), --schedule-timeout and --send-model, in their own group."""
    group = parser.add_argument_group("lab cluster (needs lab-console[cluster])")
    group.add_argument("--cluster", metavar="ADDRESS", default=None, help=cluster_help)
    if on:
        group.add_argument("--on", metavar="LABEL=VALUE", action="append", default=None,
                           help="only on a node with this label (repeatable; `labconsole cluster` lists them; "
                                "node=ID picks one node). Without it: any node that has the target and engine")
    from console.cli.numbers import number

    group.add_argument("--schedule-timeout", metavar="S", type=number(0, 86400, low_open=True, unit="s"),
                       default=60.0, help=schedule_help)
    group.add_argument("--send-model", action="store_true",
                       help="send the model file to the node by content hash (at most 2 GiB; kept there under its "
                            "sha256, checked, never executed) instead of needing it at the same path on the node")


def add_console_cores_option(parser: argparse.ArgumentParser) -> None:
    """--console-cores N (run, sweep, analyze): the window's core partition (console.run.partition) for a headless
    run, so a window run and a CLI run of one spec are alike. 0, the default: no partition, as before."""
    from console.cli.numbers import whole

    parser.add_argument("--console-cores", metavar="N", type=whole(0, 4096), default=0,
                        help="keep this console and its telemetry sampler on N reserved physical cores and the "
                             "worker on the rest, as the window does (Linux; default 0: no partition); "
                             "engine-default threads then mean the worker's cores")


def console_partition(args: argparse.Namespace):
    """The console.run.partition.Partition that --console-cores asks for (a 'not confined (why)' one when it cannot
    be applied here)."""
    from console.run.partition import plan

    return plan(getattr(args, "console_cores", 0) or 0)


def join_cluster(address: str | None, why: str) -> int | None:
    """Join the lab cluster at --cluster ADDRESS: None when joined, else the exit code after saying what is wrong
    (no --cluster: `why` says what needs one; no Ray, no token, nothing at the address)."""
    from console.cluster import ClusterError, ClusterUnavailable

    if address is None:
        return fail(f"{why}: give the cluster with --cluster ADDRESS")
    try:
        from console.cluster.connect import connect

        connect(address)
    except ClusterUnavailable as exc:
        return fail(str(exc))
    except ClusterError as exc:
        return error(exc)
    return None


def on_cluster(args: argparse.Namespace, why: str) -> list[Any] | int:
    """The --on filters parsed, with the cluster at --cluster joined (see join_cluster); or the exit code after
    saying what is wrong."""
    try:
        on = parse_on(args.on or [])
    except ValueError as exc:
        return fail(str(exc))
    problem = join_cluster(args.cluster, why)
    return on if problem is None else problem


def fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}g}"


def add_spec_options(parser: argparse.ArgumentParser, fields: Iterable[Any],
                     defaults: Mapping[str, Any] | None = None) -> None:
    """One flag per spec option (engines.spec.spec_fields): dest is the option's path, None = not given.

    Choices are checked by the spec, not by argparse, so the message says what is allowed in the spec's words;
    numbers are checked against the field's bounds as they are parsed (nan, inf, 1e30 never reach a worker).
    """
    defaults = defaults or {}
    groups: dict[str, Any] = {}
    for fld in fields:
        title = _group_title(fld.path)
        if title not in groups:
            groups[title] = parser.add_argument_group(title) if title else parser
        shown = defaults.get(fld.path, fld.default)
        help_text = fld.help
        if shown not in (None, False, {}, [], "") and "default" not in help_text:
            help_text += f" (default {shown})"
        kwargs: dict[str, Any] = {"dest": fld.path, "default": defaults.get(fld.path), "help": help_text}
        if fld.kind == "bool":
            kwargs["action"] = "store_true"
        elif fld.kind == "pairs":
            kwargs.update(action="append", metavar=fld.metavar or "NAME=VALUE")
        else:
            from console.cli.numbers import spec_type

            kwargs.update(type=spec_type(fld) if fld.kind in ("int", "float") else str,
                          metavar=fld.metavar or _METAVARS.get(fld.kind) or fld.name.upper())
        groups[title].add_argument(fld.flag, **kwargs)


_METAVARS = {"int": "N", "float": "X", "str": "TEXT"}


def _group_title(path: str) -> str:
    """Options of a plug-in are grouped under its name in --help; the spec's own fields stay on top."""
    from engines import backends

    head, _, rest = path.partition(".")
    if not rest:
        return ""
    if head in backends.names():
        return f"{backends.info(head).label} options"
    return {"scenario_options": "scenario options", "generation": "generate scenario",
            "limits": "worker limits"}.get(head, head)


def spec_values(args: argparse.Namespace, fields: Iterable[Any]) -> dict[str, Any]:
    """The flat option values the user gave (None and unset flags are left to the spec's defaults)."""
    given = vars(args)
    return {fld.path: given.get(fld.path) for fld in fields
            if given.get(fld.path) is not None and given.get(fld.path) is not False}


def option_problem(exc: Exception) -> str:
    """A SpecError in the words the user typed: the flag, then what is wrong."""
    from console.spec.build import flag_for

    field = getattr(exc, "field", "")
    detail = getattr(exc, "detail", str(exc))
    return f"{flag_for(field)}: {detail}" if field else detail
