"""What each PCI function is: a GPU, an NVMe drive, a NIC or another device, with the attrs the graph carries.

NVMe drives are found from /sys/class/nvme/<ctrl>/device (model, namespaces = block names), NICs from
/sys/class/net/<if>/device (speed in Mb/s, operstate), GPUs by PCI class 0x03xx (NVIDIA is vendor 0x10de),
accelerators (NPUs, Gaudi-style cards) by class 0x12 ("processing accelerators"). Any other function is labelled
with its PCI base class's name, as lspci names it.
"""

from __future__ import annotations

import re
from typing import Any

from engines.topology.sysfs import Tree

VENDORS = {"0x10de": "NVIDIA", "0x1002": "AMD", "0x8086": "Intel", "0x15b3": "Mellanox", "0x144d": "Samsung",
           "0x1af4": "Red Hat (virtio)", "0x14e4": "Broadcom", "0x1022": "AMD", "0x1d0f": "Amazon",
           "0x1da3": "Habana", "0x1e52": "Tenstorrent", "0x1ed5": "Graphcore"}
# PCI base classes as lspci names them (pci.ids "C" lines); the kinds above are found first
CLASS_NAMES = {0x00: "unclassified device", 0x01: "mass storage controller", 0x02: "network controller",
               0x03: "display controller", 0x04: "multimedia controller", 0x05: "memory controller",
               0x06: "bridge", 0x07: "communication controller", 0x08: "system peripheral", 0x0C: "serial bus controller",
               0x0D: "wireless controller", 0x10: "encryption controller", 0x11: "signal processing controller",
               0x12: "processing accelerator", 0x13: "non-essential instrumentation", 0xFF: "unassigned class"}


def nvme_by_bdf(tree: Tree) -> dict[str, dict[str, Any]]:
    """{bdf: {"controller", "block", "blocks", "model"}} from /sys/class/nvme."""
    out: dict[str, dict[str, Any]] = {}
    for ctrl in tree.listdir("sys/class/nvme"):
        base = f"sys/class/nvme/{ctrl}"
        if not tree.exists(f"{base}/device"):
            continue
        bdf = tree.real(f"{base}/device").rsplit("/", 1)[-1]
        blocks = [n for n in tree.listdir(base) if re.fullmatch(r"nvme\d+(c\d+)?n\d+", n)]
        out.setdefault(bdf, {"controller": ctrl, "blocks": [], "model": (tree.read(f"{base}/model") or None)})
        out[bdf]["blocks"].extend(blocks)
    for info in out.values():
        info["blocks"] = sorted(set(info["blocks"]))
        info["block"] = info["blocks"][0] if info["blocks"] else None
    return out


def nics_by_bdf(tree: Tree) -> dict[str, list[dict[str, Any]]]:
    """{bdf: [{"ifname", "speed_mbps", "operstate"}]} from /sys/class/net (interfaces without a PCI device skipped)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for ifname in tree.listdir("sys/class/net"):
        base = f"sys/class/net/{ifname}"
        if not tree.exists(f"{base}/device"):
            continue
        real = tree.real(f"{base}/device")
        parts = real.split("/")
        bdf = next((p for p in reversed(parts) if re.fullmatch(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", p)),
                   None)
        if bdf is None:
            continue
        state = tree.read(f"{base}/operstate")
        speed = tree.read_int(f"{base}/speed")
        out.setdefault(bdf, []).append({"ifname": ifname, "operstate": state,
                                        "speed_mbps": speed if speed is not None and speed > 0 else None})
    return out


def blocks_by_bdf(tree: Tree) -> dict[str, list[str]]:
    """{bdf: [whole-disk block names]} from /sys/class/block (SATA, virtio, SCSI disks; partitions skipped)."""
    out: dict[str, list[str]] = {}
    for name in tree.listdir("sys/class/block"):
        base = f"sys/class/block/{name}"
        if tree.exists(f"{base}/partition") or not tree.exists(f"{base}/device"):
            continue
        parts = tree.real(f"{base}/device").split("/")
        bdf = next((p for p in reversed(parts) if re.fullmatch(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", p)),
                   None)
        if bdf is not None:
            out.setdefault(bdf, []).append(name)
    return out


def classify(fn: dict[str, Any], nvme: dict[str, dict], nics: dict[str, list]) -> tuple[str, str, dict[str, Any]]:
    """(kind, label, extra attrs) of one non-bridge function."""
    cls = fn["class"] or 0
    vendor = VENDORS.get(fn["vendor"] or "", fn["vendor"] or "?")
    ids = f"[{(fn['vendor'] or '?')[2:]}:{(fn['device'] or '?')[2:]}]"
    if fn["bdf"] in nvme or cls >> 8 == 0x0108:
        info = nvme.get(fn["bdf"], {})
        attrs = {"block": info.get("block"), "blocks": info.get("blocks", []), "model": info.get("model"),
                 "controller": info.get("controller")}
        return "nvme", f"NVMe {info.get('block') or fn['bdf']} {info.get('model') or vendor}".strip(), attrs
    if fn["bdf"] in nics or cls >> 16 == 0x02:
        ifaces = nics.get(fn["bdf"], [])
        first = ifaces[0] if ifaces else {}
        attrs = {"ifname": first.get("ifname"), "ifnames": [i["ifname"] for i in ifaces],
                 "speed_mbps": first.get("speed_mbps"), "operstate": first.get("operstate")}
        speed = f" {first['speed_mbps'] / 1000:g} Gb/s" if first.get("speed_mbps") else ""
        return "nic", f"NIC {first.get('ifname') or fn['bdf']}{speed}", attrs
    if cls >> 16 == 0x03:
        name = f"{vendor} GPU {ids}"
        return "gpu", name, {"name": name, "index": None}
    if cls >> 16 == 0x12:
        name = f"{vendor} accelerator {ids}"
        return "accelerator", name, {"name": name}
    named = CLASS_NAMES.get(cls >> 16, f"class {cls >> 8:04x}")
    return "pcie-device", f"{named[0].upper()}{named[1:]} {ids}", {"vendor_name": vendor}
