"""The bandwidth matrix: every link a transfer crosses, measured, against what the link should give.

`measure_links(topology, quick=, progress=)` runs in the machine card's worker (it may import torch) and returns
the contract's dict (docs/topology.md, "Bandwidth matrix"): one entry per measured path —
- host memory per NUMA node pair, local and remote (Intel MLC's matrix; engines/topology/bandwidth_host.py);
- host→device and device→host per GPU, pinned and pageable, and device→device per GPU pair with peer access
  (nvbandwidth's method; bandwidth_gpu.py);
- a drive to host memory with O_DIRECT (bandwidth_drive.py).
Each figure is the median of repeats with its spread, repeated until its 95% interval is within the goal or a time
cap, exactly as the card's ceilings are (engines/machine/repeat.until_precise). Each entry names the links it
crosses and the rate they promise (the slowest link's theoretical per-direction rate: bandwidth_paths.py), and its
efficiency against it. What cannot be measured or known is None with the reason, never a guess: host memory has no
theoretical rate here (DIMM speeds are not read), a machine with one NUMA node has no remote pair, a machine
without a CUDA GPU has no copies.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from engines.machine import memory
from engines.machine.caches import cache_sizes
from engines.machine.errors import MachineError, Unavailable
from engines.machine.repeat import GOAL, MAX_REPEATS, until_precise
from engines.machine.storage import STORAGE_GOAL, check_directory
from engines.storage.errors import StorageError
from engines.topology import bandwidth_gpu
from engines.topology.bandwidth_drive import BLOCK, QUEUE_DEPTH, DriveRead, drive_node
from engines.topology.bandwidth_host import NodeCopy
from engines.topology.bandwidth_paths import Graph, ceiling, link_label
from engines.topology.sysfs import parse_cpulist

SCHEMA = 1
MIB = 1024 ** 2
Progress = Callable[[str], object]
HOST_THEORETICAL = ("DIMM speed and populated channels have no sysfs source (dmidecode needs root and reports the "
                    "firmware's table, not the channels in use): not guessed")


@dataclass(frozen=True)
class Sizes:
    """How large and how long each path's measurement is; QUICK checks the machinery (tests), not the ceilings."""

    host_min_bytes: int  # per array, at least 4× the LLC on top of this (the card's rule)
    transfer_bytes: int  # one GPU copy
    drive_bytes: int  # the O_DIRECT test file
    repeat_s: float  # about how long one repeat lasts
    drive_repeat_s: float
    minimum_repeats: int
    cap_s: float  # each figure repeats until within the goal or this many seconds …
    best_of: int
    budget_s: float  # … or its share of this budget for the whole matrix, when that is shorter (8 GPUs: 93 paths)


FULL = Sizes(64 * MIB, 256 * MIB, 256 * MIB, 0.25, 0.5, 5, 10.0, 3, 180.0)
QUICK = Sizes(4 * MIB, 8 * MIB, 8 * MIB, 0.02, 0.05, 3, 0.2, 1, 5.0)


# ---- Public API
def measure_links(topology: dict[str, Any], *, quick: bool, progress: Progress | None,
                  storage_dir: str | None = None, torch: Any = None) -> dict[str, Any]:
    """Measure every path of `topology` this machine can copy over; see the module docstring and docs/topology.md."""
    try:
        graph = Graph(topology)
    except ValueError as exc:
        raise MachineError(str(exc)) from exc
    if storage_dir is not None:
        check_directory(storage_dir)  # a bad directory fails before minutes of measuring
    sizes = QUICK if quick else FULL
    run = _Matrix(sizes, progress or (lambda _text: None), planned_paths(graph))
    _host_memory(run, graph)
    _gpus(run, graph, torch)
    _drive(run, graph, storage_dir)
    run.say("bandwidth matrix: done")
    return run.result


# ---- Private API
class _Matrix:
    """The matrix being filled in; `measure()` measures one entry, or records why it cannot."""

    def __init__(self, sizes: Sizes, progress: Progress, planned: int = 1):
        self.sizes, self.say = sizes, progress
        self.cap_s = min(sizes.cap_s, sizes.budget_s / max(planned, 1))
        self.result: dict[str, Any] = {"schema": SCHEMA, "entries": [], "not_available": {},
                                       "goal": GOAL, "cap_s": self.cap_s, "budget_s": sizes.budget_s,
                                       "planned_paths": planned, "quick": sizes is QUICK}

    def measure(self, entry: dict[str, Any], setup: Callable[[], Any], method: Callable[[Any], str],
                theory: tuple[float | None, str], goal: float = GOAL) -> dict[str, Any]:
        entry.update(median_gbs=None, spread=None, theoretical_gbs=theory[0], efficiency=None, method="",
                     not_available=None)
        if theory[0] is None and theory[1]:
            entry["theoretical_not_available"] = theory[1]
        label = entry.get("label") or entry["id"]
        self.say(f"{label}: preparing")
        measurement = None
        try:
            measurement = setup()
            median, spread, _ = until_precise(
                measurement.once, self.sizes.minimum_repeats, goal=goal, max_s=self.cap_s,
                max_repeats=MAX_REPEATS, on_repeat=lambda i: self.say(f"{label}: repeat {i + 1}"))
            entry["method"] = f"{method(measurement)}, median of {spread['n']}"
        except Unavailable as exc:
            entry["not_available"] = exc.reason
        except (RuntimeError, OSError) as exc:  # a copy or read that failed part-way: this path, not the matrix
            entry["not_available"] = f"the measurement failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        finally:
            close = getattr(measurement, "close", None)
            if close is not None:
                close()
        if entry["not_available"] is None:
            entry["median_gbs"] = median
            entry["spread"] = {"repeats": spread["n"], "min": spread["min"], "max": spread["max"],
                               "cv": spread["cv"], "interval_95": spread["interval"],
                               "half_width": spread["half_width"], "goal": goal,
                               "within_goal": spread["within_goal"], "note": spread["note"]}
            if theory[0]:
                entry["efficiency"] = median / theory[0]
        self.result["entries"].append(entry)
        return entry


def planned_paths(graph: Graph) -> int:
    """How many paths the matrix will try: NUMA pairs, four host↔device copies per GPU, each ordered GPU pair,
    the drive. Each figure's time cap is its share of the budget, so 8 GPUs do not take 15 minutes."""
    numa, gpus = len(graph.numa_nodes()), len(graph.of_kind("gpu"))
    return numa * numa + 4 * gpus + gpus * (gpus - 1) + 1


def _entry(entry_id: str, kind: str, src: str | None, dst: str | None, variant: str, links: list[dict],
           label: str, **extra: Any) -> dict[str, Any]:
    found = {"id": entry_id, "kind": kind, "src": src, "dst": dst, "variant": variant,
             "link_ids": [link["id"] for link in links if link.get("id")], "label": label,
             "link_label": link_label(links[0]) if links else None}
    found.update(extra)
    return found


# ---- host memory
def _host_memory(run: _Matrix, graph: Graph) -> None:
    numa = graph.numa_nodes()
    if not numa:
        run.result["not_available"]["host-memory"] = "the topology lists no NUMA node (discovery found none)"
        return
    if len(numa) == 1:
        run.result["not_available"]["host-memory remote"] = \
            "not available (this machine has one NUMA node): there is no remote memory to read"
    allowed = _allowed_cpus()
    for reader_index, reader in numa:
        for memory_index, placed in numa:
            variant = "local" if reader_index == memory_index else "remote"
            links = [link for link in graph.links if link.get("kind") == "memory"
                     and placed["id"] in (link.get("a"), link.get("b"))]
            if variant == "remote":
                links += [link for link in graph.links if link.get("kind") != "memory"
                          and {link.get("a"), link.get("b")} == {reader["id"], placed["id"]}]
            entry = _entry(f"host-memory:{reader['id']}->{placed['id']}", "host-memory", reader["id"], placed["id"],
                           variant, links, f"host memory, node {reader_index} CPUs → node {memory_index} memory")
            entry["link_label"] = None
            run.measure(entry, lambda r=reader, m=placed, mi=memory_index: _node_copy(run.sizes, r, m, mi, allowed),
                        _host_method, (None, HOST_THEORETICAL))


def _node_copy(sizes: Sizes, reader: dict, placed: dict, memory_index: int, allowed: set[int]) -> NodeCopy:
    reader_cpus = _cpus(reader, allowed)
    memory_cpus = _cpus(placed, allowed) or sorted(allowed)
    array_bytes, why = memory.stream_array_bytes(_llc(reader), sizes.host_min_bytes, sizes is QUICK)
    copy = NodeCopy(reader_cpus, memory_index, memory_cpus, array_bytes, sizes.repeat_s, sizes.best_of)
    copy.size_note, copy.reader_cpus = why, reader_cpus
    return copy


def _host_method(copy: NodeCopy) -> str:
    cpus = ",".join(str(cpu) for cpu in copy.reader_cpus)
    return (f"numpy.copyto float64, {copy.threads} threads pinned one per CPU ({cpus}), {copy.size_note}; pages: "
            f"{copy.placement}; 16 bytes per element (1 read + 1 written, STREAM Copy; write-allocate not counted), "
            f"best of {copy.best_of} batches of {copy.batch.calls} per repeat")


def _cpus(node: dict, allowed: set[int]) -> list[int]:
    text = (node.get("attrs") or {}).get("cpus") or ""
    try:
        return sorted(set(parse_cpulist(text)) & allowed)
    except ValueError:
        return []


def _llc(node: dict) -> int | None:
    """The node's last-level cache in total: one slice's size × the slices the node's CPUs use (an EPYC node has
    8–12 L3 slices; one slice's size would let a "≥ 4× LLC" array live partly in the caches)."""
    attrs = node.get("attrs") or {}
    caches, instances = attrs.get("caches") or {}, attrs.get("cache_instances") or {}
    for key in ("L3", "l3", "L2", "l2"):
        if isinstance(caches.get(key), int):
            return caches[key] * max(int(instances.get(key) or 1), 1)
    return cache_sizes()["llc_bytes"]


def _only_numa(graph: Graph) -> str | None:
    """The host memory a device reads into when its own node is unknown: the one NUMA node, if there is one."""
    numa = graph.numa_nodes()
    return numa[0][1]["id"] if len(numa) == 1 else None


def _allowed_cpus() -> set[int]:
    getter = getattr(os, "sched_getaffinity", None)
    return set(getter(0)) if getter else set(range(os.cpu_count() or 1))


@contextlib.contextmanager
def _pinned(cpus: list[int]) -> Iterator[None]:
    """Run the block on `cpus` (the GPU's or drive's NUMA node: its buffers are allocated there), then restore."""
    getter, setter = getattr(os, "sched_getaffinity", None), getattr(os, "sched_setaffinity", None)
    if not cpus or getter is None or setter is None:
        yield
        return
    before = getter(0)
    try:
        setter(0, cpus)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        setter(0, before)


# ---- GPUs
def _gpus(run: _Matrix, graph: Graph, torch: Any) -> None:
    listed = graph.of_kind("gpu")
    if torch is None:
        try:
            import torch  # noqa: PLC0415 — the worker's, never the console's
        except ImportError:
            run.result["not_available"]["gpu copies"] = "torch is not installed in the worker"
            return
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        seen = f"; the topology lists {len(listed)} GPU(s) torch cannot use" if listed else ""
        run.result["not_available"]["gpu copies"] = \
            f"no CUDA device visible to torch {torch.__version__} (torch.cuda.is_available() is False){seen}"
        return
    count = torch.cuda.device_count()
    gpus = []
    for index in range(count):
        bdf = bandwidth_gpu.bus_id(torch, index)
        node = graph.by_bdf(bdf)
        if node is None:
            run.result["not_available"][f"cuda:{index} links"] = (
                f"cuda:{index} ({bdf or 'PCI address not given by torch'}) is not a node of the topology: its "
                "figures are measured, its links and theoretical rate are not known")
        gpus.append((index, node))
    allowed = _allowed_cpus()
    for index, node in gpus:
        numa = graph.numa_of(node)
        host = graph.numa_id(numa) or _only_numa(graph)
        cpus = _cpus(graph.nodes[host], allowed) if numa is not None and host else []
        links = graph.device_to_host(node)
        theory = ceiling(links, f"cuda:{index}") if node else (None, f"cuda:{index} is not in the topology")
        name = node or f"cuda:{index}"
        via = link_label(links[0]) if links else None
        for direction, arrow in (("h2d", "host→device"), ("d2h", "device→host")):
            for variant in ("pinned", "pageable"):
                src, dst = (host, node) if direction == "h2d" else (node, host)
                where = f"{via} " if via else ""
                entry = _entry(f"{direction}:{name}:{variant}", direction, src, dst, variant, links,
                               f"{arrow} {variant}, {where}cuda:{index}", device=f"cuda:{index}")
                with _pinned(cpus):
                    run.measure(entry,
                                lambda d=direction, p=variant == "pinned", i=index: bandwidth_gpu.host_device(
                                    torch, i, run.sizes.transfer_bytes, d, p, run.sizes.repeat_s),
                                lambda m, v=variant, a=arrow, c=cpus, n=numa: (
                                    f"Tensor.copy_(non_blocking=True) of {m.size // MIB} MiB {a}, {v} host memory"
                                    f"{_on_cpus(c, n)}, {m.calls} copies between CUDA events per repeat"),
                                theory)
    for a, node_a in gpus:
        for b, node_b in gpus:
            if a == b:
                continue
            links, how = graph.between(node_a, node_b)
            theory = ceiling(links, f"cuda:{a}→cuda:{b}") if node_a and node_b else \
                (None, "a GPU of the pair is not in the topology")
            entry = _entry(f"d2d:{node_a or f'cuda:{a}'}->{node_b or f'cuda:{b}'}", "d2d", node_a, node_b, "peer",
                           links, f"device→device peer, cuda:{a} → cuda:{b}" + (f" over {how}" if links else ""),
                           device=f"cuda:{a}", peer_device=f"cuda:{b}")
            run.measure(entry, lambda a=a, b=b: bandwidth_gpu.peer(torch, a, b, run.sizes.transfer_bytes,
                                                                    run.sizes.repeat_s),
                        lambda m, a=a, b=b: (f"Tensor.copy_(non_blocking=True) of {m.size // MIB} MiB cuda:{a} → "
                                             f"cuda:{b} with peer access, {m.calls} copies between CUDA events on "
                                             f"cuda:{a}'s stream per repeat"),
                        theory)


def _on_cpus(cpus: list[int], numa: int | None) -> str:
    if cpus:
        return f" allocated and driven from NUMA node {numa}'s CPUs (the device's node)"
    if numa is None:
        return " from the worker's CPUs (the device's NUMA node is not known)"
    return f" from the worker's CPUs (it may not run on NUMA node {numa}'s, the device's node)"


# ---- a drive
def _drive(run: _Matrix, graph: Graph, storage_dir: str | None) -> None:
    if storage_dir is None:
        run.result["not_available"]["drive-read"] = "no storage directory chosen (--storage DIR)"
        return
    node, disk, why = drive_node(storage_dir, graph.nodes)
    if disk is None:  # tmpfs accepts O_DIRECT since Linux 6.6: the read would be memory's, not a drive's
        run.result["entries"].append(dict(
            _entry("drive-read:unknown", "drive-read", None, None, "o_direct", [], f"drive → host memory, {storage_dir}",
                   directory=storage_dir), median_gbs=None, spread=None, theoretical_gbs=None, efficiency=None,
            method="", not_available=f"no drive to read: {why.split(': no disk counters')[0]} (choose a directory on a local disk with --storage DIR)"))
        return
    if node is None:
        run.result["not_available"]["drive-read node"] = f"{disk}: {why}"
    numa = graph.numa_of(node)
    host = graph.numa_id(numa) or _only_numa(graph)
    cpus = _cpus(graph.nodes[host], _allowed_cpus()) if numa is not None and host else []
    links = graph.device_to_host(node)
    theory = ceiling(links, disk) if node else (None, f"the drive's node is not known ({why})")
    entry = _entry(f"drive-read:{node or 'unknown'}", "drive-read", node, host, "o_direct", links,
                   f"drive → host memory, {disk}", directory=storage_dir)
    stack = contextlib.ExitStack()

    def setup() -> DriveRead:
        try:
            return stack.enter_context(DriveRead(storage_dir, run.sizes.drive_bytes, run.sizes.drive_repeat_s))
        except StorageError as exc:
            raise Unavailable(f"{exc.message}: {exc.fix}" if exc.fix else exc.message) from exc

    with stack, _pinned(cpus):
        run.measure(entry, setup,
                    lambda r: (f"O_DIRECT sequential reads of a {r.size // MIB} MiB file in {storage_dir} on {disk} "
                               f"({BLOCK // MIB} MiB blocks, {QUEUE_DEPTH} in flight, engines/storage/ioreader), "
                               f"{r.repeat_s:g} s per repeat{_on_cpus(cpus, numa) if node else ''}"),
                    theory, goal=STORAGE_GOAL)
