"""Every command's --help formats: argparse expands % in help texts, so a bare "±5%" crashed `machine --help`."""

import argparse

from console.cli import build_parser


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                for inner, subsub in _subparsers(sub):
                    yield f"{name} {inner}", subsub


def test_every_commands_help_formats():
    parser = build_parser()
    commands = dict(_subparsers(parser))
    assert {"run", "machine", "compare", "doctor", "rules"} <= set(commands)
    for name, sub in commands.items():
        text = sub.format_help()
        assert "usage:" in text, name
