"""Arguments that name dates, run ids, files and folders: checked where they are typed, before anything runs.

Why: each of these was accepted and then failed late or not at all — `history --since notadate` listed nothing
with exit 0, an empty `--data-dir` loaded the model and stored a failed run, a too-short run id prefix exited 1
while an unknown id exited 2. Here each is refused up front as a usage error (exit 2, EXIT_USAGE) naming the
accepted forms or the fix, and nothing is created or run. (Files a command writes — --out, analyze's --trace —
are checked by console.files.output_file.)

- `date_bound`: the argparse type of --since / --until (ISO dates and date-times only).
- `history_path`: the argparse type of --db (every command's; here so the commands need not import the CLI's
  root, which imports them).
- `history_failure`: the exit code of a HistoryError — a run/sweep id prefix that is too short or ambiguous is a
  bad argument (2, like an unknown id), anything else a failure (1). `compare`/`regressions` keep 3.
- `data_dir_problem`: whether --data-dir holds sample files, checked before the model is loaded (local runs
  only: a cluster node reads its own disks and checks there).
"""

from __future__ import annotations

import argparse
import errno
import os
import re
from datetime import datetime, timezone
from typing import Any

from console import paths
from console.cli.common import error, fail

__all__ = ["DATE_FORMS", "date_bound", "history_path", "history_failure", "data_dir_problem"]

DATE_FORMS = ("an ISO date or date-time: 2026-11-01, 2026-11-01T14:30, 2026-11-01T14:30:05Z or "
              "2026-11-01T14:30+02:00 (a time without an offset is UTC; a date alone is its 00:00 UTC)")
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})?)?",
                  re.ASCII)  # ASCII digits only: '٢٠٢٦-١١-٠١' is refused, not read as a date
STORED_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"  # console.history.schema.utc_now: text order is time order


# ---- Public API
def date_bound(text: str) -> str:
    """--since / --until DATE → the UTC instant in the history's own format, so comparing text compares time.

    Anything else ('yesterday', '2026-13-45', '11/01/2026') is refused, naming the accepted forms."""
    raw = str(text).strip()
    if not _ISO.fullmatch(raw):
        raise argparse.ArgumentTypeError(f"must be {DATE_FORMS}; got {text!r}")
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError as exc:  # 2026-13-45, 2026-02-30, 25:00
        raise argparse.ArgumentTypeError(f"{text!r} is not a real date or time ({exc}); give {DATE_FORMS}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime(STORED_FORMAT)


date_bound.__name__ = "date"  # argparse names the type in its messages


def history_failure(exc: Exception) -> int:
    """Print a HistoryError and return its exit code: 2 for an id prefix that picks no single run or sweep (too
    short, or matching several: a bad argument, like an unknown id), 1 for everything else."""
    from console.history.errors import IdPrefixError

    if isinstance(exc, IdPrefixError):
        return fail(str(exc))
    return error(exc)


def data_dir_problem(directory: Any, model: str | None = None) -> str | None:
    """Why --data-dir cannot feed a run here (missing, not a folder, unreadable, no sample files — with the
    `labconsole make-data` command that writes some for `model`), or None when it holds sample files (whether
    they fit the model is known only once it is loaded). None for no directory."""
    if directory is None or directory == "":
        return None
    from engines.datafiles import DataError, list_files

    try:
        list_files(str(directory))
    except DataError as exc:
        text = str(exc).replace("--model MODEL", f"--model {model}") if model else str(exc)
        return text if text.startswith("--data-dir") else f"--data-dir: {text}"
    except (OSError, ValueError) as exc:  # a name too long, an embedded NUL
        return f"--data-dir {directory} cannot be read ({getattr(exc, 'strerror', None) or exc}); give the folder " \
               "that holds the samples"
    return None


def history_path(text: str) -> str:
    """--db PATH: an empty PATH is refused (it silently meant the default history, a different file), and so is
    one the system cannot name (a 300-character file name: an OSError traceback further on)."""
    if not text:
        raise argparse.ArgumentTypeError(f"an empty path; give a history file, or leave --db out for the default "
                                         f"({paths.history_db(None)})")
    try:
        os.stat(os.path.expanduser(text))
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise argparse.ArgumentTypeError(f"{exc.strerror} ({len(os.fsencode(text)):,} bytes); give a shorter "
                                             "path") from None
    except ValueError:  # a NUL
        raise argparse.ArgumentTypeError("a path cannot hold a NUL character") from None
    return text


history_path.__name__ = "path"  # argparse names the type in its messages
