"""Fixed-capacity numpy ring buffer for live data.

A run can last an hour at thousands of iterations per second; plots keep only the newest ``capacity`` values so
memory and redraw cost stay bounded whatever the run length. Storage grows geometrically up to the capacity, so a
short run or an idle series costs little.
"""

from __future__ import annotations

import numpy as np

_INITIAL_STORAGE = 1024


class RingBuffer:
    """Keeps the last ``capacity`` values appended, oldest first."""

    def __init__(self, capacity: int, dtype=float):
        if int(capacity) < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._capacity = int(capacity)
        self._dtype = np.dtype(dtype)
        self._data = np.empty(min(self._capacity, _INITIAL_STORAGE), dtype=self._dtype)
        self._start = 0  # index of the oldest value; stays 0 until the buffer first wraps
        self._len = 0

    # ---- Public API
    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        return f"RingBuffer(capacity={self._capacity}, len={self._len}, dtype={self._dtype})"

    def append(self, value) -> None:
        """Append one value (prefer ``extend``: one numpy copy per batch, not per point)."""
        self.extend(np.asarray([value], dtype=self._dtype))

    def extend(self, values) -> None:
        """Append many values; when more than ``capacity`` arrive, only the newest are kept."""
        arr = np.asarray(values, dtype=self._dtype).ravel()
        n = arr.size
        if n == 0:
            return
        cap = self._capacity
        if n >= cap:
            self._grow(cap)
            self._data[:] = arr[-cap:]
            self._start, self._len = 0, cap
            return
        self._grow(min(cap, self._len + n))
        size = self._data.size  # < cap only while nothing has wrapped, and then len + n <= size
        end = (self._start + self._len) % size
        first = min(n, size - end)
        self._data[end:end + first] = arr[:first]
        if first < n:
            self._data[:n - first] = arr[first:]
        new_len = min(cap, self._len + n)
        self._start = (self._start + self._len + n - new_len) % size
        self._len = new_len

    def values(self) -> np.ndarray:
        """All kept values, oldest first, as a new contiguous array (safe to keep or hand to a plot)."""
        return self.tail(self._len)

    def tail(self, n: int) -> np.ndarray:
        """The newest ``n`` values (fewer if fewer are kept), oldest first, as a new contiguous array."""
        n = max(0, min(int(n), self._len))
        if n == 0:
            return np.empty(0, dtype=self._dtype)
        size = self._data.size
        begin = (self._start + self._len - n) % size
        stop = begin + n
        if stop <= size:
            return self._data[begin:stop].copy()
        return np.concatenate((self._data[begin:], self._data[:stop - size]))

    def clear(self) -> None:
        """Forget every value and give the storage back."""
        self._data = np.empty(min(self._capacity, _INITIAL_STORAGE), dtype=self._dtype)
        self._start = 0
        self._len = 0

    # ---- Private API
    def _grow(self, needed: int) -> None:
        size = self._data.size
        if size >= needed:
            return
        # Only reached before the first wrap, so the kept values are exactly data[:len].
        new_size = min(self._capacity, max(needed, 2 * size))
        data = np.empty(new_size, dtype=self._dtype)
        data[:self._len] = self._data[:self._len]
        self._data = data
