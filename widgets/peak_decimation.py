"""Peak-preserving decimation of a live (time, value) stream, kept up to date as batches arrive.

An hour-long run holds a million latencies; redrawing them at 10 Hz must not touch all of them every frame. So a
series keeps, next to its samples, a pyramid of per-block minima and maxima: level k holds one (min, max) per block
of 2**k consecutive samples, blocks aligned to the sample's position in the stream. Appending a batch extends each
level by the blocks it completes (O(batch), amortized), and drawing any span picks the level whose blocks fit the
pixels: at most `buckets` (min, max) pairs, so about two points per pixel, whatever the span. Every sample lies in
one drawn block, so a single slow iteration among a million still reaches its block's maximum: spikes survive.

Blocks are aligned to the stream, not to the view, so as the data grows the drawn shape does not shimmer. NaN
(a sample that could not be read) is skipped inside a block; a block that holds only NaN stays NaN, a gap. Pure
numpy, no Qt: unit-tested on its own.
"""

from __future__ import annotations

import math

import numpy as np

# Blocks smaller than this are computed from the samples when drawn (at most `buckets * FINEST` of them, cheap);
# storing them would cost more memory than it saves time.
FINEST_LEVEL = 4
_INITIAL_STORAGE = 1024
_EMPTY = np.empty(0)


class _Ring:
    """The newest `capacity` values of a stream, addressed by absolute position (values appended before it).

    Storage grows geometrically up to the capacity, so a short run or an idle series costs little.
    """

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self.clear()

    def clear(self) -> None:
        self._data = np.empty(min(self.capacity, _INITIAL_STORAGE))
        self.end = 0  # absolute position after the newest value
        self.kept = 0

    @property
    def first(self) -> int:
        return self.end - self.kept

    def extend(self, values: np.ndarray) -> None:
        n = values.size
        if n == 0:
            return
        cap = self.capacity
        if n >= cap:  # only the newest `cap` survive: the storage is rewritten whole
            if self._data.size < cap:
                self._data = np.empty(cap)
            self.end += n
            self.kept = cap
            self._write(self.end - cap, values[-cap:])
            return
        size = self._data.size
        if size < cap and self.end + n > size:
            # Only reached before the first wrap (the storage is full-size from then on): data[:end] is everything.
            data = np.empty(min(cap, max(self.end + n, 2 * size)))
            data[:self.end] = self._data[:self.end]
            self._data = data
        self._write(self.end, values)
        self.end += n
        self.kept = min(cap, self.kept + n)

    def view(self, a: int, b: int) -> np.ndarray:
        """Values at positions [a, b) (first <= a <= b <= end): a view when contiguous, else a new array."""
        if b <= a:
            return _EMPTY
        size = self._data.size
        start = a % size
        stop = start + (b - a)
        if stop <= size:
            return self._data[start:stop]
        return np.concatenate((self._data[start:], self._data[:stop - size]))

    def take(self, positions: np.ndarray) -> np.ndarray:
        return self._data[positions % self._data.size]

    def search(self, value: float, side: str) -> int:
        """np.searchsorted over the kept values (ascending), as an absolute position."""
        size = self._data.size
        start = self.first % size
        if start + self.kept <= size:
            return self.first + int(np.searchsorted(self._data[start:start + self.kept], value, side))
        head, rest = self._data[start:], self._data[:self.kept - (size - start)]
        past_head = head[-1] < value if side == "left" else head[-1] <= value
        if past_head:
            return self.first + head.size + int(np.searchsorted(rest, value, side))
        return self.first + int(np.searchsorted(head, value, side))

    def _write(self, position: int, values: np.ndarray) -> None:
        size = self._data.size
        start = position % size
        first = min(values.size, size - start)
        self._data[start:start + first] = values[:first]
        self._data[:values.size - first] = values[first:]


class PeakSeries:
    """The newest `capacity` (time, value) samples of a stream, drawable at any span from at most `buckets` blocks.

    Times are expected in ascending order (seconds since the run started); if a batch breaks the order, drawing
    still keeps every peak but can no longer clip to a view, and draws the whole series.
    """

    def __init__(self, capacity: int):
        if int(capacity) < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._capacity = int(capacity)
        self._t = _Ring(self._capacity)
        self._y = _Ring(self._capacity)
        # level k -> (minima, maxima) of the blocks of 2**k samples, up to the largest block that fits the capacity;
        # each keeps every block whose samples are all still kept (a capacity below the finest block has no levels:
        # it is always reduced when drawn).
        top = math.floor(math.log2(self._capacity))
        self._levels = {k: (_Ring((self._capacity >> k) + 2), _Ring((self._capacity >> k) + 2))
                        for k in range(FINEST_LEVEL, top + 1)}
        self._ordered = True
        self.version = 0  # changes with every append or clear: a drawn picture is stale when it differs

    # ---- Public API
    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def ordered(self) -> bool:
        return self._ordered

    @property
    def first(self) -> int:
        """Stream position of the oldest kept sample (samples appended before it since the last clear)."""
        return self._y.first

    @property
    def end(self) -> int:
        """Samples appended since the last clear (the ring may keep fewer)."""
        return self._y.end

    def __len__(self) -> int:
        return self._y.kept

    def extend(self, t: np.ndarray, y: np.ndarray) -> None:
        """Append a batch; when more than `capacity` samples are held, the oldest go."""
        t = np.asarray(t, dtype=float).ravel()
        y = np.asarray(y, dtype=float).ravel()
        if t.shape != y.shape:
            raise ValueError(f"times and values differ in length: {t.size} != {y.size}")
        if t.size == 0:
            return
        if self._ordered:
            after_last = len(self) == 0 or t[0] >= self._t.view(self._t.end - 1, self._t.end)[0]
            self._ordered = bool(after_last and np.isfinite(t[0]) and np.all(t[1:] >= t[:-1]))
        self._extend_levels(y)
        self._t.extend(t)
        self._y.extend(y)
        self.version += 1

    def clear(self) -> None:
        self._t.clear()
        self._y.clear()
        for low, high in self._levels.values():
            low.clear()
            high.clear()
        self._ordered = True
        self.version += 1

    def values(self) -> tuple[np.ndarray, np.ndarray]:
        """All kept (times, values), oldest first, as new arrays."""
        return self.get(self.first, self.end)

    def tail(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The newest `n` (times, values), oldest first, as new arrays."""
        return self.get(self.end - max(0, int(n)), self.end)

    def get(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """(times, values) at stream positions [a, b), clipped to what is kept, as new arrays."""
        a, b = max(int(a), self.first), min(int(b), self.end)
        return np.array(self._t.view(a, b)), np.array(self._y.view(a, b))

    def values_between(self, a: int, b: int) -> np.ndarray:
        """The values at stream positions [a, b), clipped to what is kept, as a new array."""
        return np.array(self._y.view(max(int(a), self.first), min(int(b), self.end)))

    def time_at(self, position: int) -> float:
        if not self.first <= position < self.end:
            raise IndexError(f"stream position {position} is not kept (kept: {self.first}..{self.end - 1})")
        return float(self._t.view(position, position + 1)[0])

    def last_time(self) -> float | None:
        return self.time_at(self.end - 1) if len(self) else None

    def peaks(self, x0: float = -math.inf, x1: float = math.inf, buckets: int = 2000,
              end: int | None = None, upper: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """What to draw for the span [x0, x1] at `buckets` pixels: the samples themselves when they fit in two
        points per bucket, else each block's maximum then minimum at the block's middle time, between the span's
        first and last samples. One sample each side of the span is included, so a line runs to the edges.
        `end` (a stream position) leaves out what arrived after it: a view change redraws what was shown.
        `upper` keeps only each block's maximum, one point a block: the upper envelope, for a line whose rises are
        what matters (a running p99) and whose zig-zag would cost a dashed pen more than everything else."""
        first = self.first
        end = self.end if end is None else min(int(end), self.end)
        if end <= first:
            return _EMPTY.copy(), _EMPTY.copy()
        buckets = max(1, int(buckets))
        i0, i1 = first, end
        if self._ordered and (x0 > -math.inf or x1 < math.inf):
            i1 = min(end, self._t.search(x1, "right") + 1)
            i0 = min(max(first, self._t.search(x0, "left") - 1), i1 - 1)
        n = i1 - i0
        if n <= 2 * buckets:
            return np.array(self._t.view(i0, i1)), np.array(self._y.view(i0, i1))
        level = max(0, math.ceil(math.log2(n / buckets)))
        level = min(level, max(self._levels, default=level))
        size = 1 << level
        b0 = -(-i0 // size)  # whole blocks inside [i0, i1): b0 .. b1 - 1
        b1 = max(b0, i1 // size)
        head_end = min(b0 * size, i1)
        if level in self._levels:
            low_ring, high_ring = self._levels[level]
            low, high = low_ring.view(b0, b1), high_ring.view(b0, b1)
        else:  # finer than stored: reduce the samples now (fewer than buckets * 2**FINEST_LEVEL of them)
            blocks = self._y.view(b0 * size, b1 * size).reshape(b1 - b0, size)
            low, high = np.fmin.reduce(blocks, axis=1), np.fmax.reduce(blocks, axis=1)
        middles = np.arange(b0, b1) * size + size // 2
        parts_t = [self._t.take(np.array([i0]))]
        parts_y = [self._y.view(i0, i0 + 1)]
        self._partial(i0, head_end, parts_t, parts_y, upper)
        if upper:
            parts_t.append(self._t.take(middles))
            parts_y.append(np.array(high))
        else:
            pairs_y = np.empty(2 * low.size)
            pairs_y[0::2], pairs_y[1::2] = high, low
            parts_t.append(np.repeat(self._t.take(middles), 2))
            parts_y.append(pairs_y)
        self._partial(max(b1 * size, head_end), i1, parts_t, parts_y, upper)
        parts_t.append(self._t.take(np.array([i1 - 1])))
        parts_y.append(self._y.view(i1 - 1, i1))
        return np.concatenate(parts_t), np.concatenate(parts_y)

    # ---- Private API
    def _partial(self, a: int, b: int, parts_t: list, parts_y: list, upper: bool) -> None:
        """The (max, min) of the samples [a, b) at their middle time: a block cut by the span's edge."""
        if b <= a:
            return
        values = self._y.view(a, b)
        middle = self._t.take(np.array([(a + b) // 2]))
        if upper:
            parts_t.append(middle)
            parts_y.append(np.array([np.fmax.reduce(values)]))
        else:
            parts_t.append(np.repeat(middle, 2))
            parts_y.append(np.array([np.fmax.reduce(values), np.fmin.reduce(values)]))

    def _extend_levels(self, y: np.ndarray) -> None:
        """Add the blocks this batch completes, level by level (before the samples go in: a batch larger than the
        capacity would push out the samples an open block still needs)."""
        if not self._levels:
            return
        end = self._y.end
        open_start = (end >> FINEST_LEVEL) << FINEST_LEVEL
        values = np.concatenate((self._y.view(open_start, end), y)) if open_start < end else y
        count = values.size >> FINEST_LEVEL
        if count == 0:
            return
        blocks = values[:count << FINEST_LEVEL].reshape(count, 1 << FINEST_LEVEL)
        low, high = np.fmin.reduce(blocks, axis=1), np.fmax.reduce(blocks, axis=1)
        for level in range(FINEST_LEVEL, max(self._levels) + 1):
            low_ring, high_ring = self._levels[level]
            above = self._levels.get(level + 1)
            done = low_ring.end
            # A block of this level not yet paired into the next one (at most one) pairs with the first new one.
            pair_start = above[0].end << 1 if above is not None else done
            carry_low = np.array(low_ring.view(pair_start, done))
            carry_high = np.array(high_ring.view(pair_start, done))
            low_ring.extend(low)
            high_ring.extend(high)
            if above is None:
                return
            if carry_low.size:
                low, high = np.concatenate((carry_low, low)), np.concatenate((carry_high, high))
            pairs = low.size >> 1
            if pairs == 0:
                return
            low = np.fmin(low[0:2 * pairs:2], low[1:2 * pairs:2])
            high = np.fmax(high[0:2 * pairs:2], high[1:2 * pairs:2])
