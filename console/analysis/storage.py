"""A run's storage reads beside the machine's measured ceiling: model file, sample data and checkpoints.

The worker times what it reads (the cold-start block's read_s/read_bytes for a model file; the input-pipeline
scenario's disk_read_mb_s and checkpoint MB/s); the machine card holds `storage_read_gbs`, the sequential read
throughput measured on a chosen directory. Put side by side, a model load reading at 90% of the ceiling is
storage-bound, one at 5% is not (or read from the page cache, which the card's and the run's cache states say).

Pure functions over plain dicts (the summary and a card); Qt-free, numpy-free. The card is the caller's
(console.machine.cards.newest_card); `stored_sweep` reads the newest I/O sweep from a store it is given.
"""

from __future__ import annotations

from typing import Any


# ---- Public API
def storage_block(summary: dict[str, Any], card: dict[str, Any] | None) -> dict[str, Any] | None:
    """Every storage figure of the run in GB/s, each with its share of the card's ceiling; None when none."""
    cold = summary.get("cold_start") or {}
    scenario = summary.get("scenario") or {}
    reads = {
        "model_read": _rate(cold.get("read_bytes"), cold.get("read_s")),
        "data_read": _mb_to_gb(scenario.get("disk_read_mb_s")),
        "checkpoint_save": _mb_to_gb(scenario.get("checkpoint_save_mb_s")),
        "checkpoint_load": _mb_to_gb(scenario.get("checkpoint_load_mb_s")),
    }
    if all(value is None for value in reads.values()):
        return None
    ceiling = _number((card or {}).get("storage_read_gbs"))
    block: dict[str, Any] = {f"{name}_gbs": value for name, value in reads.items()}
    block["storage_read_gbs"] = ceiling
    for name, value in reads.items():
        block[f"{name}_of_ceiling"] = value / ceiling if value is not None and ceiling else None
    block["cache_state"] = scenario.get("cache_state")
    block["ceiling_state"] = ((card or {}).get("storage") or {}).get("state")
    if card is None:
        block["reason"] = ("no machine card for this host and target, so no ceiling to compare with; measure one "
                           "with labconsole machine --storage DIR")
    elif ceiling is None:
        why = ((card.get("not_available") or {}).get("storage_read_gbs") or "the card has no storage figure")
        block["reason"] = f"the machine card has no storage ceiling ({why}); measure it with --storage DIR"
    verdict = storage_verdict(summary, card)
    if verdict is not None:
        block["verdict"] = verdict
    if scenario.get("storage_bytes") is not None:  # the data the run read from storage, against measured energy
        block["joules_per_gb"] = joules_per_gb(summary, _number(scenario.get("storage_bytes")))
    block["method"] = ("model_read: the worker's timed read of the model file (cold_start read_bytes / read_s); "
                       "data_read: bytes this process fetched from storage per second while measuring; checkpoint: "
                       "torch.save to fsync and torch.load(weights_only); each ÷ the card's sequential read ceiling")
    return block


# ---- Private API
def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _rate(size: Any, seconds: Any) -> float | None:
    size, seconds = _number(size), _number(seconds)
    return size / seconds / 1e9 if size and seconds else None


def _mb_to_gb(value: Any) -> float | None:
    number = _number(value)
    return number / 1e3 if number is not None else None


# ---- Verdicts that name the storage
INPUT_BOUND_WAIT = 0.2  # the model waited for data this share of the time or more: the run is input-bound
AT_CEILING = 0.8  # reading at this share of the device's measured ceiling (or busier than DEVICE_BUSY): at its roof
DEVICE_BUSY = 90.0  # % of the time with a request in flight
READERS_BUSY = 0.8  # readers spent this share of their time reading and decoding: they are the limit
SMALL_REQUEST_KIB = 64.0  # average request below this, far from the ceiling: the reads are too small
FITS_IN_RAM = 0.5  # a data set up to this share of RAM stays in the page cache once warm
LEVERS_TEXT = {
    "faster-device": "a faster device (or more of them): this one is at its measured ceiling",
    "different-format": "a different format: decoding, not reading, takes the readers' time (pre-decoded arrays, "
                        "a cheaper codec, or decoding on the accelerator)",
    "more-readers": "more readers (loader workers / outstanding reads): the device has headroom the readers do not use",
    "larger-reads": "larger reads (bigger samples per file, shards, or a larger read size): many small requests keep "
                    "MB/s low while the device is far from its ceiling",
    "page-cache": "the page cache: the data set fits in RAM, so a warm second epoch would read from memory",
}


def storage_verdict(summary: dict[str, Any], card: dict[str, Any] | None,
                    sweep_best_mb_s: float | None = None, sweep_label: str = "") -> dict[str, Any] | None:
    """Which device feeds an input-bound run, how close it is to its measured ceiling, and which lever, with the
    evidence numbers; None when the run is not input-bound (or says nothing about its input).

    Takes an input-pipeline run's summary (its ``scenario`` block and ``telemetry``) or a storage feed result
    (``kind: "feed"``, see :func:`feed_facts`). The ceiling is a stored I/O sweep's best read MB/s when given
    (``sweep_best_mb_s``: the device's best over block sizes and queue depths), else the machine card's
    sequential read of its storage directory (said when that directory is on another device).
    """
    facts = feed_facts(summary)
    if facts is None or not facts["input_bound"]:
        return None
    device = facts.get("device") or _resolved_here(facts.get("data_dir"))
    disk = device.get("disk")
    tele = _device_telemetry(summary.get("telemetry") or {}, disk)
    read = facts.get("read_mb_s") or tele.get("read_mb_s")
    sweep = (card or {}).get("storage_sweep") or {}  # attached by console.machine.cards.card_to_judge_by when one is stored
    if sweep_best_mb_s is None and sweep.get("disk") in (None, disk):
        sweep_best_mb_s, sweep_label = _number(sweep.get("best_read_mb_s")), str(sweep.get("label") or "")
    ceiling, ceiling_source = _ceiling(card, device, sweep_best_mb_s, sweep_label)
    of_ceiling = read / ceiling if read and ceiling else None
    evidence: dict[str, Any] = {k: _round(v) for k, v in {
        "read_mb_s": read, "ceiling_mb_s": ceiling, "of_ceiling": of_ceiling,
        "device_busy_percent": tele.get("busy"), "queue_depth": tele.get("queue_depth"),
        "await_ms": tele.get("await_ms"), "read_iops": tele.get("read_iops") or facts.get("iops"),
        "request_kib": tele.get("request_kib"), "device_read_mb_s": tele.get("read_mb_s"),
        "readers": facts.get("readers"),
        "reader_busy": facts.get("reader_busy"), "read_ms_per_sample": facts.get("read_ms"),
        "decode_ms_per_sample": facts.get("decode_ms"), "cache_state": facts.get("cache_state"),
        "dataset_gb": (facts.get("dataset_bytes") or 0) / 1e9 or None,
        "ram_gb": (facts.get("ram_bytes") or 0) / 1e9 or None}.items() if v is not None}
    evidence.update(_drive_health(summary.get("telemetry") or {}, disk))
    levers = _levers(evidence)
    lever = levers[0] if levers else "more-readers"
    name = block_label(device) if device else "an unknown device (the run did not record its data directory's)"
    where = (f"reading {read:.4g} MB/s, {of_ceiling:.0%} of its measured {ceiling:.4g} MB/s ({ceiling_source})"
             if of_ceiling is not None else
             f"reading {read:.4g} MB/s; no measured ceiling to hold it against ({ceiling_source})" if read else
             f"no read rate recorded ({ceiling_source})")
    sentence = (f"Input-bound ({facts['bound_text']}), fed by {name}: {where}; lever: {LEVERS_TEXT[lever]} — "
                f"{_lever_evidence(lever, evidence)}.")
    if evidence.get("nvme_throttle_events"):
        sentence += (f" The drive throttled itself {evidence['nvme_throttle_events']:g} times during the run (thermal "
                     f"management, up to {evidence.get('nvme_temperature_max_c', float('nan')):.0f} °C): cooling "
                     "comes before a faster device.")
    device_read = tele.get("read_mb_s")
    if read and device_read and device_read > 2.0 * read:  # the device's counters count every reader, not this run
        sentence += (f" The device read {device_read:.4g} MB/s meanwhile: other processes shared it, so its busy "
                     "time and queue are not this run's alone.")
    return {"input_bound": True, "bound": facts["bound_text"], "device": name, "device_name": disk,
            "data_dir": facts.get("data_dir"), "read_mb_s": _round(read), "ceiling_mb_s": _round(ceiling),
            "ceiling_source": ceiling_source, "of_ceiling": _round(of_ceiling), "lever": lever,
            "lever_text": LEVERS_TEXT[lever], "also": levers[1:], "evidence": evidence, "sentence": sentence,
            "method": ("read MB/s: the run's own bytes from storage per second (or the device's counters); device "
                       "busy, queue depth, await and request size: storage telemetry means over the measurement "
                       "(/proc/diskstats); readers busy: the loader's read+decode time over its wall time; the "
                       "lever is the first rule that holds, in the order device at ceiling, decode dominates, "
                       "readers busy, small requests, data set fits in RAM — each with its numbers")}


def feed_facts(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The figures a storage verdict and a storage what-if read, from an input-pipeline summary or a feed result.

    Feed results (engines.storage.feed, plain dicts): ``figures.au_percent``, ``figures.samples_per_s``,
    ``figures.read_mb_s``, ``passed`` / ``au_threshold_percent``, and where present ``data_dir``, ``data_device``,
    ``readers``, ``reader_busy_fraction``, ``sample_bytes``, ``batch``, ``compute_ms``, ``accelerators``,
    ``dataset_bytes`` (top level or under ``options`` / ``workload``). Missing figures are None.
    """
    if summary.get("kind") == "feed" or "au_percent" in (summary.get("figures") or {}):
        return _feed_result_facts(summary)
    block = summary.get("scenario") or {}
    wait = _number(block.get("wait_fraction")) if block.get("wait_fraction") != 0 else 0.0
    if wait is None:
        return None
    files, sample = _number(block.get("data_files")), _number(block.get("sample_bytes"))
    mem = (summary.get("telemetry") or {}).get("mem.total") or {}
    ram = _number(mem.get("max"))
    latency = (summary.get("latency_ms") or {})
    step_ms = _number(latency.get("mean")) or _number(latency.get("p50"))
    return {"input_bound": wait >= INPUT_BOUND_WAIT, "bound_text": f"the model waited for data {wait:.0%} of the time",
            "wait_fraction": wait, "data_dir": block.get("data_dir"), "device": block.get("data_device"),
            "read_mb_s": _number(block.get("disk_read_mb_s")),
            "iops": _number(block.get("iops")), "readers": block.get("loader_workers"),
            "reader_busy": _number(block.get("loader_busy_fraction")),
            "read_ms": _number(block.get("loader_read_ms_per_sample")),
            "decode_ms": _number(block.get("loader_decode_ms_per_sample")), "cache_state": block.get("cache_state"),
            "dataset_bytes": files * sample if files and sample else None, "ram_bytes": ram * 2**30 if ram else None,
            "samples_per_s": _number(block.get("samples_per_s")),
            "batch": _number(block.get("batch")) or _number(summary.get("batch")),
            "sample_bytes": sample, "step_ms": step_ms,
            "storage_bytes_per_sample": _per(block.get("storage_bytes"), block.get("samples"))
            if block.get("cache_state") == "cold" else None,
            "compute_ms": step_ms * (1.0 - wait) if step_ms else None, "au_percent": None}


def block_label(device: dict[str, Any]) -> str:
    """The device as a verdict names it (engines.block_device.label, imported lazily: it is engines code)."""
    from engines.block_device import label

    return label(device)


def stored_sweep_best(store: Any, disk: str | None = None) -> tuple[float | None, str]:
    """The best read MB/s of the newest stored I/O sweep (a `storage-sweep` run) on `disk` (any when None), and
    which run it is; (None, "") when the history holds none. Read only."""
    found = stored_sweep(store, disk)
    return (found["best_read_mb_s"], found["label"]) if found else (None, "")


def stored_sweep(store: Any, disk: str | None = None) -> dict[str, Any] | None:
    """{best_read_mb_s, label, disk} of the newest stored I/O sweep on `disk` (any when None); None when none."""
    for run in store.list_runs(limit=500):
        spec, summary = run.get("spec") or {}, run.get("summary") or {}
        if spec.get("scenario") != "storage-sweep" or run.get("status") != "completed":
            continue
        result = summary.get("result") if isinstance(summary.get("result"), dict) else summary
        where = (result.get("data_device") or {}).get("disk") if isinstance(result.get("data_device"), dict) else None
        if disk and where and where != disk:
            continue
        figures = result.get("figures") or {}
        best = [v for k, v in figures.items() if "read" in k and k.endswith("mb_s") and _number(v)]
        if best:
            return {"best_read_mb_s": max(best), "label": f"I/O sweep run {str(run.get('run_id'))[:8]}'s best read",
                    "disk": where}
    return None


def joules_per_gb(summary: dict[str, Any], bytes_moved: float | None) -> dict[str, Any]:
    """Energy over bytes moved by storage, where power was measured: {value, scope, method, note} or why not.

    The energy is the run's (its scope: a GPU, the CPU package...), not the drive's alone — drives report no power
    — so the figure is "joules of <scope> per GB moved", stated as such. An estimated energy gives no figure.
    """
    energy = summary.get("energy") or {}
    scopes = [s for s in energy.get("scopes") or [] if isinstance(s, dict)] if isinstance(energy, dict) else []
    measured = [s for s in scopes if s.get("method") in ("counter", "integrated") and _number(s.get("joules"))]
    if not bytes_moved or bytes_moved <= 0:
        return {"value": None, "reason": "no bytes moved by storage were recorded for the run"}
    if not measured:
        why = "energy was only estimated" if scopes else "no power was measured for the run"
        return {"value": None, "reason": f"{why}: joules per GB needs a measured energy (RAPL, NVML)"}
    joules = sum(float(s["joules"]) for s in measured)
    scope = "+".join(str(s.get("scope")) for s in measured)
    return {"value": joules / (bytes_moved / 1e9), "scope": scope,
            "method": "+".join(sorted({str(s.get("method")) for s in measured})),
            "note": f"energy of {scope} over the bytes the storage moved — the drive's own power is not measured"}


def _feed_result_facts(result: dict[str, Any]) -> dict[str, Any]:
    figures = result.get("figures") or {}

    def pick(*keys: str) -> Any:
        for where in (result, result.get("options") or {}, result.get("workload") or {}, figures):
            for key in keys:
                if isinstance(where, dict) and where.get(key) is not None:
                    return where[key]
        return None

    au = _number(figures.get("au_percent"))
    threshold = _number(pick("au_threshold_percent", "threshold_percent")) or 90.0
    bound = result.get("passed") is False or (au is not None and au < threshold)
    au_text = f"AU {au:.1f}% below the {threshold:.0f}% the workload needs" if au is not None else "AU not recorded"
    compute = _number(pick("compute_ms", "compute_ms_per_step"))
    return {"input_bound": bool(bound), "bound_text": au_text, "au_percent": au, "data_dir": pick("data_dir"),
            "device": pick("data_device"), "read_mb_s": _number(figures.get("read_mb_s")),
            "iops": _number(pick("read_iops")), "readers": pick("readers"),
            "reader_busy": _number(pick("reader_busy_fraction")), "read_ms": _number(pick("read_ms_per_sample")),
            "decode_ms": _number(pick("decode_ms_per_sample")), "cache_state": result.get("cache_state"),
            "dataset_bytes": _number(pick("dataset_bytes")), "ram_bytes": _number(pick("ram_bytes")),
            "samples_per_s": _number(figures.get("samples_per_s")), "batch": _number(pick("batch")),
            "sample_bytes": _number(pick("sample_bytes")), "compute_ms": compute,
            "storage_bytes_per_sample": _per((_number(figures.get("read_mb_s")) or 0) * 1e6,
                                             figures.get("samples_per_s")),
            "accelerators": _number(pick("accelerators")), "step_ms": None}


def _resolved_here(data_dir: Any) -> dict[str, Any]:
    """A run that did not record its data device (older runs): its directory resolved now, when it is here."""
    import os

    if not isinstance(data_dir, str) or not os.path.isdir(data_dir):
        return {}
    from engines.block_device import describe

    return describe(data_dir)


def _drive_health(telemetry: dict[str, Any], disk: str | None) -> dict[str, float]:
    """An NVMe data device's hottest reading and its thermal-throttle transitions during the measurement."""
    import re

    match = re.fullmatch(r"(nvme\d+)(?:c\d+)?n\d+(?:p\d+)?", disk or "")
    if not match:
        return {}
    ctrl, out = match.group(1), {}
    hottest = (telemetry.get(f"storage.{ctrl}.temperature") or {}).get("max")
    if isinstance(hottest, (int, float)):
        out["nvme_temperature_max_c"] = round(float(hottest), 1)
    events = telemetry.get(f"storage.{ctrl}.throttle_events") or {}
    if isinstance(events.get("max"), (int, float)) and isinstance(events.get("min"), (int, float)):
        out["nvme_throttle_events"] = float(events["max"] - events["min"])
    return out


def _device_telemetry(telemetry: dict[str, Any], disk: str | None) -> dict[str, float]:
    """Means over the measurement of the data device's storage telemetry (console.telemetry.diskstats)."""
    if not disk:
        return {}
    out = {}
    for field in ("read_mb_s", "read_iops", "queue_depth", "await_ms", "busy"):
        mean = (telemetry.get(f"storage.{disk}.{field}") or {}).get("mean")
        if isinstance(mean, (int, float)) and not isinstance(mean, bool) and mean >= 0:
            out[field] = float(mean)
    if out.get("read_mb_s") and out.get("read_iops"):
        out["request_kib"] = out["read_mb_s"] * 1e6 / out["read_iops"] / 1024
    return out


def _ceiling(card: dict[str, Any] | None, device: dict[str, Any], sweep: float | None,
             sweep_label: str) -> tuple[float | None, str]:
    if _number(sweep):
        return float(sweep), sweep_label or "a stored I/O sweep's best read"
    gbs = _number((card or {}).get("storage_read_gbs"))
    if card is None:
        return None, "no machine card: measure one with labconsole machine --storage DIR on the data's device"
    if gbs is None:
        return None, "the machine card has no storage read; measure it with labconsole machine --storage DIR"
    where = (card.get("storage") or {}).get("dir")
    text = f"the machine card's sequential read of {where or 'its storage directory'}"
    if where and device.get("disk"):
        import os

        from engines.block_device import describe

        card_disk = describe(where).get("disk") if os.path.exists(where) else None
        if card_disk and card_disk != device["disk"]:
            text += f" — on {card_disk}, not {device['disk']}: measure the card on the data's device"
    return gbs * 1e3, text


def _levers(e: dict[str, Any]) -> list[str]:
    """Every lever whose rule holds, most decisive first."""
    out = []
    of, busy = e.get("of_ceiling"), e.get("device_busy_percent")
    if (of is not None and of >= AT_CEILING) or (busy is not None and busy >= DEVICE_BUSY):
        out.append("faster-device")
    readers_busy = e.get("reader_busy") is not None and e["reader_busy"] >= READERS_BUSY
    decode, read = e.get("decode_ms_per_sample"), e.get("read_ms_per_sample")
    if decode is not None and read is not None and decode > read and (e.get("reader_busy") or 0) >= 0.5:
        out.append("different-format")
    if readers_busy or "faster-device" not in out:
        if readers_busy or (e.get("queue_depth") is not None and e["queue_depth"] < 2.0):
            out.append("more-readers")
    kib = e.get("request_kib")
    if kib is not None and kib < SMALL_REQUEST_KIB and (of is None or of < 0.5) and "faster-device" not in out:
        out.append("larger-reads")
    dataset, ram = e.get("dataset_gb"), e.get("ram_gb")
    if e.get("cache_state") == "cold" and dataset and ram and dataset <= FITS_IN_RAM * ram:
        out.append("page-cache")
    return out


def _lever_evidence(lever: str, e: dict[str, Any]) -> str:
    parts = []
    if lever == "faster-device":
        parts += _known(e, ("of_ceiling", "{:.0%} of its ceiling"),
                        ("device_busy_percent", "device busy {:.0f}% of the time"), ("queue_depth", "queue depth {:.3g}"))
    elif lever == "different-format":
        parts.append(f"decode {e['decode_ms_per_sample']:.3g} ms vs read {e['read_ms_per_sample']:.3g} ms per sample")
        parts += _known(e, ("reader_busy", "readers busy {:.0%}"))
    elif lever == "more-readers":
        if e.get("readers") == 0:
            parts.append("no reader threads (each batch is read when the model asks for it)")
        else:
            parts += _known(e, ("readers", "{} readers"))
        parts += _known(e, ("reader_busy", "busy {:.0%} of their time"), ("device_busy_percent", "device busy {:.0f}%"),
                        ("queue_depth", "queue depth {:.3g}"))
    elif lever == "larger-reads":
        parts.append(f"{e['request_kib']:.3g} KiB per request")
        parts += _known(e, ("read_iops", "{:.4g} IOPS"), ("read_mb_s", "{:.4g} MB/s"))
    elif lever == "page-cache":
        parts.append(f"data set {e['dataset_gb']:.3g} GB, RAM {e['ram_gb']:.3g} GB, read cold")
    return ", ".join(parts) or "no device telemetry recorded for the run"


def _known(e: dict[str, Any], *readings: tuple[str, str]) -> list[str]:
    """Each (key, template) whose key the evidence has, filled in; an unknown reading is left out, never shown as 0."""
    return [template.format(e[key]) for key, template in readings if e.get(key) is not None]


def _per(total: Any, count: Any) -> float | None:
    total, count = _number(total), _number(count)
    return total / count if total and count else None


def _round(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value
