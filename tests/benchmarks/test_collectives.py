"""Collectives (issue 22): the console's gloo all-reduce busbw against a bare torch.distributed loop, same run.

The console's figure is what its worker computes: engines.collectives.bench.run (two spawned gloo ranks, warm-up,
trials of timed all-reduces after a barrier, each trial the slowest rank, the median trial, busbw = S/t ×
2(n−1)/n). The baseline is the plainest loop that measures the same thing: two persistent gloo ranks started once
here, each timing `dist.all_reduce` back to back after a barrier, combined the same way (the slowest rank per trial,
the median trial) so the ratio shows what the instrument adds to or takes from the measurement, not a different
statistic. Rounds alternate in ABBA order (the console first in even rounds) and each block of two rounds gives one
ratio (bench_stats.balanced_ratios), so going first or second cancels. Goal: the median ratio within 0.9–1.1, held
with its distribution-free 95% interval. 4 MiB: large enough that gloo's ring, not its per-call latency, sets the
time on this machine. The whole file takes ~60 s here (each console round starts its ranks: ~2 s); 24 rounds,
because with 8 ratios or fewer the median's 95% interval is their whole range, and one noisy round decides it.
"""

from __future__ import annotations

import datetime
import socket
import statistics
import time

import pytest
from bench_stats import balanced_ratios, median_with_interval
from bench_verdict import Goal, judge

SIZE = 4 << 20
WARMUP, TRIALS, ITERS = 5, 5, 20
ROUNDS = 24  # 12 ABBA blocks: the 95% median interval leaves out the two lowest and two highest ratios
AGREEMENT = Goal.within(1.0, 0.10, "×")


def _bare_rank(rank: int, port: int, commands, results) -> None:
    """A bare torch.distributed rank: for each command, warm up, then time TRIALS × ITERS all-reduces."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=120))
    buf = torch.zeros(SIZE // 4, dtype=torch.float32)
    while commands.get() == "round":
        for _ in range(WARMUP):
            dist.all_reduce(buf)
        times = []
        for _ in range(TRIALS):
            dist.barrier()
            started = time.perf_counter()
            for _ in range(ITERS):
                dist.all_reduce(buf)
            times.append((time.perf_counter() - started) / ITERS)
        results.put((rank, times))
    dist.destroy_process_group()


class BarePair:
    """Two bare ranks kept alive across rounds (they wait on a queue between rounds, using no CPU)."""

    def __enter__(self):
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.commands = [ctx.Queue() for _ in range(2)]
        self.results = ctx.Queue()
        self.procs = [ctx.Process(target=_bare_rank, args=(r, port, self.commands[r], self.results), daemon=True)
                      for r in range(2)]
        for proc in self.procs:
            proc.start()
        return self

    def busbw_gbs(self) -> float:
        for queue in self.commands:
            queue.put("round")
        times = dict(self.results.get(timeout=120) for _ in range(2))
        seconds = statistics.median(max(times[0][i], times[1][i]) for i in range(TRIALS))
        return SIZE / seconds / 1e9 * (2 * (2 - 1) / 2)

    def __exit__(self, *exc):
        for queue in self.commands:
            queue.put("stop")
        for proc in self.procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()


def console_busbw_gbs() -> float:
    from engines.collectives.bench import run

    result = run({"ops": "all-reduce", "sizes": [SIZE], "warmup": WARMUP, "trials": TRIALS, "iters": ITERS,
                  "ranks": 2, "backend": "gloo"})
    return result["ops"]["all-reduce"][0]["busbw_gbs"]


def test_console_busbw_matches_a_bare_torch_distributed_loop(bench):
    pytest.importorskip("torch.distributed")
    started = time.perf_counter()
    ours, theirs = [], []
    with BarePair() as bare:
        bare.busbw_gbs()  # the pair's first round joins the group and warms the ring: not counted
        for round_ in range(ROUNDS):
            order = ("console", "bare") if round_ % 2 == 0 else ("bare", "console")
            for side in order:
                if side == "console":
                    ours.append(console_busbw_gbs())
                else:
                    theirs.append(bare.busbw_gbs())
    ratios = balanced_ratios(ours, theirs)
    median, interval = median_with_interval(ratios)
    bench.record(judge("collectives: gloo all-reduce busbw, console ÷ bare torch.distributed (2 ranks, 4 MiB)",
                       median, interval, AGREEMENT, samples=len(ratios),
                       console_busbw_gbs=round(statistics.median(ours), 4),
                       bare_busbw_gbs=round(statistics.median(theirs), 4),
                       ratios=[round(r, 4) for r in ratios], rounds=ROUNDS,
                       seconds=round(time.perf_counter() - started, 1)))
