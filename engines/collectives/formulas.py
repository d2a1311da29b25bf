"""Algorithm and bus bandwidth exactly as nccl-tests computes them, so our numbers read like theirs.

Source: NVIDIA/nccl-tests doc/PERFORMANCE.md and each src/<op>.cu (`<Op>GetCollByteCount`, `<Op>GetBw`).
- algbw = S / t, in GB/s of 1e9 bytes, t the time of one operation.
- S is what the op moves as a whole: for all-reduce, broadcast and reduce the buffer (count × element size); for
  all-gather, reduce-scatter and all-to-all the total buffer of all ranks (the per-rank count × element size × n;
  nccl-tests passes the per-rank count and multiplies by n in GetBw).
- busbw = algbw × factor: 2(n−1)/n for all-reduce, (n−1)/n for all-gather, reduce-scatter and all-to-all, 1 for
  broadcast and reduce. It is the rate each rank's link must carry, so it is comparable across rank counts and
  with the link's own speed.
- A requested size is split as nccl-tests splits it: all-gather, reduce-scatter and all-to-all give each rank
  (count / n) elements rounded down to a multiple of 16 bytes, so the size reported is the size that ran.
Pure arithmetic: no torch, safe in the console.
"""

from __future__ import annotations

OPS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "reduce")
FACTOR_TEXT = {"all-reduce": "2(n-1)/n", "all-gather": "(n-1)/n", "reduce-scatter": "(n-1)/n",
               "all-to-all": "(n-1)/n", "broadcast": "1", "reduce": "1"}
SPLIT_OPS = ("all-gather", "reduce-scatter", "all-to-all")  # S is the total over ranks
ALIGN_BYTES = 16  # nccl-tests rounds each rank's share down to this

__all__ = ["OPS", "FACTOR_TEXT", "busbw_factor", "shape", "algbw_gbs", "busbw_gbs", "bandwidths"]


# ---- Public API
def busbw_factor(op: str, ranks: int) -> float:
    """The factor busbw = algbw × factor for `op` with `ranks` ranks (nccl-tests' <Op>GetBw)."""
    _check(op, ranks)
    if op == "all-reduce":
        return 2.0 * (ranks - 1) / ranks
    if op in SPLIT_OPS:
        return (ranks - 1) / ranks
    return 1.0


def shape(op: str, size_bytes: int, ranks: int, element_size: int = 4) -> dict[str, int]:
    """What one operation of a requested `size_bytes` moves, as nccl-tests' <Op>GetCollByteCount splits it:
    `param_count` (the count passed to the call: per rank for the split ops), `send_count`, `recv_count`
    (elements per rank), `count` (elements of S) and `size_bytes` (S, the size that is reported)."""
    _check(op, ranks)
    if element_size < 1 or size_bytes < 0:
        raise ValueError(f"size {size_bytes} B of {element_size}-byte elements is not a size")
    count = size_bytes // element_size
    if op in SPLIT_OPS:
        per_rank = (count // ranks) & ~(max(ALIGN_BYTES // element_size, 1) - 1)
        send, recv = {"all-gather": (per_rank, per_rank * ranks), "reduce-scatter": (per_rank * ranks, per_rank),
                      "all-to-all": (per_rank * ranks, per_rank * ranks)}[op]
        return {"param_count": per_rank, "send_count": send, "recv_count": recv, "count": per_rank * ranks,
                "size_bytes": per_rank * ranks * element_size}
    return {"param_count": count, "send_count": count, "recv_count": count, "count": count,
            "size_bytes": count * element_size}


def algbw_gbs(op: str, param_count: int, element_size: int, seconds: float, ranks: int) -> float:
    """nccl-tests' algBw: S / t in GB/s (1e9 bytes), S from the count passed to the call (see the docstring)."""
    _check(op, ranks)
    if not seconds > 0:
        raise ValueError(f"a time of {seconds!r} s gives no bandwidth")
    total = param_count * element_size * (ranks if op in SPLIT_OPS else 1)
    return total / 1.0e9 / seconds


def busbw_gbs(op: str, param_count: int, element_size: int, seconds: float, ranks: int) -> float:
    """nccl-tests' busBw: algbw × busbw_factor(op, ranks)."""
    return algbw_gbs(op, param_count, element_size, seconds, ranks) * busbw_factor(op, ranks)


def bandwidths(op: str, param_count: int, element_size: int, seconds: float, ranks: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s."""
    algbw = algbw_gbs(op, param_count, element_size, seconds, ranks)
    return algbw, algbw * busbw_factor(op, ranks)


# ---- Private API
def _check(op: str, ranks: int) -> None:
    if op not in OPS:
        raise ValueError(f"unknown collective {op!r}: one of {', '.join(OPS)}")
    if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1:
        raise ValueError(f"{ranks!r} ranks: a collective needs a whole number ≥ 1")
