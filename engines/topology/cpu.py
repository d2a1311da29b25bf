"""The CPU side of the graph: packages, NUMA nodes with their memory, cores, SMT and caches, from sysfs.

Sources (what lstopo reads too): cpuN/topology/{physical_package_id,core_id,thread_siblings_list},
cpuN/cache/indexN/{level,type,size,shared_cpu_list}, node/nodeN/{cpulist,meminfo}, /proc/cpuinfo's model name.
A machine without node/ (a kernel built without NUMA) is one node holding every CPU, and says so.
"""

from __future__ import annotations

import re
from typing import Any

from engines.topology.sysfs import Tree, format_cpulist, parse_cpulist, parse_size

CPU_DIR = "sys/devices/system/cpu"
NODE_DIR = "sys/devices/system/node"


def read_cpus(tree: Tree) -> dict[int, dict[str, Any]]:
    """{cpu: {"package", "core", "siblings", "caches": [(name, size, shared cpus)]}} for each online CPU."""
    online = parse_cpulist(tree.read(f"{CPU_DIR}/online")) if tree.exists(f"{CPU_DIR}/online") else None
    cpus: dict[int, dict[str, Any]] = {}
    for cpu, name in _numbered(tree, CPU_DIR, "cpu"):
        if online is not None and cpu not in online:
            continue
        base = f"{CPU_DIR}/{name}"
        package = tree.read_int(f"{base}/topology/physical_package_id")
        core = tree.read_int(f"{base}/topology/core_id")
        siblings = parse_cpulist(tree.read(f"{base}/topology/thread_siblings_list")) or [cpu]
        caches = []
        for index in tree.listdir(f"{base}/cache"):
            if not index.startswith("index"):
                continue
            level = tree.read_int(f"{base}/cache/{index}/level")
            kind = tree.read(f"{base}/cache/{index}/type") or ""
            size = parse_size(tree.read(f"{base}/cache/{index}/size"))
            shared = tuple(parse_cpulist(tree.read(f"{base}/cache/{index}/shared_cpu_list")) or [cpu])
            if level is None or kind == "":
                continue
            suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
            caches.append((f"L{level}{suffix}", size, shared))
        cpus[cpu] = {"package": 0 if package is None or package < 0 else package,
                     "core": cpu if core is None else core, "siblings": siblings, "caches": caches}
    return cpus


def read_numa(tree: Tree, cpus: dict[int, dict[str, Any]]) -> tuple[dict[int, dict[str, Any]], str | None]:
    """{node: {"cpus": [...], "memory_bytes": int|None}}, and why NUMA facts are missing (None when present)."""
    nodes: dict[int, dict[str, Any]] = {}
    for node, name in _numbered(tree, NODE_DIR, "node"):
        memory = _mem_total(tree.read(f"{NODE_DIR}/{name}/meminfo"))
        node_cpus = [c for c in parse_cpulist(tree.read(f"{NODE_DIR}/{name}/cpulist")) if c in cpus]
        distances = [int(d) for d in (tree.read(f"{NODE_DIR}/{name}/distance") or "").split() if d.isdigit()]
        nodes[node] = {"cpus": node_cpus, "memory_bytes": memory, "distances": distances}
    if nodes:
        return nodes, None
    return {0: {"cpus": sorted(cpus), "memory_bytes": _mem_total(tree.read("proc/meminfo")), "distances": []}}, (
        f"no {NODE_DIR}/node* (a kernel without NUMA support): one node with every CPU, memory from /proc/meminfo")


def cpu_model(tree: Tree) -> str | None:
    """The first 'model name' (x86) or 'Model'/'cpu model' line of /proc/cpuinfo."""
    for line in (tree.read("proc/cpuinfo") or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("model name", "cpu model", "model") and value.strip() and \
                not value.strip().isdigit():
            return value.strip()
    return None


def cpu_graph(tree: Tree) -> tuple[list[dict], list[dict], dict[str, str], dict[int, str]]:
    """Nodes (machine children: packages, NUMA nodes), memory links, not_available, and {numa: node id}."""
    cpus = read_cpus(tree)
    numa, numa_why = read_numa(tree, cpus)
    model = cpu_model(tree)
    not_available: dict[str, str] = {}
    if not cpus:
        not_available["cpus"] = f"no {CPU_DIR}/cpuN directories under {tree.root}"
    if numa_why:
        not_available["numa"] = numa_why
    nodes: list[dict] = []
    links: list[dict] = []
    for package in sorted({c["package"] for c in cpus.values()}):
        members = [n for n, c in cpus.items() if c["package"] == package]
        cores = {cpus[n]["core"] for n in members}
        nodes.append({"id": f"package{package}", "kind": "package", "label": f"Package {package}", "parent": "machine",
                      "attrs": {"os_index": package, "model": model, "cores": len(cores), "threads": len(members),
                                "cpus": format_cpulist(members)}})
    numa_ids: dict[int, str] = {}
    for node, info in sorted(numa.items()):
        members = info["cpus"]
        packages = sorted({cpus[n]["package"] for n in members})
        parent = f"package{packages[0]}" if len(packages) == 1 else "machine"
        cores = {(cpus[n]["package"], cpus[n]["core"]) for n in members}
        smt = max((len(cpus[n]["siblings"]) for n in members), default=0)
        caches: dict[str, int | None] = {}
        instances: dict[str, int] = {}
        seen: dict[str, set] = {}
        for n in members:
            for name, size, shared in cpus[n]["caches"]:
                caches.setdefault(name, size)
                seen.setdefault(name, set()).add(shared)
        for name, groups in seen.items():
            instances[name] = len(groups)
        node_id = f"numa{node}"
        numa_ids[node] = node_id
        note = "" if members else "memory-only node (no CPUs: CXL or device memory)"
        if len(packages) > 1:
            note = f"spans packages {packages}"
        nodes.append({"id": node_id, "kind": "numa", "label": f"NUMANode {node}", "parent": parent,
                      "attrs": {"os_index": node, "memory_bytes": info["memory_bytes"],
                                "cpus": format_cpulist(members),
                                "cores": len(cores), "threads": len(members), "smt": smt,
                                "caches": dict(sorted(caches.items())),
                                "cache_instances": dict(sorted(instances.items())),
                                "distances": info["distances"], "note": note}})
        links.append({"id": f"mem:{node_id}", "kind": "memory", "a": parent, "b": node_id, "current": None,
                      "max": None, "theoretical_gbs": None, "current_gbs": None, "state": "unknown",
                      "note": "memory bandwidth is measured by the bandwidth matrix (engines.topology.bandwidth), "
                              "not read from sysfs"})
    return nodes, links, not_available, numa_ids


def _numbered(tree: Tree, folder: str, prefix: str) -> list[tuple[int, str]]:
    """(N, name) for each `<prefix>N` entry of `folder` (cpu0, cpu1, ...; node0, ...), in listing order."""
    found = [(re.fullmatch(rf"{prefix}(\d+)", name), name) for name in tree.listdir(folder)]
    return [(int(match.group(1)), name) for match, name in found if match]


def _mem_total(meminfo: str | None) -> int | None:
    """Bytes of a meminfo file's MemTotal line (/proc/meminfo, or a NUMA node's), None without one."""
    found = re.search(r"MemTotal:\s+(\d+)\s*kB", meminfo or "")
    return int(found.group(1)) * 1024 if found else None
