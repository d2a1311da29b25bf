"""`labconsole` and `python -m console`: the command line, or the window when no command is given."""

import multiprocessing
import sys


def main() -> int:
    multiprocessing.freeze_support()  # first: a frozen bundle re-enters here to start spawn workers
    from console.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
