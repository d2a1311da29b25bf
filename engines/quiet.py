"""Silence a library's chatter while it runs in a worker: a worker's stdout is the CLI's (--json), and the exporter's
and the quantizer's progress lines and warnings would land in it."""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Iterator


@contextlib.contextmanager
def quiet(*logger_names: str) -> Iterator[None]:
    """Loggers `logger_names` ("" is the root logger) at ERROR, warnings ignored, stdout swallowed; all restored
    afterwards."""
    loggers = [logging.getLogger(name) for name in logger_names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)
