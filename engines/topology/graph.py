"""discover(): the machine as one graph — CPU side, PCIe tree, devices, NVML facts — in the contract's plain dict.

Qt-free and torch-free (the console calls it on a worker thread); it only reads files and, when present, NVML.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from engines.topology import cpu, devices, links_state, pcie
from engines.topology import nvml as nvml_mod
from engines.topology.sysfs import Tree

SCHEMA = 1
PCIE_LEVEL = {"pcie-switch": "PIX", "pcie-bridge": "PIX", "pcie-root-port": "PXB", "host-bridge": "PHB",
              "numa": "NODE", "package": "SYS", "machine": "SYS"}


def discover(root: str = "/", *, nvml: Any = nvml_mod._UNSET, tree: Tree | None = None) -> dict[str, Any]:
    """The topology graph of the machine whose sys/ and proc/ are under `root` ("/" = this machine).

    `nvml`: a pynvml-like module, None to skip NVML, or leave it out to import pynvml when installed.
    """
    tree = tree or Tree(root)
    live = os.path.abspath(root) == "/"
    host = (socket.gethostname() if live else None) or tree.read("proc/sys/kernel/hostname") or \
        os.path.basename(os.path.abspath(root))
    not_available: dict[str, str] = {}
    nodes, links, cpu_missing, numa_ids = cpu.cpu_graph(tree)
    not_available.update(cpu_missing)
    model = cpu.cpu_model(tree)
    machine = {"id": "machine", "kind": "machine", "label": f"Machine {host}", "parent": None,
               "attrs": {"host": host, "cpu_model": model}}
    nodes.insert(0, machine)
    if model is None:
        not_available["cpu_model"] = "no 'model name' line in /proc/cpuinfo"

    functions, pci_why = pcie.read_functions(tree)
    if pci_why:
        not_available["pcie"] = pci_why
    pci_nodes, pci_links = _pci_graph(tree, functions, numa_ids)
    nodes.extend(pci_nodes)
    links.extend(pci_links)

    if nvml is nvml_mod._UNSET and os.path.realpath(root) != "/":
        module, why = None, f"{root} is a captured tree: this machine's NVML does not describe it"
    else:
        module, why = nvml_mod.load_pynvml(nvml)
    facts = None
    if module is not None:
        facts, why = nvml_mod.read_nvml(module)
    if why:
        not_available["nvml"] = why
    gpu_matrix = _apply_nvml(nodes, links, facts, not_available)
    for link in links:
        if link["kind"] == "pcie" and link["current"] is not None:
            links_state.classify(link)
    return {"schema": SCHEMA, "host": host, "source": "live" if live else f"fixture:{os.path.basename(tree.root)}",
            "nodes": nodes, "links": links, "gpu_matrix": gpu_matrix, "not_available": not_available}


def _pci_graph(tree: Tree, functions: dict[str, dict], numa_ids: dict[int, str]) -> tuple[list[dict], list[dict]]:
    roles = pcie.roles(functions)
    nvme = devices.nvme_by_bdf(tree)
    nics = devices.nics_by_bdf(tree)
    blocks = devices.blocks_by_bdf(tree)
    nodes: list[dict] = []
    links: list[dict] = []
    bridges: dict[str, list[str]] = {}
    for bdf, fn in sorted(functions.items()):
        if fn["parent"].startswith("hostbridge:"):
            bridges.setdefault(fn["parent"], []).append(bdf)
    for bridge_id, members in sorted(bridges.items()):
        numas = sorted({functions[b]["numa_node"] for b in members if functions[b]["numa_node"] is not None})
        numa = numas[0] if len(numas) == 1 else None
        parent = numa_ids.get(numa, "machine") if numa is not None else "machine"
        if numa is None and len(numas) > 1:
            note = f"functions below report NUMA nodes {numas}"
        elif numa is None:
            note = "the functions' numa_node is -1 (firmware gives no locality): placed under the machine, as lstopo does"
        else:
            note = ""
        nodes.append({"id": bridge_id, "kind": "host-bridge", "label": f"HostBridge {bridge_id.split(':', 1)[1]}",
                      "parent": parent, "attrs": {"numa_node": numa, "note": note}})
    for bdf, fn in sorted(functions.items()):
        kind = roles.get(bdf)
        extra: dict[str, Any] = {}
        if kind is None:
            kind, label, extra = devices.classify(fn, nvme, nics)
            if kind == "pcie-device" and blocks.get(bdf):
                extra["blocks"] = sorted(blocks[bdf])
                label += f" (block {', '.join(extra['blocks'])})"
        else:
            label = {"pcie-root-port": "PCIe root port", "pcie-switch": "PCIe switch (upstream port)",
                     "pcie-bridge": "PCIe bridge"}[kind] + f" {bdf}"
            if kind == "pcie-bridge" and roles.get(fn["parent"]) == "pcie-switch":
                extra["port"] = "downstream"
                label = f"PCIe switch downstream port {bdf}"
        note = ""
        if fn["numa_node"] is None:
            note = (f"numa_node is {fn['numa_raw']} in sysfs (no locality reported by the firmware)"
                    if fn["numa_raw"] is not None else "no numa_node file in sysfs")
        attrs = {"bdf": bdf, "vendor": fn["vendor"], "device": fn["device"],
                 "class": f"0x{fn['class']:06x}" if fn["class"] is not None else None,
                 "driver": fn["driver"], "numa_node": fn["numa_node"], "note": note, **extra}
        parent_id = pcie.node_id_of(fn["parent"])
        nodes.append({"id": f"pci:{bdf}", "kind": kind, "label": label, "parent": parent_id, "attrs": attrs})
        parent_fn = functions.get(fn["parent"])
        links.append(pcie.link_for(fn, parent_fn, roles.get(fn["parent"], "host-bridge")))
    return nodes, links


def _apply_nvml(nodes: list[dict], links: list[dict], facts: dict | None, not_available: dict) -> dict | None:
    """Name and index the GPUs, add NVLink links, and build the matrix (NVML's, else from the PCIe tree)."""
    by_id = {n["id"]: n for n in nodes}
    gpus = [n for n in nodes if n["kind"] == "gpu"]
    if facts:
        for info in facts["gpus"]:
            node = by_id.get(f"pci:{info['bdf']}")
            if node is None:
                node = {"id": f"pci:{info['bdf']}", "kind": "gpu", "label": info["name"], "parent": "machine",
                        "attrs": {"bdf": info["bdf"], "vendor": "0x10de", "driver": None, "numa_node": None,
                                  "note": "NVML reports this GPU but sysfs does not show its PCI function"}}
                nodes.append(node)
                by_id[node["id"]] = node
            node["kind"] = "gpu"
            node["label"] = f"GPU{info['index']} {info['name']}"
            node["attrs"].update({"name": info["name"], "index": info["index"]})
        for (a, b), entry in sorted(facts["nvlinks"].items()):
            generation, per = nvml_mod.nvlink_rate(entry["version"], entry.get("gpu_name", ""))
            count = entry["links"]
            version = (f"NVLink {generation}" if generation else
                       f"NVLink (version code {entry['version']} unknown)" if entry["version"] is not None else
                       "NVLink (version not reported)")
            remote = by_id.get(f"pci:{b}")
            if not entry.get("to_gpu", True):
                if remote is None:
                    remote = {"id": f"pci:{b}", "kind": "pcie-device", "label": f"NVSwitch {b}", "parent": "machine",
                              "attrs": {"bdf": b, "vendor": "0x10de", "driver": None, "numa_node": None,
                                        "note": "an NVLink peer NVML reports that sysfs does not show on the PCI bus"}}
                    nodes.append(remote)
                    by_id[remote["id"]] = remote
                remote["label"] = f"NVSwitch {b}"
                remote["attrs"]["nvswitch"] = True
            links.append({"id": f"nvlink:pci:{a}-pci:{b}", "kind": "nvlink", "a": f"pci:{a}", "b": f"pci:{b}",
                          "current": {"speed_gts": None, "width": count}, "max": {"speed_gts": None, "width": count},
                          "theoretical_gbs": round(per * count, 3) if per else None,
                          "current_gbs": round(per * count, 3) if per else None, "state": "unknown",
                          "note": f"{count} active {version} link(s) from NVML (width = link count); "
                                  f"{f'{per:g} GB/s per link per direction from the version table' if per else 'rate unknown'}"
                                  "; NVML reports a link active or not, no trained speed to compare"})
        if facts["notes"]:
            not_available["nvml_partial"] = "; ".join(sorted(set(facts["notes"])))
    gpus = sorted((n for n in nodes if n["kind"] == "gpu"),
                  key=lambda n: (n["attrs"].get("index") is None, n["attrs"].get("index") or 0, n["id"]))
    if len(gpus) < 2:
        if not gpus:
            not_available["gpu_matrix"] = "no GPU on the PCI bus"
        return None if not gpus else {"gpus": [g["label"] for g in gpus], "rows": [["X"]], "source": "single GPU"}
    counts: dict[tuple[str, str], int] = {}
    via_switch: dict[str, int] = {}
    for link in links:
        if link["kind"] != "nvlink":
            continue
        if by_id.get(link["b"], {}).get("kind") == "gpu":
            counts[(link["a"], link["b"])] = counts[(link["b"], link["a"])] = link["current"]["width"]
        else:  # GPU → NVSwitch: every GPU on the fabric reaches every other over its switch links (NV18 on HGX H100)
            via_switch[link["a"]] = via_switch.get(link["a"], 0) + link["current"]["width"]
    for gi in gpus:
        for gj in gpus:
            if gi is not gj and gi["id"] in via_switch and gj["id"] in via_switch:
                counts.setdefault((gi["id"], gj["id"]), min(via_switch[gi["id"]], via_switch[gj["id"]]))
    rows = []
    from_nvml = bool(facts and facts["levels"])
    for gi in gpus:
        row = []
        for gj in gpus:
            if gi is gj:
                row.append("X")
            elif counts.get((gi["id"], gj["id"])):
                row.append(f"NV{counts[(gi['id'], gj['id'])]}")
            elif from_nvml and gi["attrs"].get("index") is not None and gj["attrs"].get("index") is not None:
                row.append(facts["levels"].get((gi["attrs"]["index"], gj["attrs"]["index"]), "?"))
            else:
                row.append(_pcie_level(by_id, gi["id"], gj["id"]))
        rows.append(row)
    source = "NVML (nvmlDeviceGetTopologyCommonAncestor, NvLink state)" if from_nvml else \
        "computed from the sysfs PCIe tree (the levels nvidia-smi topo -m defines)"
    return {"gpus": [g["label"] for g in gpus], "rows": rows, "source": source}


def _pcie_level(by_id: dict[str, dict], a: str, b: str) -> str:
    """PIX / PXB / PHB / NODE / SYS for two devices from their common ancestor in the graph."""
    def chain(node_id: str) -> list[str]:
        out = []
        while node_id:
            out.append(node_id)
            node_id = by_id[node_id]["parent"] if node_id in by_id else None
        return out

    ca, cb = chain(a), chain(b)
    common = next((n for n in ca if n in cb), "machine")
    kind = by_id.get(common, {"kind": "machine"})["kind"]
    if kind in ("pcie-switch", "pcie-bridge"):
        below = ca[:ca.index(common)] + cb[:cb.index(common)]
        switches = sum(1 for n in below if by_id[n]["kind"] == "pcie-switch")
        return "PIX" if switches == 0 else "PXB"
    return PCIE_LEVEL.get(kind, "SYS")
