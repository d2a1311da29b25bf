"""The words of the topology graph: what a link is ("Gen4 x16 · 31.5 GB/s max"), what it measured, a node's
lines and the attribute rows of the details panel. Pure functions, Qt-free: the graph, the page and the tests
use them.

Split from `widgets.topology_graph` (the drawing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

KIND_TITLES = {
    "machine": "machine", "package": "CPU package", "numa": "NUMA node", "host-bridge": "host bridge",
    "pcie-root-port": "PCIe root port", "pcie-switch": "PCIe switch", "pcie-bridge": "PCIe bridge", "gpu": "GPU",
    "accelerator": "accelerator (NPU)", "nvme": "NVMe drive", "nic": "network interface",
    "pcie-device": "PCIe device", "cluster-node": "cluster node",
}
STATE_TEXT = {
    "at-max": "at its maximum speed and width",
    "below-max-idle": "reads low at idle; check under load (a PCIe link slows down when idle)",
    "low-under-load": "FLAGGED: stays below its maximum under load",
    "recovered-under-load": "below its maximum at idle, back to its maximum under load (fine)",
    "unknown": "state not known",
}
_GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


# ---- Text of links and nodes (pure functions: the page and the tests use them)
def pcie_generation(speed_gts: float | None) -> str | None:
    """'Gen4' for 16 GT/s; None when the speed is unknown; the raw GT/s when it is no PCIe generation."""
    if speed_gts is None:
        return None
    gen = _GENERATIONS.get(round(float(speed_gts), 1))
    return f"Gen{gen}" if gen else f"{speed_gts:g} GT/s"


def _speed_width(side: Mapping[str, Any] | None) -> str | None:
    if not side:
        return None
    gen, width = pcie_generation(side.get("speed_gts")), side.get("width")
    parts = [p for p in (gen, f"x{width}" if width else None) if p]
    return " ".join(parts) or None


def _gbs(value: Any) -> str:
    return f"{value:.1f} GB/s" if isinstance(value, (int, float)) and not isinstance(value, bool) else "? GB/s"


def link_text(link: Mapping[str, Any]) -> str:
    """One line for an edge: what the link is now and at most, per direction. 'Gen4 x16 · 31.5 GB/s max' when at
    its maximum, 'Gen1 x16 (max Gen4 x16) · 4.0 of 31.5 GB/s' when below it."""
    kind = link.get("kind")
    current, top = _speed_width(link.get("current")), _speed_width(link.get("max"))
    theoretical, now = link.get("theoretical_gbs"), link.get("current_gbs")
    if kind == "nvlink":
        lanes = (link.get("max") or {}).get("width") or (link.get("current") or {}).get("width")
        head = f"NVLink ×{lanes}" if lanes else "NVLink"
        return f"{head} · {_gbs(theoretical)} max" if theoretical is not None else head
    if kind == "memory":
        return f"memory · {_gbs(theoretical)} max" if theoretical is not None else "memory"
    if current and top and current != top:
        if now is not None and theoretical is not None:
            return f"{current} (max {top}) · {now:.1f} of {theoretical:.1f} GB/s"
        return f"{current} (max {top})"
    shown = top or current
    if shown is None:
        return "link speed not known"
    return f"{shown} · {_gbs(theoretical)} max" if theoretical is not None else shown


def measured_for(link: Mapping[str, Any], entries: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The card's measured entries that cross `link` (link_ids), with a median."""
    link_id = link.get("id")
    return [e for e in entries if link_id in (e.get("link_ids") or []) and e.get("median_gbs") is not None]


def measured_label(link: Mapping[str, Any], entries: Iterable[Mapping[str, Any]]) -> str | None:
    """The edge's second line: the fastest measured transfer that starts or ends at the link's downstream node
    (the device's own link), e.g. 'measured h2d pinned 24.6 GB/s (median)'; None when none was measured there.
    A transfer that only passes through (a switch's uplink) is listed in the tooltip, not on the edge."""
    ends = [e for e in measured_for(link, entries) if link.get("b") in (e.get("src"), e.get("dst"))]
    if not ends:
        return None
    best = max(ends, key=lambda e: float(e["median_gbs"]))
    how = " ".join(str(x) for x in (best.get("kind"), best.get("variant")) if x)
    return f"measured {best['median_gbs']:.1f} GB/s ({how}, median)"


def node_lines(node: Mapping[str, Any]) -> list[str]:
    """What a node's box says: its label, then the figures that matter for its kind, each with its unit."""
    attrs, kind = node.get("attrs") or {}, node.get("kind")
    lines = [str(node.get("label") or node.get("id"))]
    if kind == "numa":
        memory = attrs.get("memory_bytes")
        lines.append(f"{memory / 2**30:.0f} GiB memory" if isinstance(memory, (int, float)) else
                     "memory not known")
        cores, threads = attrs.get("cores"), attrs.get("threads")
        if cores or threads:
            lines.append(f"{cores or '?'} cores / {threads or '?'} threads" + (f" · CPUs {attrs['cpus']}"
                                                                               if attrs.get("cpus") else ""))
        l3 = (attrs.get("caches") or {}).get("L3")
        if isinstance(l3, (int, float)):
            lines.append(f"L3 {l3 / 2**20:.0f} MiB")
    elif kind == "package":
        if attrs.get("model"):
            lines.append(str(attrs["model"]))
        if attrs.get("cores") or attrs.get("threads"):
            lines.append(f"{attrs.get('cores') or '?'} cores / {attrs.get('threads') or '?'} threads")
    elif kind in ("gpu", "accelerator", "nvme", "nic", "pcie-device"):
        second = {"gpu": attrs.get("name"), "accelerator": attrs.get("name"),
                  "nvme": attrs.get("model") or attrs.get("block"),
                  "nic": attrs.get("ifname"),
                  "pcie-device": " · ".join([str(attrs.get("vendor_name") or attrs.get("vendor") or "?"),
                                             *(f"block {b}" for b in attrs.get("blocks") or [])]),
                  }.get(kind) or attrs.get("vendor")
        if second and str(second) != lines[0]:
            lines.append(str(second))
        if kind == "nic":
            speed = attrs.get("speed_mbps")
            lines.append(f"{speed / 1000:g} Gb/s" if isinstance(speed, (int, float)) else "speed not reported")
        numa = attrs.get("numa_node")
        lines.append(f"NUMA {numa}" if numa is not None else "NUMA not known")
    elif kind == "machine" and attrs.get("cpu_model"):
        lines.append(str(attrs["cpu_model"]))
    elif attrs.get("bdf"):
        lines.append(str(attrs["bdf"]))
    return lines


def attribute_rows(item: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, value) rows for the side panel, nested dicts flattened ('caches.L3'), sizes kept as given."""
    rows: list[tuple[str, str]] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), inner)
        else:
            rows.append((prefix, "—" if value is None else str(value)))

    walk("", item)
    return rows


def gpu_matrix_rows(matrix: Mapping[str, Any] | None, node: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A GPU's row of the nvidia-smi-style matrix as (to GPUn, level) rows: X, NV# (NVLinks), PIX, PXB, PHB, NODE,
    SYS — how its traffic to each other GPU travels. Matched by the GPU's index, else by its label."""
    if not matrix or node.get("kind") != "gpu":
        return []
    gpus, table = list(matrix.get("gpus") or []), list(matrix.get("rows") or [])
    index = (node.get("attrs") or {}).get("index")
    if not isinstance(index, int) or not 0 <= index < len(table):
        label = str(node.get("label") or "")
        index = next((i for i, name in enumerate(gpus) if label and str(name).split()[0] == label.split()[0]), None)
    if index is None or index >= len(table):
        return []
    return [(f"topo -m → {str(gpus[j]).split()[0] if j < len(gpus) else j}", str(cell))
            for j, cell in enumerate(table[index]) if j != index]
