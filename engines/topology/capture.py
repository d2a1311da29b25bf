"""Capture the sys/proc files topology discovery reads into a compact manifest (a test fixture of this machine).

Only what `discover` read is kept: the files' text, the symlinks met while resolving paths, and directory listings.
`python -m engines.topology.capture OUT.json` writes this machine's; tests materialize it into a temp folder.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from engines.topology.graph import discover
from engines.topology.sysfs import Tree


def capture(root: str = "/") -> dict[str, Any]:
    """{"files": {rel: text}, "links": {rel: target}, "dirs": {rel: [names]}} of one discovery run (NVML off)."""
    tree = Tree(root, record=True)
    discover(root, nvml=None, tree=tree)
    host = tree.read("proc/sys/kernel/hostname")
    files = dict(sorted(tree.files.items()))
    if host is not None:
        files["proc/sys/kernel/hostname"] = host + "\n"
    return {"format": "labconsole.topology-capture/1", "files": files, "links": dict(sorted(tree.links.items())),
            "dirs": dict(sorted(tree.dirs.items()))}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m engines.topology.capture OUT.json", file=sys.stderr)
        return 2
    with open(argv[0], "w", encoding="utf-8") as fh:
        json.dump(capture("/"), fh, indent=0, sort_keys=True)
        fh.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
