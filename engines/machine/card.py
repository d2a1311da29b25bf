"""The machine card: a target's measured ceilings, each the median of at least `repeats` measurements with its
spread — repeated until the median's 95% interval is within the goal or a per-figure time cap says the machine's
noise is why (`repeat.until_precise`; the spread records repeats, interval, cv and that note).

Runs in a worker (it imports torch and onnxruntime). What cannot be measured is None, with the reason under
"not_available" — a ceiling is never guessed. Keys of "spread" and "method" are dotted paths into the card
("peak_flops.fp32", "call_floor_us.torch", "memory_bandwidth_gbs").
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engines import backends
from engines.backends.probe import installed_versions
from engines.machine import compute, devices, floors, memory, noise, threads
from engines.machine.caches import cache_sizes
from engines.machine.errors import MachineError, Unavailable
from engines.machine.repeat import GOAL, MAX_REPEATS, until_precise
from engines.machine.storage import CHUNK, STORAGE_GOAL, StorageRead, check_directory

CARD_VERSION = 1
MIB = 1024 ** 2
Progress = Callable[[str], object]


@dataclass(frozen=True)
class Sizes:
    """How large and how long each measurement is; QUICK is for tests (the machinery, not the ceilings)."""

    matmul_n: dict[str, int]  # nominal GEMM size per device kind
    matmul_probe_n: int
    matmul_call_s: float  # the longest one GEMM call may take (sets n on slow or emulated precisions)
    repeat_s: float  # about how long one repeat of a kernel lasts
    stream_min_bytes: int  # per array; at least 4× the LLC on top of this
    floor_blocks: int
    floor_block_calls: int
    storage_bytes: int
    h2d_bytes: int
    best_of: int  # batches per repeat of a kernel ceiling; the repeat keeps the fastest (see timing.py)
    noise_windows: int = noise.CARD_WINDOWS  # the noise floor: windows of the reference kernel …
    noise_window_s: float = noise.CARD_WINDOW_S  # … and their length (noise.py)


FULL = Sizes({"cpu": 2048, "cuda": 8192}, 256, 0.5, 0.25, 64 * MIB, 20, 100, 256 * MIB, 256 * MIB, 3)
QUICK = Sizes({"cpu": 256, "cuda": 1024}, 256, 0.05, 0.02, 4 * MIB, 5, 20, 4 * MIB, 8 * MIB, 1, 3, 0.02)
# Each figure repeats (at least `repeats` times) until its median's 95% interval is within ±GOAL, for at most this
# long (engines/machine/repeat.py); quick cards check the machinery, so their cap is short.
FIGURE_CAP_S = {False: 10.0, True: 0.2}
# The thread gains (engines/machine/threads.py) are ratios of two rates measured side by side: a shorter cap each,
# so the two add about 3–5 s to a full card on a quiet machine and at most ~2 × 5 s plus set-up on a noisy one
# (11 s on the shared 2-core VM, where both reached the cap with a cv of 13–24% between paired repeats).
GAIN_CAP_S = {False: 5.0, True: 0.2}
# The storage read repeats until its median is within ±STORAGE_GOAL (10%: a shared disk moves more than a kernel)
# for at most this long; a full read of the 256 MiB file takes 0.1–0.5 s here, so 20 s is 40–200 reads.
STORAGE_CAP_S = {False: 20.0, True: 0.2}
GAINS = ("compute_thread_gain", "stream_thread_gain")


# ---- Public API
def measure_card(target: str = "cpu", storage_dir: str | None = None, repeats: int = 5, quick: bool = False,
                 progress: Progress | None = None) -> dict[str, Any]:
    """Measure every ceiling of `target` on this machine; `progress(text)` hears what is being measured."""
    import torch

    if repeats < 1:
        raise MachineError(f"repeats must be at least 1, got {repeats}")
    if storage_dir is not None:
        check_directory(storage_dir)  # a bad directory fails before minutes of measuring, not after
    device = devices.resolve(target, torch)
    sizes = QUICK if quick else FULL
    card = _Card(device, repeats, quick, progress or (lambda _text: None))
    card.data["threads"] = torch.get_num_threads() if device.kind == "cpu" else None
    card.data["versions"] = installed_versions()  # every registered backend's, by name
    _caches(card, device, torch)
    _peak_flops(card, device, torch, sizes)
    _memory(card, device, torch, sizes, quick)
    _thread_gains(card, device, torch, sizes, quick)
    _floors(card, device, sizes)
    _storage(card, storage_dir, sizes)
    _host_to_device(card, device, torch, sizes)
    _links(card, torch, storage_dir, quick)
    _noise_floor(card, sizes)
    card.say("done")
    return card.data


# ---- Private API
class _Card:
    """The card being filled in; `ceiling()` measures one figure `repeats` times or records why it cannot."""

    def __init__(self, device: devices.Device, repeats: int, quick: bool, progress: Progress):
        self.repeats, self.progress, self.cap_s = repeats, progress, FIGURE_CAP_S[quick]
        self.data: dict[str, Any] = {
            "card_version": CARD_VERSION, "target": device.target, "device_name": device.name,
            "host": socket.gethostname(), "measured_at": _utc_now(), "quick": quick, "repeats": repeats,
            "peak_flops": {}, "memory_bandwidth_gbs": None, "call_floor_us": {}, "llc_bytes": None, "caches": {},
            "storage_read_gbs": None, "storage": None, "h2d_gbs": None, "device_memory_bandwidth_gbs": None,
            "compute_thread_gain": None, "stream_thread_gain": None, "links": None,
            "noise_floor": None, "spread": {}, "method": {}, "not_available": {},
            "precision": {"goal": GOAL, "level": 0.95, "cap_s": FIGURE_CAP_S[quick], "minimum_repeats": repeats}}

    def say(self, text: str) -> None:
        self.progress(text)

    def ceiling(self, key: str, label: str, setup: Callable[[], Any], method: Callable[[Any], str],
                cap_s: float | None = None, goal: float = GOAL) -> float | None:
        """Set up the measurement (may raise Unavailable), measure it `repeats` times, store value and spread;
        a measurement with an `explain(spread)` method says why its interval stayed wider than `goal`."""
        self.say(f"{label}: preparing")
        try:
            measurement = setup()
            value, spread, _ = until_precise(measurement.once, self.repeats, goal=goal, max_s=cap_s or self.cap_s,
                                             max_repeats=max(MAX_REPEATS, self.repeats),
                                             on_repeat=lambda i: self.say(f"{label}: repeat {i + 1}"),
                                             explain=getattr(measurement, "explain", None))
        except Unavailable as exc:
            self.unavailable(key, exc.reason)
            return None
        self._set(key, value)
        self.data["spread"][key] = spread
        self.data["method"][key] = f"{method(measurement)}, median of {spread['n']}"
        return value

    def unavailable(self, key: str, reason: str) -> None:
        self._set(key, None)
        self.data["not_available"][key] = reason

    def _set(self, key: str, value: float | None) -> None:
        head, _, tail = key.partition(".")
        if tail:
            if value is not None or self.data.get(head) is not None:
                if self.data.get(head) is None:
                    self.data[head] = {}
                self.data[head][tail] = value
        else:
            self.data[head] = value


def _caches(card: _Card, device: devices.Device, torch: Any) -> None:
    card.say("cache sizes")
    if device.kind == "cuda":
        l2 = getattr(torch.cuda.get_device_properties(device.index), "L2_cache_size", None)
        if l2:
            card.data.update(caches={"l2": int(l2)}, llc_bytes=int(l2))
            card.data["method"]["caches"] = "torch.cuda.get_device_properties().L2_cache_size"
        else:
            card.data["not_available"]["caches"] = f"torch {torch.__version__} does not report the GPU's L2 size"
        return
    found = cache_sizes()
    card.data.update(caches=found["caches"], llc_bytes=found["llc_bytes"])
    if found["llc_instances"]:
        card.data["llc_instances"] = found["llc_instances"]
    if found["reason"]:
        card.data["not_available"]["caches"] = found["reason"]
    else:
        card.data["method"]["caches"] = found["method"]


def _peak_flops(card: _Card, device: devices.Device, torch: Any, sizes: Sizes) -> None:
    threads = f", {card.data['threads']} threads" if device.kind == "cpu" else ""
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32 if device.kind == "cuda" else None
    if device.kind == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False  # "fp32" means IEEE fp32, not TF32 tensor cores
    try:
        for precision, (dtype, note) in compute.precisions(device, torch).items():
            card.ceiling(
                f"peak_flops.{precision}", f"peak FLOP/s {precision}",
                lambda dtype=dtype: compute.MatmulCeiling(torch, device, dtype, sizes.matmul_n[device.kind],
                                                          sizes.matmul_probe_n, sizes.matmul_call_s, sizes.repeat_s,
                                                          sizes.best_of),
                lambda m, p=precision, note=note: (f"torch.matmul {m.n}×{m.n} {p}, 2·n³ FLOP per call, "
                                                   f"best of {m.best_of} batches of {_calls(m.batch.calls)} per repeat{threads}"
                                                   + (f" ({note})" if note else "")))
        for precision, reason in compute.unavailable_precisions(device, torch).items():
            card.unavailable(f"peak_flops.{precision}", reason)
    finally:
        if allow_tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = allow_tf32


def _memory(card: _Card, device: devices.Device, torch: Any, sizes: Sizes, quick: bool) -> None:
    try:
        array_bytes, why = memory.stream_array_bytes(card.data["llc_bytes"], sizes.stream_min_bytes, quick)
    except Unavailable as exc:
        card.unavailable("memory_bandwidth_gbs", exc.reason)
        return
    where = "device memory" if device.kind == "cuda" else "memory"
    value = card.ceiling(
        "memory_bandwidth_gbs", f"{where} bandwidth",
        lambda: memory.StreamCeiling(torch, device, array_bytes, sizes.repeat_s, sizes.best_of),
        lambda m: (f"torch.add(a, b, out=c) float32 on {device.target}, {why}, 12 bytes per element "
                   f"(2 read + 1 written; write-allocate not counted), best of {m.best_of} batches of "
                   f"{_calls(m.batch.calls)} per repeat"))
    if device.kind == "cuda":  # the target's own memory is the device's: the same figure under its own name
        card.data["device_memory_bandwidth_gbs"] = value
        if value is not None:
            card.data["spread"]["device_memory_bandwidth_gbs"] = card.data["spread"]["memory_bandwidth_gbs"]
            card.data["method"]["device_memory_bandwidth_gbs"] = card.data["method"]["memory_bandwidth_gbs"]
        else:
            card.data["not_available"]["device_memory_bandwidth_gbs"] = \
                card.data["not_available"]["memory_bandwidth_gbs"]
    else:
        card.data["not_available"]["device_memory_bandwidth_gbs"] = \
            f"no GPU on this target ({device.target}): its memory is the host's, see memory_bandwidth_gbs"


def _thread_gains(card: _Card, device: devices.Device, torch: Any, sizes: Sizes, quick: bool) -> None:
    """The fp32 GEMM's and the memory-bandwidth kernel's rate at 2 threads ÷ at 1 (engines/machine/threads.py):
    what a second core gives this machine, the yardstick the confirmation's threads ×2 is held against."""
    if device.kind != "cpu":
        for key in GAINS:
            card.unavailable(key, f"the kernels run on {device.target}, not on host threads: a second CPU thread "
                                  "does not change their rate")
        return
    why = threads.second_core()
    if why is not None:
        for key in GAINS:
            card.unavailable(key, why)
        return
    cap_s, pair = GAIN_CAP_S[quick], "rate at 2 intra-op threads ÷ at 1, batches side by side (alternating first)"
    n = sizes.matmul_n["cpu"]
    _gain(
        card, "compute_thread_gain", "thread gain, GEMM",
        lambda: threads.ThreadGain(torch, lambda: compute.MatmulCeiling(
            torch, device, torch.float32, n, sizes.matmul_probe_n, sizes.matmul_call_s, sizes.repeat_s)),
        lambda g: (f"torch.matmul {g.measurement.n}×{g.measurement.n} fp32, {pair}, "
                   f"{_calls(g.measurement.batch.calls)} a batch"), cap_s=cap_s)
    try:
        array_bytes, why_size = memory.stream_array_bytes(card.data["llc_bytes"], sizes.stream_min_bytes, quick)
    except Unavailable as exc:
        card.unavailable("stream_thread_gain", exc.reason)
        return
    _gain(
        card, "stream_thread_gain", "thread gain, memory bandwidth",
        lambda: threads.ThreadGain(torch, lambda: memory.StreamCeiling(torch, device, array_bytes, sizes.repeat_s)),
        lambda g: (f"torch.add(a, b, out=c) float32, {why_size}, {pair}, "
                   f"{_calls(g.measurement.batch.calls)} a batch"), cap_s=cap_s)


def _gain(card: _Card, key: str, label: str, setup: Callable[[], Any], method: Callable[[Any], str],
          cap_s: float) -> None:
    """One thread gain, with how busy the worker's CPUs were meanwhile (card["thread_gain_load"][key]); measured
    while other processes used BUSY_CORES or more, the figure is theirs, not the machine's: None, with the value
    measured and the load in the reason."""
    load = threads.OtherLoad()
    load.start()
    value = card.ceiling(key, label, setup, method, cap_s=cap_s)
    seen = load.stop()
    card.data.setdefault("thread_gain_load", {})[key] = seen
    if value is None:
        return
    if seen is None:
        card.data["method"][key] += "; other processes' load on the worker's CPUs unknown (no /proc/stat)"
    elif seen["other_cores"] >= threads.BUSY_CORES:
        card.unavailable(key, f"measured ×{value:.2f} while other processes used {seen['other_cores']:.2f} of a core "
                              f"on the worker's CPUs: the second thread waited for them, so this is not the "
                              f"machine's gain (measure again on a quiet machine: labconsole machine --refresh)")


def _floors(card: _Card, device: devices.Device, sizes: Sizes) -> None:
    """Every registered backend's per-call floor, from the almost empty call it declares (engines.machine.floors)."""
    blocks = f"fastest of {sizes.floor_blocks} blocks of {sizes.floor_block_calls} calls per repeat"
    for info in backends.infos():
        key = f"call_floor_us.{info.name}"
        try:
            hook = getattr(backends.module(info.name), "almost_empty_call", None)
        except Exception as exc:  # noqa: BLE001 — a backend that does not import has no floor here, and says why
            card.unavailable(key, f"{info.label} does not import here: {exc}")
            continue
        if hook is None:
            card.unavailable(key, f"{info.label} declares no almost empty call ({info.module}.almost_empty_call)")
            continue
        card.ceiling(key, f"{info.name} per-call floor", lambda hook=hook: _call_floor(hook, device, sizes),
                     lambda floor: f"{floor.described}, {blocks}")


def _call_floor(hook: Callable[[devices.Device], tuple[Callable[[], object], str]], device: devices.Device,
                sizes: Sizes) -> floors.CallFloor:
    call, described = hook(device)
    return floors.CallFloor(call, sizes.floor_blocks, sizes.floor_block_calls, described=described)


def _storage(card: _Card, storage_dir: str | None, sizes: Sizes) -> None:
    if storage_dir is None:
        card.data["not_available"]["storage_read_gbs"] = "no storage directory chosen (--storage DIR)"
        return
    card.say(f"storage: writing a {sizes.storage_bytes // MIB} MiB test file in {storage_dir}")
    with StorageRead(storage_dir, sizes.storage_bytes) as reader:
        card.ceiling("storage_read_gbs", "storage read", lambda: reader,
                     lambda r: (f"sequential read of a {r.size // MIB} MiB file in {r.directory} "
                                f"({CHUNK // MIB} MiB reads) after fsync and posix_fadvise(DONTNEED), repeated "
                                f"until within ±{STORAGE_GOAL * 100:g}%"),
                     cap_s=STORAGE_CAP_S[card.data["quick"]], goal=STORAGE_GOAL)
        card.data["storage"] = reader.description()


def _host_to_device(card: _Card, device: devices.Device, torch: Any, sizes: Sizes) -> None:
    if device.kind != "cuda":
        card.data["not_available"]["h2d_gbs"] = f"no GPU on this target ({device.target})"
        return
    for kind, pinned in (("pinned", True), ("pageable", False)):
        card.ceiling(f"h2d_gbs.{kind}", f"host→device {kind}",
                     lambda pinned=pinned: memory.HostToDeviceCeiling(torch, device, sizes.h2d_bytes, pinned,
                                                                      sizes.repeat_s, sizes.best_of),
                     lambda m, kind=kind: (f"tensor.copy_ of {m.size // MIB} MiB from {kind} host memory to "
                                           f"{device.target}, synchronised, best of {m.best_of} batches of "
                                           f"{_calls(m.batch.calls)} per repeat"))


def _links(card: _Card, torch: Any, storage_dir: str | None, quick: bool) -> None:
    """The bandwidth matrix (engines.topology.bandwidth): every link of this machine's topology graph a copy
    crosses — host memory per NUMA pair, each GPU's host↔device and peer copies, the storage directory's drive —
    measured against the link's theoretical rate; card["links"] is its dict, which `whatif --onto` and the
    host-device-transfer verdict read."""
    card.say("links: reading the topology")
    try:
        from engines.topology import discover
        from engines.topology.bandwidth import measure_links

        topology = discover("/")
    except (ImportError, OSError, ValueError) as exc:
        card.data["not_available"]["links"] = (f"the topology could not be read ({type(exc).__name__}: {exc}): no "
                                               "bandwidth matrix")
        return
    card.data["links"] = measure_links(topology, quick=quick, progress=lambda text: card.say(f"links: {text}"),
                                       storage_dir=storage_dir, torch=torch)
    card.data["method"]["links"] = ("engines.topology.bandwidth.measure_links over engines.topology.discover('/'): "
                                    "each entry's method says how it was measured")


def _noise_floor(card: _Card, sizes: Sizes) -> None:
    """How much the host jitters between windows (engines.machine.noise): measured last, after the ceilings, so
    the card's own kernels have stopped; stored whole (window medians included) so a rule comparing another number
    of windows can recompute it."""
    card.say(f"noise floor: {sizes.noise_windows} windows of {sizes.noise_window_s:g} s")
    floor = noise.measure_noise(sizes.noise_windows, sizes.noise_window_s)
    card.data["noise_floor"] = floor
    card.data["method"]["noise_floor"] = floor["method"]


def _calls(count: int) -> str:
    return f"{count} call" if count == 1 else f"{count} calls"


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
