"""The PCIe tree from sysfs: host bridges, root ports, switches, bridges and functions, with each link's speed.

/sys/bus/pci/devices/<bdf> links into /sys/devices/pci<domain>:<bus>/.../<bdf>; the resolved path is the parent chain
(lstopo reads the same). Roles follow the tree: a bridge right under a host bridge is a root port, a bridge whose
children are bridges is a switch's upstream port (its children are downstream ports), other bridges are bridges.
A link's speed and width are read from the function below it (the endpoint's or upstream port's end of the wire);
its maximum is the lower of the two ends' maxima, since a Gen4 card in a Gen3 slot can only ever train to Gen3.
"""

from __future__ import annotations

import re
from typing import Any

from engines.topology.sysfs import Tree

PCI_DIR = "sys/bus/pci/devices"
BDF = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
ROOT_DIR = re.compile(r"^pci([0-9a-f]{4,8}:[0-9a-f]{2})$")

# PCIe generation by GT/s: encoding efficiency (payload bits per line bit).
ENCODING = {2.5: (1, 8 / 10, "8b/10b"), 5.0: (2, 8 / 10, "8b/10b"), 8.0: (3, 128 / 130, "128b/130b"),
            16.0: (4, 128 / 130, "128b/130b"), 32.0: (5, 128 / 130, "128b/130b"),
            64.0: (6, 242 / 256, "1b/1b FLIT (PAM4): 242 of each 256-byte FLIT carry data, the rest CRC and FEC")}


def parse_speed(text: str | None) -> float | None:
    """'16.0 GT/s PCIe' / '8 GT/s' / '2.5 GT/s' → GT/s; 'Unknown' or missing → None."""
    match = re.match(r"^\s*([\d.]+)\s*GT/s", text or "")
    return float(match.group(1)) if match else None


def parse_width(text: str | None) -> int | None:
    """'16' / 'x16' → 16; 0 (link down) and 255 (the register's 'unknown') → None."""
    match = re.match(r"^\s*x?(\d+)\s*$", text or "")
    if not match:
        return None
    width = int(match.group(1))
    return width if 0 < width <= 32 else None


def gbs(speed_gts: float | None, width: int | None) -> float | None:
    """Per-direction payload GB/s of a PCIe link: GT/s × lanes × encoding / 8 (no TLP/DLLP overhead counted)."""
    if speed_gts is None or width is None:
        return None
    encoding = ENCODING.get(speed_gts, (None, 128 / 130 if speed_gts > 5 else 0.8, ""))[1]
    return round(speed_gts * width * encoding / 8, 3)


def generation(speed_gts: float | None) -> int | None:
    return ENCODING.get(speed_gts, (None,))[0] if speed_gts is not None else None


def read_function(tree: Tree, bdf: str) -> dict[str, Any]:
    """One function's sysfs facts: real path, class, ids, numa_node, driver, link speed/width (current, max)."""
    rel = f"{PCI_DIR}/{bdf}"
    real = tree.real(rel)
    cls = tree.read_int(f"{rel}/class", 16)
    numa = tree.read_int(f"{rel}/numa_node")
    return {
        "bdf": bdf, "real": real, "class": cls,
        "vendor": tree.read(f"{rel}/vendor"), "device": tree.read(f"{rel}/device"),
        "numa_node": numa if numa is not None and numa >= 0 else None,
        "numa_raw": numa,
        "driver": tree.link_name(f"{rel}/driver"),
        "current": {"speed_gts": parse_speed(tree.read(f"{rel}/current_link_speed")),
                    "width": parse_width(tree.read(f"{rel}/current_link_width"))},
        "max": {"speed_gts": parse_speed(tree.read(f"{rel}/max_link_speed")),
                "width": parse_width(tree.read(f"{rel}/max_link_width"))},
    }


def read_current(tree: Tree, bdf: str) -> dict[str, Any]:
    """Only the current speed and width (what --check-links re-reads while a load runs)."""
    rel = f"{PCI_DIR}/{bdf}"
    return {"speed_gts": parse_speed(tree.read(f"{rel}/current_link_speed")),
            "width": parse_width(tree.read(f"{rel}/current_link_width"))}


def read_functions(tree: Tree) -> tuple[dict[str, dict[str, Any]], str | None]:
    """{bdf: facts} with "parent" (a bdf or a host bridge id) set; and why the PCI bus is unreadable, if it is."""
    names = [n for n in tree.listdir(PCI_DIR) if BDF.match(n)]
    if not names:
        return {}, f"no PCI functions under {tree.root.rstrip('/')}/{PCI_DIR} (a container without /sys/bus/pci, " \
                   "or a machine without PCI)"
    functions = {bdf: read_function(tree, bdf) for bdf in names}
    for _bdf, fn in functions.items():
        parts = fn["real"].split("/")
        parent = None
        for part in reversed(parts[:-1]):
            if BDF.match(part) and part in functions:
                parent = part
                break
            root = ROOT_DIR.match(part)
            if root:
                parent = f"hostbridge:{root.group(1)}"
                break
        fn["parent"] = parent or "hostbridge:unknown"
    return functions, None


def is_bridge(fn: dict[str, Any]) -> bool:
    return fn["class"] is not None and fn["class"] >> 8 == 0x0604


def roles(functions: dict[str, dict[str, Any]]) -> dict[str, str]:
    """{bdf: node kind} for bridges and ports: pcie-root-port, pcie-switch (upstream port), pcie-bridge."""
    children: dict[str, list[str]] = {}
    for bdf, fn in functions.items():
        children.setdefault(fn["parent"], []).append(bdf)
    out: dict[str, str] = {}
    for bdf, fn in functions.items():
        if not is_bridge(fn):
            continue
        kids = children.get(bdf, [])
        if fn["parent"].startswith("hostbridge:"):
            out[bdf] = "pcie-root-port"
        elif kids and all(is_bridge(functions[k]) for k in kids):
            out[bdf] = "pcie-switch"
        else:
            out[bdf] = "pcie-bridge"
    return out


def link_for(fn: dict[str, Any], parent: dict[str, Any] | None, parent_kind: str) -> dict[str, Any]:
    """The contract's link dict for the wire above `fn` (state is set by links_state.classify)."""
    link = {"id": f"pcie:{fn['bdf']}", "kind": "pcie", "a": node_id_of(fn["parent"]), "b": f"pci:{fn['bdf']}",
            "current": None, "max": None, "theoretical_gbs": None, "current_gbs": None, "state": "unknown",
            "note": ""}
    if parent_kind == "pcie-switch" and is_bridge(fn):
        link["note"] = "inside the PCIe switch (upstream to downstream port): no physical link to read"
        return link
    if parent_kind == "host-bridge" and is_bridge(fn):
        link["note"] = ("inside the root complex (host bridge to root port); the port's own speed is the link below "
                        "it, read from the device there")
        return link
    cur, top = dict(fn["current"]), dict(fn["max"])
    if cur["speed_gts"] is None and top["speed_gts"] is None:
        link["note"] = ("no link attributes in sysfs (a root-complex integrated function or a virtual PCI bus, as in "
                        "a VM)")
        return link
    notes = []
    if parent is not None:
        for key in ("speed_gts", "width"):
            theirs = parent["max"][key]
            if theirs is not None and top[key] is not None and theirs < top[key]:
                notes.append(f"max {key.replace('_gts', '')} limited by the upstream port ({theirs:g} < {top[key]:g})")
                top[key] = theirs
    link["current"], link["max"] = cur, top
    link["theoretical_gbs"] = gbs(top["speed_gts"], top["width"])
    link["current_gbs"] = gbs(cur["speed_gts"], cur["width"])
    gen = generation(top["speed_gts"])
    if gen is not None:
        notes.append(f"Gen{gen} {ENCODING[top['speed_gts']][2]}: GT/s × lanes × encoding / 8 per direction")
    link["note"] = "; ".join(notes)
    return link


def node_id_of(parent: str) -> str:
    return parent if parent.startswith("hostbridge:") else f"pci:{parent}"


def describe(speed_width: dict[str, Any] | None) -> str:
    """{'speed_gts': 16.0, 'width': 16} → 'x16 16.0 GT/s (Gen4)'."""
    if not speed_width or (speed_width.get("speed_gts") is None and speed_width.get("width") is None):
        return "?"
    speed, width = speed_width.get("speed_gts"), speed_width.get("width")
    gen = generation(speed)
    return (f"x{width if width is not None else '?'} "
            f"{f'{speed:.1f} GT/s' if speed is not None else '? GT/s'}{f' (Gen{gen})' if gen else ''}")
