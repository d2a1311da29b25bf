"""torch.distributed.checkpoint (DCP) with N ranks as local processes: each saves its own shard, all at once.

Why processes and not threads: a training job's ranks are processes writing concurrently, and what storage
shows under N concurrent writers (a shared queue, a metadata server, a per-client limit) is the point. The ranks
are started with `python -m engines.storage.checkpoint_dcp` (subprocesses, not multiprocessing: the benchmark
itself may run in a daemonic worker, which may not have multiprocessing children); they meet through a file in
the checkpoint's scratch folder (gloo, `file://` rendezvous: no TCP port needed). Each rank builds its shard
(keys prefixed by its rank, so DCP writes every rank's bytes instead of de-duplicating them as replicas), waits
at a barrier, and times `dcp.save` to a FileSystemWriter with `sync_files=True` (every file fsynced) — the
collective planning and the metadata file rank 0 writes are part of it, as in a real job. Rank 0 then drops every
file from the page cache, and after a barrier each rank times `dcp.load` into empty tensors of the same shapes
and checks it got its bytes back. As MLPerf Storage reports checkpoints: the duration is the slowest rank's, the
GB/s the lowest rank's, and the per-rank spread is kept.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from engines.storage.errors import StorageError

HOW = ("torch.distributed.checkpoint.save with FileSystemWriter(sync_files=True) by {ranks} local rank processes "
       "(gloo), each its own shard at once; dcp.load into preallocated tensors")


# ---- Public API
def measure(options: dict[str, Any], folder: Path, ranks: int, rank_bytes: int) -> dict[str, Any]:
    """Run `ranks` processes that save and restore their shards in `folder`; the format's entry."""
    from engines.storage.checkpoint_formats import entry

    if getattr(sys, "frozen", False):
        raise StorageError("the dcp format starts its ranks with a Python interpreter, which this packaged build "
                           "does not carry", "run it from a pip install of Lab Console, or choose "
                           "--formats torch,safetensors")
    job = folder / "dcp-job.json"
    job.write_text(json.dumps({"options": _rank_options(options), "world": ranks, "folder": str(folder),
                               "parent": os.getpid()}))
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
               OMP_NUM_THREADS="1")
    timeout = 120 + 8 * ranks * rank_bytes / 50e6  # a very slow disk (50 MB/s) written and read, with room
    procs = []
    for rank in range(ranks):  # stderr to a file each: a full pipe would stall a rank that others wait for
        with open(folder / f"rank{rank}.err", "wb") as err:
            procs.append(subprocess.Popen([sys.executable, "-m", "engines.storage.checkpoint_dcp", str(job),
                                           str(rank)], env=env, stdout=subprocess.DEVNULL, stderr=err))
    errors = _wait(procs, timeout, folder)
    if errors:
        raise RuntimeError(f"DCP with {ranks} ranks failed: {errors}")
    results = [json.loads((folder / f"rank{r}.json").read_text()) for r in range(ranks)]
    bad = [r["rank"] for r in results if not r["same"]]
    if bad:
        raise RuntimeError(f"DCP rank(s) {bad} loaded back other bytes than they saved: the storage at {folder} "
                           "returned other bytes than were written")
    first = results[0]
    return entry(save_s=max(r["save_s"] for r in results), load_s=max(r["load_s"] for r in results),
                 size=first["bytes_on_disk"], per_rank_save=[r["save_s"] for r in results],
                 per_rank_load=[r["load_s"] for r in results], cache_state=first["cache_state"],
                 cache_note=first["cache_note"], how=HOW.format(ranks=ranks), rank_bytes=rank_bytes)


# ---- Private API
def _rank_options(options: dict[str, Any]) -> dict[str, Any]:
    keys = ("model", "model_params", "size", "shard_gb", "bytes_per_param", "job_ranks")
    return {k: options.get(k) for k in keys}


def _wait(procs: list[subprocess.Popen], timeout: float, folder: Path) -> str:
    """'' when every rank exited 0; else what failed first (its last stderr lines). A rank that fails stops the
    others at once (they would wait for it at a barrier until gloo's own half-hour timeout)."""
    deadline = time.monotonic() + timeout
    try:
        while True:
            codes = [proc.poll() for proc in procs]
            for rank, code in enumerate(codes):
                if code not in (None, 0):
                    err = (folder / f"rank{rank}.err").read_bytes()
                    tail = err.decode(errors="replace").strip().splitlines()[-3:]
                    return f"rank {rank} exited with {code}: {' | '.join(tail) or 'no message'}"
            if all(code == 0 for code in codes):
                return ""
            if time.monotonic() > deadline:
                return f"the ranks did not finish within {timeout:.0f} s"
            time.sleep(0.05)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _rank_main(job_path: str, rank: int) -> None:
    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp

    from engines.storage import checkpoint_state, coldfiles

    job = json.loads(Path(job_path).read_text())
    _die_with_parent(job["parent"])
    folder = Path(job["folder"])
    target = folder / "dcp"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{folder / 'rendezvous'}", rank=rank,
                            world_size=job["world"])
    try:
        state = checkpoint_state.build(job["options"], rank)
        dist.barrier()
        started = time.perf_counter()
        dcp.save(state, storage_writer=dcp.FileSystemWriter(str(target), sync_files=True))
        save_s = time.perf_counter() - started
        dist.barrier()
        out: dict[str, Any] = {"rank": rank, "save_s": save_s}
        if rank == 0:
            files = coldfiles.files_under(target)
            out["bytes_on_disk"] = sum(f.stat().st_size for f in files)
            out["cache_state"], out["cache_note"] = coldfiles.drop(files, folder)
        dist.barrier()
        restored = {k: torch.empty_like(v) for k, v in state.items()}
        started = time.perf_counter()
        dcp.load(restored, storage_reader=dcp.FileSystemReader(str(target)))
        out["load_s"] = time.perf_counter() - started
        out["same"] = checkpoint_state.same(state, restored)
        (folder / f"rank{rank}.json").write_text(json.dumps(out))
        dist.barrier()
    finally:
        dist.destroy_process_group()



def _die_with_parent(parent: int) -> None:
    """A rank outlives no benchmark: killed with it (Linux PR_SET_PDEATHSIG), or gone if it is already gone."""
    import ctypes
    import signal

    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        sys.exit(3)


if __name__ == "__main__":
    _rank_main(sys.argv[1], int(sys.argv[2]))
