"""Which links of the topology graph a transfer crosses, and the rate those links promise.

The graph is engines.topology's contract (docs/topology.md): nodes with a `parent`, links from an upstream node `a`
to a child `b`. A device's path to host memory is the chain of links into it and each of its ancestors; a transfer
between two devices crosses both chains up to their closest common ancestor, unless an NVLink joins them directly.
The rate a path promises is its slowest link's per-direction `theoretical_gbs` (from the link's maximum speed and
width); None, with the link named, when a physical link on it has no theoretical rate — never guessed. A link with
no speed at all in sysfs (the hop inside a PCIe switch, a VM's virtual bus) is not a physical link to read and does
not count; a path made only of such links has no theoretical rate, with that reason.

Pure Python on plain dicts: no torch, no sysfs.
"""

from __future__ import annotations

import re
from typing import Any

PCIE_GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}  # GT/s per lane → PCIe generation


class Graph:
    """Lookups over a topology dict; raises ValueError naming what is malformed."""

    def __init__(self, topology: dict[str, Any]):
        if not isinstance(topology, dict) or not isinstance(topology.get("nodes"), list) \
                or not isinstance(topology.get("links"), list):
            raise ValueError("the topology must be engines.topology.discover()'s dict, with 'nodes' and 'links' "
                             "lists: pass its result unchanged")
        self.nodes: dict[str, dict] = {}
        for node in topology["nodes"]:
            if not isinstance(node, dict) or "id" not in node:
                raise ValueError(f"topology node without an id: {node!r}")
            self.nodes[node["id"]] = node
        self.links: list[dict] = [link for link in topology["links"] if isinstance(link, dict)]
        self.by_id = {link.get("id"): link for link in self.links}

    # ---- nodes
    def of_kind(self, kind: str) -> list[dict]:
        return [node for node in self.nodes.values() if node.get("kind") == kind]

    def numa_nodes(self) -> list[tuple[int, dict]]:
        """(OS index, node) for every NUMA node, in index order."""
        found = [(_numa_index(node), node) for node in self.of_kind("numa")]
        return sorted(((index, node) for index, node in found if index is not None), key=lambda pair: pair[0])

    def numa_of(self, node_id: str | None) -> int | None:
        """The NUMA node a device reports (attrs numa_node), else the first NUMA ancestor's index."""
        node = self.nodes.get(node_id or "")
        if node is None:
            return None
        value = (node.get("attrs") or {}).get("numa_node")
        if isinstance(value, int) and value >= 0:
            return value
        for ancestor in self.ancestors(node_id):
            if self.nodes[ancestor].get("kind") == "numa":
                return _numa_index(self.nodes[ancestor])
        return None

    def numa_id(self, index: int | None) -> str | None:
        for found, node in self.numa_nodes():
            if found == index:
                return node["id"]
        return None

    def by_bdf(self, bdf: str | None) -> str | None:
        if not bdf:
            return None
        bdf = bdf.lower()
        for node in self.nodes.values():
            attrs = node.get("attrs") or {}
            if str(attrs.get("bdf", "")).lower() == bdf or node["id"].lower() == f"pci:{bdf}":
                return node["id"]
        return None

    def ancestors(self, node_id: str) -> list[str]:
        """Node ids from `node_id` (included) up to the root, following `parent`; stops at a cycle."""
        chain, seen = [], set()
        current: str | None = node_id
        while current is not None and current in self.nodes and current not in seen:
            chain.append(current)
            seen.add(current)
            current = self.nodes[current].get("parent")
        return chain

    # ---- links
    def up_links(self, node_id: str, stop_at: str | None = None) -> list[dict]:
        """The PCIe links into `node_id` and each ancestor (device first), up to `stop_at` (excluded)."""
        into = {link.get("b"): link for link in self.links if link.get("kind") == "pcie"}
        out = []
        for current in self.ancestors(node_id):
            if current == stop_at:
                break
            if current in into:
                out.append(into[current])
        return out

    def _is_switch(self, node_id: str | None) -> bool:
        return bool(((self.nodes.get(node_id) or {}).get("attrs") or {}).get("nvswitch"))

    def device_to_host(self, node_id: str | None) -> list[dict]:
        return self.up_links(node_id) if node_id in self.nodes else []

    def between(self, a: str | None, b: str | None) -> tuple[list[dict], str]:
        """The links a copy from device `a` to device `b` crosses and how it goes ("nvlink" | "nvswitch" | "pcie"):
        NVLinks between the two, else both GPUs' NVLinks into NVSwitches (HGX/DGX boards), else the PCIe tree."""
        if a not in self.nodes or b not in self.nodes:
            return [], "unknown"
        nvlinks = [link for link in self.links if link.get("kind") == "nvlink"]
        direct = [link for link in nvlinks if {link.get("a"), link.get("b")} == {a, b}]
        if direct:
            return direct, "nvlink"
        switched = {end: [link for link in nvlinks if link.get("a") == end and self._is_switch(link.get("b"))]
                    for end in (a, b)}
        if switched[a] and switched[b]:
            return switched[a] + switched[b], "nvswitch"
        above_b = set(self.ancestors(b))
        common = next((node for node in self.ancestors(a) if node in above_b), None)
        return self.up_links(a, common) + list(reversed(self.up_links(b, common))), "pcie"


def ceiling(links: list[dict], what: str) -> tuple[float | None, str]:
    """(slowest link's per-direction theoretical GB/s, why None) over a path. NVLinks are summed per GPU end (the
    parallel links of one GPU) and the smaller GPU's sum is the ceiling (through NVSwitches, each GPU's own)."""
    if not links:
        return None, f"the topology shows no link for {what}"
    if all(link.get("kind") == "nvlink" for link in links):
        if any(link.get("theoretical_gbs") is None for link in links):
            return None, f"NVLink {links[0].get('id')} has no theoretical rate in the topology"
        per_gpu: dict[str, float] = {}
        for link in links:
            per_gpu[str(link.get("a"))] = per_gpu.get(str(link.get("a")), 0.0) + float(link["theoretical_gbs"])
        return min(per_gpu.values()), ""
    worst: float | None = None
    unread = []
    for link in links:
        rate = link.get("theoretical_gbs")
        if rate is None and not (link.get("max") or {}).get("speed_gts") and \
                not (link.get("current") or {}).get("speed_gts"):
            unread.append(link)  # no physical link to read (inside a switch, a virtual bus): not a limit we know
            continue
        if rate is None:
            note = link.get("note") or "no maximum speed/width in sysfs"
            return None, f"link {link.get('id')} on the path has no theoretical rate ({note})"
        worst = float(rate) if worst is None else min(worst, float(rate))
    if worst is None:
        note = unread[0].get("note") or "no link speed in sysfs"
        return None, f"no link on the path has a speed to read ({unread[0].get('id')}: {note})"
    return worst, ""


def link_label(link: dict | None) -> str | None:
    """"PCIe Gen4 x16" from a link's maximum speed and width; "NVLink" for NVLinks; None when not known."""
    if not link:
        return None
    if link.get("kind") == "nvlink":
        return "NVLink"
    top = link.get("max") or {}
    speed, width = top.get("speed_gts"), top.get("width")
    if speed is None or width is None:
        return None
    generation = PCIE_GENERATIONS.get(round(float(speed), 1))
    return f"PCIe Gen{generation} x{width}" if generation else f"PCIe {float(speed):g} GT/s x{width}"


# ---- Private API
def _numa_index(node: dict) -> int | None:
    """A NUMA node's OS index: attrs "index"/"os_index", else the last number in its id ("numa1" → 1)."""
    attrs = node.get("attrs") or {}
    index = attrs.get("index", attrs.get("os_index"))
    if isinstance(index, int):
        return index
    digits = re.findall(r"\d+", str(node.get("id")))
    return int(digits[-1]) if digits else None
