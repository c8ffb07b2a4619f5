"""Mix several 16 kHz mono sources (e.g. microphone + system audio) into one stream.

Usage::

    m = Mixer(["mic", "sys"])
    m.push("mic", a); m.push("sys", b)
    out = m.pull()              # as much as every source can supply, summed and clipped

Sources run on independent clocks and one may stall (a device that disappeared); once any source
has more than ``max_skew_ms`` buffered, the missing part of the others is taken as silence so the
output never waits on a dead device. ``pull(final=True)`` flushes everything. Not thread-safe:
one consumer thread owns it.

Clock drift: two devices' clocks differ by tens to hundreds of parts per million (a USB headset
beside a laptop's own audio), so one source slowly gets ahead of the other. Left alone, the lead
would grow until the skew limit and then put half a second of silence into the slower source,
mid-word as likely as not, while the faster one's audio waited in here (lag). Instead, once a
source has stayed at least ``DRIFT_MIN_MS`` ahead of another through a whole ``DRIFT_WINDOW_S`` of
output, the one behind is stretched by that lead, at most ``MAX_STRETCH`` of its length at a time
(0.6 %: a pitch change far below what a listener or the model notices); nothing of it is lost. A
stretch never takes a source's index past the newest sample any source has really sent, so the
output never runs ahead of the captured audio (the lag figure) and timestamps stay on a device's
clock. ``restart_drift_watch`` tells it that a lead seen so far is not drift.

Echo: ``cancellers`` maps a microphone's id to its ``echo.EchoCanceller``; each pull takes out of
that microphone's part what the other sources (the system audio, not in ``cancellers``) play in
the same stretch of output, before the parts are summed. A canceller that fails is dropped (that
microphone goes on as it is) and its error is left in ``problems`` for the capture to report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from captionist.audio.echo import EchoCanceller

SAMPLE_RATE = 16000
DRIFT_WINDOW_S = 10.0  # a lead must last this long (of mixed output) to count as drift
DRIFT_MIN_MS = 40  # and be at least this: more than a device block or two of jitter
MAX_STRETCH = 0.006  # a source behind is slowed by at most this fraction of what it sends


def stretch(pcm: np.ndarray, extra: int) -> np.ndarray:
    """``pcm`` resampled (linearly) to ``extra`` more samples, first and last sample kept."""
    n = pcm.size
    if extra <= 0 or n == 0:
        return pcm
    if n == 1:
        return np.full(1 + extra, pcm[0], np.float32)
    at = np.linspace(0.0, n - 1, n + extra)
    return np.interp(at, np.arange(n), pcm).astype(np.float32)


class Mixer:
    def __init__(
        self,
        source_ids: list[str],
        max_skew_ms: int = 500,
        cancellers: Mapping[str, EchoCanceller] | None = None,
    ) -> None:
        if not source_ids:
            raise ValueError("Mixer needs at least one source")
        self._cancellers = dict(cancellers or {})
        self.problems: list[str] = []  # why a canceller was dropped (the capture reports them)
        self._fifos: dict[str, list[np.ndarray]] = {sid: [] for sid in source_ids}
        self._sizes: dict[str, int] = dict.fromkeys(source_ids, 0)
        self._max_skew = max_skew_ms * SAMPLE_RATE // 1000
        self._next: dict[str, int] = dict.fromkeys(source_ids, 0)  # output index of its next push
        self._sent: dict[str, int] = dict.fromkeys(source_ids, 0)  # samples it pushed itself
        self._owed: dict[str, int] = dict.fromkeys(source_ids, 0)  # stretch still to put in
        self._lows: dict[str, int] = {}  # least each source had buffered after a pull, this window
        self._window = 0  # output samples pulled since the drift watch (re)started
        self.stretched = 0  # samples put in by stretching, all sources (for tests and diagnosis)

    def next_index(self, source_id: str) -> int:
        """Where in the mixed output (counted from the first sample ever pulled) the next sample
        pushed for ``source_id`` will be: what it pushed so far plus the silence taken for it and
        what stretching put in."""
        return self._next[source_id]

    def push(self, source_id: str, pcm: np.ndarray) -> None:
        """Queue float32 mono samples from one source."""
        if not pcm.size:
            return
        pcm = pcm.astype(np.float32, copy=False)
        self._sent[source_id] += pcm.size
        owed = self._owed[source_id]
        if owed:
            extra = min(owed, math.ceil(pcm.size * MAX_STRETCH))
            pcm = stretch(pcm, extra)
            self._owed[source_id] -= extra
            self.stretched += extra
            if not any(self._owed.values()):
                self.restart_drift_watch()  # the lead it made up for is gone: measure afresh
        self._fifos[source_id].append(pcm)
        self._sizes[source_id] += pcm.size
        self._next[source_id] += pcm.size

    def restart_drift_watch(self) -> None:
        """Forget the leads seen so far: they are not drift (e.g. a quiet source filled in by the
        clock lags on purpose until its audio comes back)."""
        self._lows.clear()
        self._window = 0

    def _take(self, source_id: str, n: int) -> np.ndarray:
        buf = np.concatenate(self._fifos[source_id]) if self._fifos[source_id] else np.zeros(0, np.float32)
        head, rest = buf[:n], buf[n:]
        self._fifos[source_id] = [rest] if rest.size else []
        self._sizes[source_id] = rest.size
        if head.size < n:  # silence for a source that has nothing: its later samples come after
            self._next[source_id] += n - head.size
            self._owed[source_id] = 0  # the silence made up for any lead
            head = np.concatenate([head, np.zeros(n - head.size, np.float32)])
        return head

    def pull(self, final: bool = False) -> np.ndarray:
        """Return the mixed samples ready now (possibly empty)."""
        sizes = self._sizes.values()
        most = max(sizes)
        padding = final or most > self._max_skew
        n = most if padding else min(sizes)
        if n == 0:
            return np.zeros(0, np.float32)
        if len(self._fifos) == 1:
            return self._take(next(iter(self._fifos)), n)
        parts = {sid: self._take(sid, n) for sid in self._fifos}
        if self._cancellers:
            self._cancel_echo(parts)
        mixed = np.zeros(n, np.float32)
        for part in parts.values():
            mixed += part
        if padding:
            self.restart_drift_watch()
        else:
            self._watch_drift(n)
        return np.clip(mixed, -1.0, 1.0)

    def _cancel_echo(self, parts: dict[str, np.ndarray]) -> None:
        far = np.zeros(next(iter(parts.values())).size, np.float32)  # what the loudspeakers play
        for sid, part in parts.items():
            if sid not in self._cancellers:
                far += part
        for sid, canceller in list(self._cancellers.items()):
            try:
                parts[sid] = canceller.process(parts[sid], far)
            except Exception as exc:  # the microphone goes on with its echo rather than not at all
                del self._cancellers[sid]
                self.problems.append(f"echo cancellation stopped: {exc}")

    def _watch_drift(self, pulled: int) -> None:
        """After a pull: note how far ahead each source stays; at the end of a window with no
        stretch under way, owe each source behind the leader the lead it kept all along."""
        for sid, size in self._sizes.items():
            self._lows[sid] = min(self._lows.get(sid, size), size)
        self._window += pulled
        if self._window < DRIFT_WINDOW_S * SAMPLE_RATE or any(self._owed.values()):
            return
        lead = max(self._lows.values())
        newest = max(self._sent.values())
        for sid, low in self._lows.items():
            behind = min(lead - low, newest - self._next[sid])  # never past what was really sent
            if behind >= DRIFT_MIN_MS * SAMPLE_RATE // 1000:
                self._owed[sid] = behind
        self.restart_drift_watch()
