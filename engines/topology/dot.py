"""The graph as Graphviz DOT (`labconsole topology --dot | dot -Tsvg`): containment as edges, links labelled.

Flagged links (low under load) are red; links below max at idle are dashed, so a reader sees which to re-check.
"""

from __future__ import annotations

from typing import Any

from engines.topology.text import link_text, node_text

SHAPES = {"machine": "box3d", "package": "box", "numa": "box", "host-bridge": "trapezium", "pcie-root-port": "house",
          "pcie-switch": "invhouse", "pcie-bridge": "house", "gpu": "box", "nvme": "cylinder", "nic": "cds",
          "cluster-node": "box3d"}


def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(topology: dict[str, Any]) -> str:
    """A `graph` (undirected: a link carries both directions) with one node per topology node."""
    lines = [f"graph {_quote('topology ' + str(topology.get('host')))} {{", "  rankdir=TB;",
             "  node [fontname=\"Helvetica\", fontsize=10];", "  edge [fontname=\"Helvetica\", fontsize=9];"]
    linked = {link["b"] for link in topology.get("links", []) if link["kind"] in ("pcie", "memory")}
    for node in topology.get("nodes", []):
        lines.append(f"  {_quote(node['id'])} [label={_quote(node_text(node))}, "
                     f"shape={SHAPES.get(node['kind'], 'ellipse')}];")
    for node in topology.get("nodes", []):
        if node.get("parent") and node["id"] not in linked:
            lines.append(f"  {_quote(node['parent'])} -- {_quote(node['id'])} [color=gray];")
    for link in topology.get("links", []):
        style = []
        if link["state"] == "low-under-load":
            style.append("color=red, penwidth=2")
        elif link["state"] == "below-max-idle":
            style.append("style=dashed")
        if link["kind"] == "nvlink":
            style.append("color=green4, penwidth=2")
        label = "" if link["kind"] == "memory" else link_text(link)
        attrs = ", ".join([f"label={_quote(label)}"] + style)
        lines.append(f"  {_quote(link['a'])} -- {_quote(link['b'])} [{attrs}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
