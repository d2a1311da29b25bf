"""The fio adapter: the same sweep point run by fio (`fio --output-format=json`), when fio is on PATH.

fio is optional, never required: `available()` says whether it is there, and the sweep falls back to the built-in
reader when it is not. The point maps onto fio as the built-in reader drives it (engines/storage/ioreader.py):
readers → numjobs, each job its own region of the same file (size = file size / readers, offset_increment = that
size); queue depth → iodepth with ioengine=libaio where O_DIRECT is used (libaio is asynchronous only with
O_DIRECT); buffered points use ioengine=psync with QD jobs per reader instead (psync has one request in flight per
job, so QD outstanding requests need QD jobs; each job then reads its own sub-region). Writes end with fsync
(end_fsync=1) as the built-in's do; random offsets are uniform without fio's random map (norandommap), as the
built-in picks them. Latency percentiles are fio's total latency (lat_ns: submission to completion) — what the
built-in reader times — falling back to clat_ns when fio did not report lat percentiles.

`parse` is pure (tested on captured fio JSON in tests/unit/fixtures/fio_*.json).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from engines.storage.errors import StorageError

RW_NAMES = {("read", "seq"): "read", ("read", "rand"): "randread", ("write", "seq"): "write",
            ("write", "rand"): "randwrite"}


# ---- Public API
def available() -> str | None:
    """fio's path, or None when it is not installed."""
    return shutil.which("fio")


def version() -> str | None:
    path = available()
    if path is None:
        return None
    try:
        return subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def command(fio_path: str, path: str, file_size: int, rw: str, pattern: str, block: int, queue_depth: int,
            readers: int, seconds: float, direct: bool) -> list[str]:
    """The fio command line for one point (see the module docstring for how the point maps onto fio)."""
    jobs = readers if direct else readers * queue_depth
    region = file_size // jobs // block * block
    if region < block:
        raise StorageError(f"the test file is too small for {jobs} fio jobs of {block} B blocks",
                           "raise --file-size")
    args = [fio_path, "--name=labconsole-sweep", f"--filename={path}", f"--rw={RW_NAMES[(rw, pattern)]}",
            f"--bs={block}", f"--numjobs={jobs}", f"--size={region}", f"--offset_increment={region}",
            f"--direct={int(direct)}", "--time_based=1", f"--runtime={max(1, round(seconds * 1000))}ms",
            "--group_reporting=1", "--output-format=json", "--lat_percentiles=1", "--randrepeat=0",
            "--norandommap=1", "--allow_file_create=0", "--thread=1"]
    if direct:
        args += ["--ioengine=libaio", f"--iodepth={queue_depth}"]
    else:
        args += ["--ioengine=psync", "--iodepth=1"]
    if rw == "write":
        args.append("--end_fsync=1")
    else:
        args.append("--invalidate=1")  # fio drops the file from the page cache before reading (buffered points)
    return args


def run_point(path: str, file_size: int, rw: str, pattern: str, block: int, queue_depth: int, readers: int,
              seconds: float, direct: bool) -> dict[str, Any]:
    """Run one point with fio and parse it; raises StorageError when fio is missing or fails."""
    fio_path = available()
    if fio_path is None:
        raise StorageError("fio is not installed", "install fio (e.g. apt-get install fio) or use --engine built-in")
    args = command(fio_path, path, file_size, rw, pattern, block, queue_depth, readers, seconds, direct)
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 60)
    except subprocess.TimeoutExpired as exc:
        raise StorageError(f"fio did not finish a {seconds:g} s point within {seconds + 60:g} s",
                           "check the device, or use --engine built-in") from exc
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise StorageError(f"fio failed (exit {done.returncode}): {' / '.join(tail)}",
                           "check the fio message, or use --engine built-in")
    return parse(done.stdout, rw)


def parse(output: str, rw: str) -> dict[str, Any]:
    """fio's JSON (group_reporting: one job entry) as {"bytes", "ops", "seconds", "mb_s", "iops", "p50_us",
    "p99_us", "latency_source"} for the `rw` side ("read" or "write")."""
    start = output.find("{")  # fio may print notes ("fio: ...") before the JSON
    try:
        document = json.loads(output[start:]) if start >= 0 else None
    except json.JSONDecodeError as exc:
        raise StorageError(f"fio's output is not JSON ({exc.msg} at {exc.pos})",
                           "check the fio version (3.x writes --output-format=json)") from exc
    jobs = (document or {}).get("jobs") or []
    if not jobs:
        raise StorageError("fio's JSON has no job", "check the fio command line")
    job = jobs[0]
    if job.get("error"):
        raise StorageError(f"fio's job reported error {job['error']}", "check the device and the fio message")
    side = job.get(rw) or {}
    runtime_ms = side.get("runtime") or job.get("job_runtime") or 0
    total = int(side.get("io_bytes") or 0)
    ops = int(side.get("total_ios") or 0)
    seconds = runtime_ms / 1000.0
    source, percentiles = _percentiles(side)
    return {"bytes": total, "ops": ops, "seconds": seconds,
            "mb_s": (side.get("bw_bytes") or 0) / 1e6, "iops": float(side.get("iops") or 0.0),
            "p50_us": _at(percentiles, 50.0), "p99_us": _at(percentiles, 99.0), "latency_source": source}


# ---- Private API
def _percentiles(side: dict[str, Any]) -> tuple[str, dict[float, float]]:
    for key in ("lat_ns", "clat_ns"):
        table = (side.get(key) or {}).get("percentile") or {}
        if table:
            return key, {float(p): float(v) for p, v in table.items()}
    return "none", {}


def _at(percentiles: dict[float, float], wanted: float) -> float | None:
    """The percentile in µs (fio reports the ones it was asked for; 50 and 99 are in its default list)."""
    value = percentiles.get(wanted)
    return None if value is None else value / 1000.0
