"""Mix several 16 kHz mono sources (e.g. microphone + system audio) into one stream.

Usage::

    m = Mixer(["mic", "sys"])
    m.push("mic", a); m.push("sys", b)
    out = m.pull()              # as much as every source can supply, summed and clipped

Sources run on independent clocks and one may stall (a device that disappeared); once any source
has more than ``max_skew_ms`` buffered, the missing part of the others is taken as silence so the
output never waits on a dead device. ``pull(final=True)`` flushes everything. Not thread-safe:
one consumer thread owns it.
"""

from __future__ import annotations

import numpy as np

SAMPLE_RATE = 16000


class Mixer:
    def __init__(self, source_ids: list[str], max_skew_ms: int = 500) -> None:
        if not source_ids:
            raise ValueError("Mixer needs at least one source")
        self._fifos: dict[str, list[np.ndarray]] = {sid: [] for sid in source_ids}
        self._sizes: dict[str, int] = dict.fromkeys(source_ids, 0)
        self._max_skew = max_skew_ms * SAMPLE_RATE // 1000
        self._next: dict[str, int] = dict.fromkeys(source_ids, 0)  # output index of its next push

    def next_index(self, source_id: str) -> int:
        """Where in the mixed output (counted from the first sample ever pulled) the next sample
        pushed for ``source_id`` will be: what it pushed so far plus the silence taken for it."""
        return self._next[source_id]

    def push(self, source_id: str, pcm: np.ndarray) -> None:
        """Queue float32 mono samples from one source."""
        if pcm.size:
            self._fifos[source_id].append(pcm.astype(np.float32, copy=False))
            self._sizes[source_id] += pcm.size
            self._next[source_id] += pcm.size

    def _take(self, source_id: str, n: int) -> np.ndarray:
        buf = np.concatenate(self._fifos[source_id]) if self._fifos[source_id] else np.zeros(0, np.float32)
        head, rest = buf[:n], buf[n:]
        self._fifos[source_id] = [rest] if rest.size else []
        self._sizes[source_id] = rest.size
        if head.size < n:  # silence for a source that has nothing: its later samples come after
            self._next[source_id] += n - head.size
            head = np.concatenate([head, np.zeros(n - head.size, np.float32)])
        return head

    def pull(self, final: bool = False) -> np.ndarray:
        """Return the mixed samples ready now (possibly empty)."""
        sizes = self._sizes.values()
        most = max(sizes)
        n = most if final or most > self._max_skew else min(sizes)
        if n == 0:
            return np.zeros(0, np.float32)
        if len(self._fifos) == 1:
            return self._take(next(iter(self._fifos)), n)
        mixed = np.zeros(n, np.float32)
        for sid in self._fifos:
            mixed += self._take(sid, n)
        return np.clip(mixed, -1.0, 1.0)
