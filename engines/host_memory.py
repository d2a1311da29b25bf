"""How much memory this machine has available now: one reading for every check that sizes buffers against it.

Linux's MemAvailable (free plus reclaimable page cache), else the free pages the OS reports; 0 when the OS says
neither (callers that must tell "unknown" apart test for 0). Standard library only.
"""

from __future__ import annotations

import contextlib
import os


def available_bytes() -> int:
    """Memory available now (Linux MemAvailable, else free pages); 0 when the OS does not say."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    with contextlib.suppress(AttributeError, OSError, ValueError):
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return 0
