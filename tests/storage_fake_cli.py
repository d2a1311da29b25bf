"""The CLI half of the fake storage kind (storage_fake_kind): add_arguments / options_from / text_lines, as the
contract asks of console/cli/storage_<kind>.py."""

from __future__ import annotations

from engines.storage.errors import StorageError


def add_arguments(parser):
    parser.add_argument("--mode", default="ok")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--label", default="fake feed on tmpfs")
    parser.add_argument("--kind", default="feed", choices=["feed", "sweep", "checkpoint", "coldstart"])
    parser.add_argument("--data-dir", default=None)


def options_from(args):
    if args.n < 0:
        raise StorageError(f"--n {args.n} is negative", "give --n 0 or more")
    return {"mode": args.mode, "n": args.n, "scale": args.scale, "label": args.label, "kind": args.kind}


def text_lines(result):
    return [f"{result['label']}: AU {result['figures']['au_percent']}%", f"passed: {result['passed']}"]
