"""Special files the --out tests write into (tests/e2e/test_out_paths_cli.py, tests/unit/test_output_file.py)."""

import os


def fifo_at(tmp_path, via_link):
    """A FIFO in tmp_path, and the path to name it by: itself, or a symlink to it."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    if not via_link:
        return fifo, fifo
    link = tmp_path / "link"
    link.symlink_to(fifo)
    return fifo, link
