"""The frozen bundle's entry point (PyInstaller runs this file as __main__).

Order matters. A spawned worker is this same executable started again with `--multiprocessing-fork`:
`multiprocessing.freeze_support()` must see that before anything else runs, run the child and exit, or every
worker would start a second console. The only thing done before it is stream repair: a windowed build (no
console on Windows, a .desktop launch on Linux) may start with sys.stdout/sys.stderr set to None, and the
first print or traceback — in the console or in a child, which inherits them — would then raise.
"""

import multiprocessing
import os
import sys


def _repair_streams() -> None:
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 — lives as long as the process


if __name__ == "__main__":
    _repair_streams()
    multiprocessing.freeze_support()
    from console.__main__ import main

    sys.exit(main())
