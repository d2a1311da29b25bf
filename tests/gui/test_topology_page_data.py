"""Fixture data of the contract's shapes for the Topology page's tests and screenshots (no tests here).

`eight_gpu_box()`: a dual-socket server with 4 PCIe switches and 8 GPUs behind them (2 per switch, an NVMe drive
and a NIC beside them), NVLink between every GPU pair — the layout of an HGX-class box as `nvidia-smi topo -m`
and lstopo describe it. One GPU link reads low at idle (amber), one stays low under load (flagged, red).
`card_links()`: a machine card's "links" block for it (section 2). `collectives_result()`: a stored collectives
result (section 3) with nccl-tests' busbw factors applied to invented times. All numbers are invented test
data shaped like real ones; nothing here is shown to a user except through the page's developer option
LABCONSOLE_TOPOLOGY_FILE, which says it is a file.

Run as a script to write the topology to a JSON file: `python tests/gui/test_topology_page_data.py OUT.json`.
"""

from __future__ import annotations

import json
import sys

GPU_BDFS = [f"0000:{bus:02x}:00.0" for bus in (0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb)]
FLAGGED_GPU = GPU_BDFS[5]
IDLE_GPU = GPU_BDFS[2]


def _pcie(child_bdf: str, upstream: str, state: str = "at-max", current=(16.0, 16), top=(16.0, 16),
          note: str = "") -> dict:
    gbs = {2.5: 0.25, 5.0: 0.5, 8.0: 0.985, 16.0: 1.969, 32.0: 3.938}

    def rate(side):
        return round(gbs[side[0]] * side[1], 1)

    return {"id": f"pcie:{child_bdf}", "kind": "pcie", "a": upstream, "b": f"pci:{child_bdf}",
            "current": {"speed_gts": current[0], "width": current[1]}, "max": {"speed_gts": top[0], "width": top[1]},
            "theoretical_gbs": rate(top), "current_gbs": rate(current), "state": state, "note": note}


def eight_gpu_box() -> dict:
    nodes = [{"id": "machine", "kind": "machine", "label": "hgx-test", "parent": None,
              "attrs": {"host": "hgx-test", "cpu_model": "Intel Xeon Platinum 8480+"}}]
    links = []
    for socket in (0, 1):
        nodes.append({"id": f"package{socket}", "kind": "package", "label": f"Package {socket}", "parent": "machine",
                      "attrs": {"model": "Intel Xeon Platinum 8480+", "cores": 56, "threads": 112}})
        nodes.append({"id": f"numa{socket}", "kind": "numa", "label": f"NUMA {socket}", "parent": f"package{socket}",
                      "attrs": {"memory_bytes": 1024 * 2**30, "cpus": f"{socket * 56}-{socket * 56 + 55}",
                                "cores": 56, "threads": 112, "smt": True,
                                "caches": {"L1d": 48 * 1024, "L2": 2 * 2**20, "L3": 105 * 2**20}}})
        links.append({"id": f"mem:numa{socket}", "kind": "memory", "a": f"package{socket}", "b": f"numa{socket}",
                      "current": None, "max": None, "theoretical_gbs": 307.2, "current_gbs": None,
                      "state": "unknown", "note": "8 channels DDR5-4800 (from the DIMMs' speed)"})
        nodes.append({"id": f"hostbridge{socket}", "kind": "host-bridge", "label": f"Host bridge {socket}",
                      "parent": f"numa{socket}", "attrs": {"bdf": f"0000:{socket * 0x80:02x}:00.0"}})
    for switch in range(4):
        socket = switch // 2
        port_bdf, switch_bdf = f"0000:{0x15 + switch * 0x20:02x}:01.0", f"0000:{0x16 + switch * 0x20:02x}:00.0"
        nodes.append({"id": f"pci:{port_bdf}", "kind": "pcie-root-port", "label": f"Root port {port_bdf[5:]}",
                      "parent": f"hostbridge{socket}", "attrs": {"bdf": port_bdf, "vendor": "Intel", "driver": "pcieport",
                                                                 "numa_node": socket}})
        links.append(_pcie(port_bdf, f"hostbridge{socket}", top=(32.0, 16), current=(32.0, 16)))
        nodes.append({"id": f"pci:{switch_bdf}", "kind": "pcie-switch", "label": f"PEX switch {switch}",
                      "parent": f"pci:{port_bdf}", "attrs": {"bdf": switch_bdf, "vendor": "Broadcom / PLX",
                                                             "driver": "pcieport", "numa_node": socket}})
        links.append(_pcie(switch_bdf, f"pci:{port_bdf}", top=(32.0, 16), current=(32.0, 16)))
        for slot in (0, 1):
            index = switch * 2 + slot
            bdf = GPU_BDFS[index]
            nodes.append({"id": f"pci:{bdf}", "kind": "gpu", "label": f"GPU {index}", "parent": f"pci:{switch_bdf}",
                          "attrs": {"bdf": bdf, "vendor": "NVIDIA", "driver": "nvidia", "numa_node": socket,
                                    "name": "NVIDIA H100 80GB HBM3", "index": index}})
            if bdf == FLAGGED_GPU:
                links.append(_pcie(bdf, f"pci:{switch_bdf}", state="low-under-load", current=(8.0, 8),
                                   top=(32.0, 16), note="still Gen3 x8 while a copy ran (trained down: reseat the "
                                                        "card, check the riser)"))
            elif bdf == IDLE_GPU:
                links.append(_pcie(bdf, f"pci:{switch_bdf}", state="below-max-idle", current=(2.5, 16),
                                   top=(32.0, 16), note="Gen1 at idle (power saving); not read under load yet"))
            else:
                links.append(_pcie(bdf, f"pci:{switch_bdf}", top=(32.0, 16), current=(32.0, 16)))
        extra_bdf = f"0000:{0x17 + switch * 0x20:02x}:00.0"
        if switch % 2 == 0:
            nodes.append({"id": f"pci:{extra_bdf}", "kind": "nvme", "label": f"nvme{switch // 2}",
                          "parent": f"pci:{switch_bdf}", "attrs": {"bdf": extra_bdf, "vendor": "Samsung",
                                                                   "driver": "nvme", "numa_node": socket,
                                                                   "block": f"nvme{switch // 2}n1",
                                                                   "model": "SAMSUNG MZQL27T6HBLA"}})
            links.append(_pcie(extra_bdf, f"pci:{switch_bdf}", top=(16.0, 4), current=(16.0, 4)))
        else:
            nodes.append({"id": f"pci:{extra_bdf}", "kind": "nic", "label": f"ibp{switch}",
                          "parent": f"pci:{switch_bdf}", "attrs": {"bdf": extra_bdf, "vendor": "Mellanox",
                                                                   "driver": "mlx5_core", "numa_node": socket,
                                                                   "ifname": f"ibp{switch}", "speed_mbps": 400000}})
            links.append(_pcie(extra_bdf, f"pci:{switch_bdf}", top=(32.0, 16), current=(32.0, 16)))
    nodes.append({"id": "pci:0000:03:00.0", "kind": "pcie-device", "label": "BMC VGA", "parent": "hostbridge0",
                  "attrs": {"bdf": "0000:03:00.0", "vendor": "ASPEED", "driver": "ast", "numa_node": None}})
    links.append(_pcie("0000:03:00.0", "hostbridge0", state="unknown", top=(2.5, 1), current=(2.5, 1)))
    for a in range(8):
        for b in range(a + 1, 8):
            links.append({"id": f"nvlink:{a}-{b}", "kind": "nvlink", "a": f"pci:{GPU_BDFS[a]}",
                          "b": f"pci:{GPU_BDFS[b]}", "current": {"speed_gts": None, "width": 18},
                          "max": {"speed_gts": None, "width": 18}, "theoretical_gbs": 450.0, "current_gbs": 450.0,
                          "state": "at-max", "note": "18 NVLink4 links via NVSwitch"})
    rows = [["X" if i == j else "NV18" for j in range(8)] for i in range(8)]
    return {"schema": 1, "host": "hgx-test", "source": "fixture:hgx-8gpu", "nodes": nodes, "links": links,
            "gpu_matrix": {"gpus": [f"GPU{i}" for i in range(8)], "rows": rows},
            "not_available": {"nvswitch": "the fake NVML lists no NVSwitch devices"}}


def _spread(median: float) -> dict:
    return {"repeats": 5, "min": round(median * 0.97, 2), "max": round(median * 1.02, 2), "cv": 0.012,
            "interval_95": [round(median * 0.985, 2), round(median * 1.01, 2)]}


def card_links() -> dict:
    entries = []
    for index, bdf in enumerate(GPU_BDFS):
        switch = f"pci:0000:{0x16 + (index // 2) * 0x20:02x}:00.0"
        crossed = [f"pcie:{bdf}", f"pcie:{switch[4:]}"]
        median = 11.8 if bdf == FLAGGED_GPU else 53.1 - index * 0.2
        for kind in ("h2d", "d2h"):
            numa, gpu = "numa0" if index < 4 else "numa1", f"pci:{bdf}"
            entries.append({"id": f"{kind}:pci:{bdf}:pinned", "kind": kind, "src": numa if kind == "h2d" else gpu,
                            "dst": gpu if kind == "h2d" else numa, "variant": "pinned", "link_ids": crossed,
                            "median_gbs": median if kind == "h2d" else median - 1.0, "spread": _spread(median),
                            "theoretical_gbs": 63.0, "efficiency": None,
                            "method": "cudaMemcpyAsync of 256 MiB, median of 5 trials (CUDA events)",
                            "not_available": None})
    entries.append({"id": f"h2d:pci:{GPU_BDFS[0]}:pageable", "kind": "h2d", "src": "numa0",
                    "dst": f"pci:{GPU_BDFS[0]}", "variant": "pageable", "link_ids": [f"pcie:{GPU_BDFS[0]}"],
                    "median_gbs": 19.4, "spread": _spread(19.4), "theoretical_gbs": 63.0, "efficiency": None,
                    "method": "copy from pageable memory, median of 5", "not_available": None})
    entries.append({"id": "d2d:gpu0->gpu1", "kind": "d2d", "src": f"pci:{GPU_BDFS[0]}", "dst": f"pci:{GPU_BDFS[1]}",
                    "variant": "peer", "link_ids": ["nvlink:0-1"], "median_gbs": 389.0, "spread": _spread(389.0),
                    "theoretical_gbs": 450.0, "efficiency": None, "method": "peer copy, median of 5",
                    "not_available": None})
    entries.append({"id": "host-memory:numa0->numa0", "kind": "host-memory", "src": "numa0", "dst": "numa0",
                    "variant": "local", "link_ids": ["mem:numa0"], "median_gbs": 231.0, "spread": _spread(231.0),
                    "theoretical_gbs": 307.2, "efficiency": None, "method": "memcpy, 1 thread per core, median of 5",
                    "not_available": None})
    entries.append({"id": "host-memory:numa0->numa1", "kind": "host-memory", "src": "numa0", "dst": "numa1",
                    "variant": "remote", "link_ids": ["mem:numa0", "mem:numa1"], "median_gbs": 92.0,
                    "spread": _spread(92.0), "theoretical_gbs": 307.2, "efficiency": None,
                    "method": "memcpy across sockets, median of 5", "not_available": None})
    entries.append({"id": "drive-read:pci:0000:17:00.0", "kind": "drive-read", "src": "pci:0000:17:00.0",
                    "dst": "numa0", "variant": "o_direct", "link_ids": ["pcie:0000:17:00.0"], "median_gbs": None,
                    "spread": None, "theoretical_gbs": 7.9, "efficiency": None, "method": "O_DIRECT 1 MiB reads",
                    "not_available": "no writable directory on nvme0n1 was given (--storage DIR)"})
    return {"schema": 1, "entries": entries, "not_available": {"d2d:gpu2->gpu3": "peer access not enabled"}}


SIZES = [8 * 4**k for k in range(13)]  # 8 B … 128 MiB


def collectives_result(ranks: int = 2) -> dict:
    factors = {"all-reduce": 2 * (ranks - 1) / ranks, "all-gather": (ranks - 1) / ranks, "broadcast": 1.0}
    ops = {}
    for op, factor in factors.items():
        points = []
        for size in SIZES:
            time_us = 20.0 + size / 2.5e3 * (1.0 if op != "all-reduce" else 1.6)  # latency + size / ~2.5 GB/s
            algbw = size / (time_us * 1e-6) / 1e9
            points.append({"size_bytes": size, "count": size // 4, "time_us": time_us,
                           "time_us_spread": {"min": time_us * 0.95, "max": time_us * 1.1}, "algbw_gbs": algbw,
                           "busbw_gbs": algbw * factor, "trials": 20})
        ops[op] = points
    return {"kind": "collectives", "label": f"all-reduce, all-gather, broadcast · gloo · {ranks} ranks",
            "backend": "gloo", "ranks": ranks, "placement": "local", "dtype": "float32", "ops": ops,
            "busbw_factor": {"all-reduce": "2(n-1)/n", "all-gather": "(n-1)/n", "broadcast": "1"},
            "figures": {"all_reduce_peak_busbw_gbs": max(p["busbw_gbs"] for p in ops["all-reduce"]),
                        "all_reduce_small_latency_us": ops["all-reduce"][0]["time_us"]},
            "passed": None, "status_reason": "", "cache_state": "n/a",
            "method": "median of 20 timed trials after 5 warm-up, per size (fixture)"}


if __name__ == "__main__":
    with open(sys.argv[1], "w") as out:
        json.dump(eight_gpu_box(), out, indent=1)
