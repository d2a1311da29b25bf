"""`labconsole demo PLAYLIST`: play a playlist of runs and A-vs-B races full screen, unattended (demo mode).

The playlist is checked here, before any window opens: a file that cannot be played is refused with the item,
the field and the fix (exit 2); an item whose spec cannot be built now is a warning — it will fail in its turn
and the playlist goes on. `--check` stops after these checks (exit 2 when any item would fail).
"""

from __future__ import annotations

import argparse
import sys

from console.cli.common import EXIT_OK, EXIT_USAGE, emit_json, fail, wants_json

NAME = "demo"
HELP = "play a playlist of runs and A-vs-B races full screen, unattended (Esc leaves)"
DESCRIPTION = ("Demo mode for the big screen: large tiles (latency, throughput, power), a live latency trace, "
               "A-vs-B races with the verdict and its interval. The playlist is a JSON file (README.md, Demo "
               "mode); every run is stored in the history like any other.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("playlist", metavar="PLAYLIST", help="the playlist JSON file")
    theme_group = parser.add_mutually_exclusive_group()
    theme_group.add_argument("--dark", dest="theme", action="store_const", const="dark",
                             help="dark screen (remembered; D switches in demo mode)")
    theme_group.add_argument("--light", dest="theme", action="store_const", const="light",
                             help="light screen (remembered)")
    parser.add_argument("--once", action="store_true", help="play the items once, even if the playlist loops")
    parser.add_argument("--windowed", action="store_true", help="a normal window instead of full screen (rehearsal)")
    parser.add_argument("--check", action="store_true",
                        help="check the playlist and every item's spec, then exit (0: all playable)")


def main(args: argparse.Namespace) -> int:
    from console.demo.playlist import PlaylistError, check_specs, load

    try:
        playlist = load(args.playlist)
    except PlaylistError as exc:
        if wants_json(args):
            emit_json({"ok": False, "error": str(exc), "problems": []})
        return fail(str(exc))
    if args.once:
        playlist = playlist.with_loop(False)
    problems = check_specs(playlist)
    if args.check:
        if wants_json(args):
            emit_json({"ok": not problems, "items": len(playlist.items), "loop": playlist.loop,
                       "problems": [{"where": p.where, "problem": p.problem, "fix": p.fix} for p in problems]})
        else:
            races = sum(1 for item in playlist.items if item.kind == "race")
            print(f"{args.playlist}: {len(playlist.items)} items ({races} races), "
                  f"{'loops' if playlist.loop else 'plays once'}, hold {playlist.hold_s:g} s")
            for problem in problems:
                print(f"  will fail: {problem}")
        return EXIT_USAGE if problems else EXIT_OK
    for problem in problems:
        print(f"labconsole: warning: {problem} (the item fails in its turn; the playlist goes on)", file=sys.stderr)
    from console.ui.demo.app import run_demo

    return run_demo(playlist, db=getattr(args, "db", None), theme_mode=args.theme, full_screen=not args.windowed)
