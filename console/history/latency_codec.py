"""Per-iteration latencies as compact blobs: a history must hold years of runs at thousands of iterations/s.

Why this encoding: a row per iteration costs ~98 bytes in SQLite, and reading a million back takes over a
second. Each chunk (one worker batch, ~100 ms of iterations) becomes one blob holding two integer streams,
exact to the nanosecond:
- the latency of each iteration;
- the gap between an iteration's start and the previous iteration's end (near-constant in a closed loop, small
  and sometimes negative when queries overlap), from which every start time is rebuilt by a running sum.
Both streams are zigzag-coded (so small negatives stay small), stored as 4-byte words when they fit (8 otherwise),
byte-shuffled (the high bytes, mostly zero, line up) and deflated. Decoding is numpy on whole arrays.
Format, little-endian: magic b"LC", version 1, word size, count (uint32), then the zlib stream of the latency
words followed by the gap words. The chunk's first start time is a column of its own (readable in SQL).
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

MAGIC = b"LC"
VERSION = 1
_HEADER = struct.Struct("<2sBBI")
_LEVEL = 6


def encode(t_ns: np.ndarray, latency_ns: np.ndarray) -> tuple[int, bytes]:
    """(first start time, blob) for one chunk of iterations in arrival order; both int64 arrays of equal length."""
    t = np.asarray(t_ns, dtype=np.int64)
    lat = np.asarray(latency_ns, dtype=np.int64)
    if t.shape != lat.shape or t.ndim != 1 or t.size == 0:
        raise ValueError(f"a latency chunk needs two equal, non-empty 1-D arrays, got {t.shape} and {lat.shape}")
    gaps = np.empty_like(t)
    gaps[0] = 0
    gaps[1:] = t[1:] - (t[:-1] + lat[:-1])
    words = np.concatenate([_zigzag(lat), _zigzag(gaps)])
    size = 4 if int(words.max()) < 1 << 32 else 8
    shuffled = words.astype(f"<u{size}").view(np.uint8).reshape(-1, size).T.tobytes()
    return int(t[0]), _HEADER.pack(MAGIC, VERSION, size, t.size) + zlib.compress(shuffled, _LEVEL)


def decode(t0_ns: int, blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(t_ns, latency_ns) int64 arrays of one chunk."""
    magic, version, size, count = _HEADER.unpack_from(blob)
    if magic != MAGIC or version != VERSION or size not in (4, 8):
        raise ValueError(f"not a latency chunk this build reads (magic {magic!r}, version {version}, word {size})")
    raw = np.frombuffer(zlib.decompress(blob[_HEADER.size:]), dtype=np.uint8)
    words = raw.reshape(size, 2 * count).T.copy().view(f"<u{size}").ravel().astype(np.uint64)
    lat, gaps = _unzigzag(words[:count]), _unzigzag(words[count:])
    t = np.empty(count, dtype=np.int64)
    t[0] = t0_ns
    if count > 1:
        steps = lat[:-1] + gaps[1:]
        np.cumsum(steps, out=t[1:])
        t[1:] += t0_ns
    return t, lat


def _zigzag(values: np.ndarray) -> np.ndarray:
    v = values.astype(np.int64)
    return ((v << 1) ^ (v >> 63)).view(np.uint64)


def _unzigzag(words: np.ndarray) -> np.ndarray:
    w = words.astype(np.uint64)
    return ((w >> np.uint64(1)).view(np.int64)) ^ -((w & np.uint64(1)).view(np.int64))
