"""What the commands that run a model share (`run`, `analyze`, `sweep`): their common flags, and the spec the
flags give."""

from __future__ import annotations

import argparse
from typing import Any

from console.cli.common import add_console_cores_option, fail, option_problem, spec_values
from console.cli.rules_cmd import add_rules_option, rules_for


def add_run_options(parser: argparse.ArgumentParser, during: str = "the run") -> None:
    """--no-telemetry, the console's cores and --rules (`during`: what the telemetry would be sampled over)."""
    parser.add_argument("--no-telemetry", action="store_true", help=f"do not sample CPU/memory during {during}")
    add_console_cores_option(parser)
    add_rules_option(parser)


def spec_from_flags(args: argparse.Namespace) -> Any:
    """The RunSpec the spec flags give; or, after saying which flag is wrong and why, exit 2 (an int)."""
    from console.spec.build import SpecError, build_spec
    from engines.spec import spec_fields

    try:
        return build_spec(spec_values(args, spec_fields()))
    except SpecError as exc:
        return fail(option_problem(exc))


def spec_and_rules(args: argparse.Namespace, spec: Any = None) -> tuple[Any, Any] | int:
    """(the spec, the rules in force): `spec` when given (a spec file's), else the flags'; or the exit code, after
    saying which flag or rules file is wrong and why."""
    if spec is None:
        spec = spec_from_flags(args)
        if isinstance(spec, int):
            return spec
    rules = rules_for(args)
    return rules if isinstance(rules, int) else (spec, rules)
