"""The machine as a graph of links: packages, NUMA nodes, the PCIe tree, GPUs, drives and NICs (issue 22).

`discover(root)` reads sysfs (and NVML when present) into one JSON-able dict; `check_links_under_load` re-reads
links that look trained down while a load drives them. Qt-free and torch-free: safe in the console process.
"""

from engines.topology.graph import discover
from engines.topology.links_state import LoadUnavailable, check_links_under_load, default_load

__all__ = ["discover", "check_links_under_load", "default_load", "LoadUnavailable"]
