"""The graph as an indented tree, like `lstopo-no-graphics`, with each link's speed, rate and flag beside its node."""

from __future__ import annotations

from typing import Any

from engines.topology.pcie import describe


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.4g} {unit}"
    return f"{n} B"


def link_text(link: dict[str, Any]) -> str:
    """'x16 16.0 GT/s (Gen4) of x16 16.0 GT/s (Gen4), 31.5 GB/s/dir, at-max' or the NVLink/unknown equivalent."""
    if link["kind"] == "nvlink":
        rate = f", {link['theoretical_gbs']:g} GB/s/dir" if link.get("theoretical_gbs") else ""
        return f"{link['current']['width']} NVLink link(s){rate}"
    if link.get("current") is None and link.get("max") is None:
        note = link.get("note") or ""
        if link["kind"] == "cluster":
            return "network between machines not measured"
        if note.startswith("inside the root complex"):
            return "root-complex internal (no wire)"
        if note.startswith("inside the PCIe switch"):
            return "switch internal (no wire)"
        return "no link attributes in sysfs"
    rate = f", {link['theoretical_gbs']:g} GB/s/dir max" if link.get("theoretical_gbs") is not None else ""
    now = f" (now {link['current_gbs']:g} GB/s)" if link.get("current_gbs") not in (None, link.get("theoretical_gbs")) \
        else ""
    flag = " FLAGGED" if link["state"] == "low-under-load" else ""
    return f"{describe(link.get('current'))} of {describe(link.get('max'))}{rate}{now}, {link['state']}{flag}"


def node_text(node: dict[str, Any]) -> str:
    a = node["attrs"]
    kind = node["kind"]
    if kind == "machine":
        return f"Machine {a.get('host')} ({a.get('cpu_model') or 'CPU model unknown'})"
    if kind == "package":
        return f"{node['label']} \"{a.get('model')}\": {a.get('cores')} cores, {a.get('threads')} threads"
    if kind == "numa":
        caches = ", ".join(f"{name} {_size(size)} x{a.get('cache_instances', {}).get(name, '?')}"
                           for name, size in (a.get("caches") or {}).items())
        return (f"{node['label']} ({_size(a.get('memory_bytes'))}) cpus {a.get('cpus') or 'none'}, "
                f"{a.get('cores')} cores, SMT {a.get('smt')}" + (f", {caches}" if caches else ""))
    extra = []
    if kind in ("gpu", "accelerator", "nvme", "nic", "pcie-device") or kind.startswith("pcie-"):
        if a.get("driver"):
            extra.append(f"driver {a['driver']}")
        if "numa_node" in a:
            extra.append(f"NUMA {a['numa_node'] if a['numa_node'] is not None else '?'}")
    if kind == "nic" and a.get("operstate"):
        extra.append(f"{a['operstate']}")
    return node["label"] + (f" [{', '.join(extra)}]" if extra else "")


def render_tree(topology: dict[str, Any]) -> list[str]:
    """One line per node, children indented two spaces; links into a node follow on its line after '—'."""
    nodes = topology.get("nodes", [])
    children: dict[str | None, list[dict]] = {}
    for node in nodes:
        children.setdefault(node.get("parent"), []).append(node)
    into = {link["b"]: link for link in topology.get("links", []) if link["kind"] == "pcie"}
    lines: list[str] = []
    ids = {n["id"] for n in nodes}

    def walk(node: dict, depth: int) -> None:
        text = node_text(node)
        if node["id"] in into:
            text += f" — {link_text(into[node['id']])}"
        lines.append("  " * depth + text)
        for child in children.get(node["id"], []):
            walk(child, depth + 1)

    for node in nodes:
        if node.get("parent") is None or node["parent"] not in ids:
            walk(node, 0)
    others = [link for link in topology.get("links", []) if link["kind"] in ("nvlink", "network", "cluster")]
    if others:
        labels = {n["id"]: n["label"] for n in nodes}
        lines.append("Links:")
        lines.extend(f"  {labels.get(link['a'], link['a'])} <-> {labels.get(link['b'], link['b'])}: "
                     f"{link_text(link)}" for link in others)
    matrix = topology.get("gpu_matrix")
    if matrix and len(matrix.get("gpus", [])) > 1:
        lines.append(f"GPU matrix ({matrix.get('source', '')}):")
        names = [f"GPU{i}" for i in range(len(matrix["gpus"]))]
        lines.append("        " + " ".join(f"{n:>5}" for n in names))
        for name, row in zip(names, matrix["rows"], strict=False):
            lines.append(f"  {name:<6}" + " ".join(f"{cell:>5}" for cell in row))
    flagged = [link for link in topology.get("links", []) if link["state"] == "low-under-load"]
    lines.append(f"{len(flagged)} link(s) flagged (below max under load)" + (": " + ", ".join(
        link["id"] for link in flagged) if flagged else ""))
    for what, why in (topology.get("not_available") or {}).items():
        lines.append(f"not available: {what}: {why}")
    return lines
