"""How far behind the captions are (the lag figure) and what the worker does when it falls behind.

Usage::

    policy = LoadPolicy()                                   # thresholds, in ms of audio
    governor = LoadGovernor(policy, latencies_ms=(80, 160, 560, 1120), chosen_ms=160)
    decision = governor.decide(backlog=..., captured=...)   # worker thread, between feeds
    meter = LagMeter(policy, captured=capture.captured_samples, ledger=lambda: worker.ledger)
    reading = meter.read()                                  # any thread, e.g. a GUI timer

Everything is counted in samples at 16 kHz, never guessed from the wall clock:

* ``captured`` C: samples the capture callbacks accepted (what waits in the capture queue included);
* ``fed`` F: samples handed to ``Stream.feed`` (counted when the call starts);
* ``decoded`` D: samples whose ``feed`` returned, minus what the engine still holds back
  (``StreamUpdate.lag_ms``: received but not yet decoded);
* ``shed`` S: samples the policy dropped.

``backlog = C - F - S`` is the audio waiting to be fed (capture queue and worker backlog);
``lag = C - D - S`` is the audio captured but not yet decoded: the backlog, the chunk inside a
running ``feed`` and the engine's own latency. Both grow while the worker is blocked in the engine,
since C comes from the capture side. Where decoded captions wait to be shown (``CaptionHold``
holds them until the transcript file has them), D counts only as far as the screen is current.

Policy, in order of preference (``LoadGovernor.decide``):

1. backlog above ``slow_ms`` and still growing (larger than ``trend_ms`` of audio ago, so a burst
   that a fast engine is already draining, e.g. audio queued while a model loaded, does not count):
   switch the stream to a larger latency (the next model choice at least twice the current one,
   else the largest); larger chunks cost less compute per second of audio (FastConformer:
   per-chunk fixed cost). Another step only after ``step_every_ms`` more audio.
2. backlog above ``warn_ms``: ``LagState.WARNING``, with the seconds until shedding at the current
   growth (from sample counts).
3. backlog above ``max_lag_ms``: the last resort, drop the oldest waiting audio so that ``keep_ms``
   remains; the worker reports it as a gap.
4. backlog under ``restore_below_ms`` for ``restore_after_ms`` of audio: step back towards the
   latency the user chose; every later raise doubles the calm needed, so a machine that cannot keep
   up at the chosen latency does not oscillate.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

SAMPLE_RATE = 16000


def samples_of(ms: int) -> int:
    return ms * SAMPLE_RATE // 1000


def ms_of(samples: int) -> int:
    return samples * 1000 // SAMPLE_RATE


class LagState(enum.Enum):
    OK = "ok"  # keeping up
    CATCHING_UP = "catching_up"  # running at a larger latency than chosen, to keep up
    WARNING = "warning"  # the backlog passed warn_ms: audio will be skipped if it keeps growing
    SHEDDING = "shedding"  # audio was skipped within the last shed_hold_ms of audio


class LoadAction(enum.Enum):
    NONE = "none"
    RAISE_LATENCY = "raise_latency"
    RESTORE_LATENCY = "restore_latency"
    SHED = "shed"


@dataclass(frozen=True)
class LoadPolicy:
    """Thresholds in ms of audio (backlog: audio waiting to be fed). ``slow_down=False`` sheds only."""

    slow_ms: int = 1500
    warn_ms: int = 2500
    max_lag_ms: int = 4000
    keep_ms: int = 1000
    max_feed_ms: int = 960
    step_every_ms: int = 2000
    restore_below_ms: int = 500
    restore_after_ms: int = 30000
    shed_hold_ms: int = 5000
    trend_ms: int = 5000
    slow_down: bool = True
    stats_interval_s: float = 0.25

    def __post_init__(self) -> None:
        if not 0 <= self.keep_ms < self.max_lag_ms:
            raise ValueError(
                f"LoadPolicy: need 0 <= keep_ms < max_lag_ms; got {self.keep_ms}, {self.max_lag_ms}"
            )
        if not 0 < self.slow_ms <= self.warn_ms <= self.max_lag_ms:
            raise ValueError(
                "LoadPolicy: need 0 < slow_ms <= warn_ms <= max_lag_ms; "
                f"got {self.slow_ms}, {self.warn_ms}, {self.max_lag_ms}"
            )
        for name in ("max_feed_ms", "step_every_ms", "restore_after_ms", "trend_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"LoadPolicy: {name} must be positive; got {getattr(self, name)}")


@dataclass(frozen=True)
class LoadDecision:
    action: LoadAction
    latency_ms: int | None = None  # RAISE_LATENCY / RESTORE_LATENCY: the latency to switch to
    shed_samples: int = 0  # SHED: how many of the oldest waiting samples to drop


NO_ACTION = LoadDecision(LoadAction.NONE)


def next_latency(latencies_ms: Sequence[int], current_ms: int) -> int | None:
    """The smallest choice at least twice ``current_ms``, else the largest above it, else None."""
    above = sorted(x for x in latencies_ms if x > current_ms)
    if not above:
        return None
    return next((x for x in above if x >= 2 * current_ms), above[-1])


class LoadGovernor:
    """The worker's load decisions (one thread). Positions are in captured samples (the session clock)."""

    def __init__(self, policy: LoadPolicy, latencies_ms: Sequence[int], chosen_ms: int) -> None:
        self.policy = policy
        self._latencies = sorted(set(int(x) for x in latencies_ms) | {chosen_ms})
        self.chosen_ms = chosen_ms
        self.current_ms = chosen_ms
        self._last_raise: int | None = None
        self._calm_since: int | None = None
        self._calm_needed = samples_of(policy.restore_after_ms)
        self._restored = False
        self._trail: deque[tuple[int, int]] = deque()  # (captured, backlog) at recent decisions

    def choose(self, latency_ms: int) -> None:
        """The user picked ``latency_ms``: it becomes both the current and the chosen latency."""
        self.chosen_ms = self.current_ms = latency_ms
        self._latencies = sorted(set(self._latencies) | {latency_ms})
        self._last_raise, self._calm_since, self._restored = None, None, False

    def decide(self, backlog: int, captured: int) -> LoadDecision:
        """What to do now, given the ``backlog`` (samples waiting to be fed) at session position
        ``captured``. The caller applies the decision and calls ``applied`` for latency changes."""
        p = self.policy
        growing = self._growing(backlog, captured)
        if backlog > samples_of(p.max_lag_ms):
            self._calm_since = None
            return LoadDecision(LoadAction.SHED, shed_samples=backlog - samples_of(p.keep_ms))
        if not p.slow_down:
            return NO_ACTION
        if backlog > samples_of(p.slow_ms):
            self._calm_since = None
            due = self._last_raise is None or captured - self._last_raise >= samples_of(p.step_every_ms)
            higher = next_latency(self._latencies, self.current_ms)
            if due and growing and higher is not None:
                return LoadDecision(LoadAction.RAISE_LATENCY, latency_ms=higher)
            return NO_ACTION
        if self.current_ms <= self.chosen_ms:
            return NO_ACTION
        if backlog >= samples_of(p.restore_below_ms):
            self._calm_since = None
            return NO_ACTION
        if self._calm_since is None:
            self._calm_since = captured
        if captured - self._calm_since < self._calm_needed:
            return NO_ACTION
        lower = max(x for x in self._latencies if x < self.current_ms)
        return LoadDecision(LoadAction.RESTORE_LATENCY, latency_ms=max(lower, self.chosen_ms))

    def _growing(self, backlog: int, captured: int) -> bool:
        """Whether ``backlog`` is larger than at the last decision at least ``trend_ms`` of audio ago."""
        trail, span = self._trail, samples_of(self.policy.trend_ms)
        trail.append((captured, backlog))
        while len(trail) > 2 and captured - trail[1][0] >= span:
            trail.popleft()
        c0, b0 = trail[0]
        return captured - c0 >= span and backlog > b0

    def applied(self, decision: LoadDecision, captured: int) -> None:
        """``decision``'s latency change took effect at session position ``captured``."""
        assert decision.latency_ms is not None
        if decision.action == LoadAction.RAISE_LATENCY:
            if self._restored:  # the restored latency did not hold: wait longer before the next try
                self._calm_needed *= 2
                self._restored = False
            self._last_raise = captured
        elif decision.action == LoadAction.RESTORE_LATENCY:
            self._restored = True
        self.current_ms = decision.latency_ms
        self._calm_since = None


@dataclass(frozen=True)
class Ledger:
    """The worker's counts (samples at 16 kHz), published as one immutable value after each step."""

    received: int = 0  # read from the source
    fed: int = 0  # handed to Stream.feed (the call may still be running)
    decoded: int = 0  # feeds that returned, minus what the engine still holds back
    shed: int = 0  # dropped by the policy
    last_gap_end: int | None = None  # session position where the latest dropped stretch ended
    latency_ms: int = 0  # the stream's latency now
    chosen_latency_ms: int = 0  # the latency the user chose


@dataclass(frozen=True)
class LagReading:
    """``lag_ms``: audio captured but not yet decoded; ``backlog_ms``: the part still waiting to be
    fed; ``shed_in_s``: in WARNING, the seconds until shedding at the current growth (None: not
    growing); ``dropped_ms``: audio skipped so far."""

    lag_ms: int
    backlog_ms: int
    state: LagState
    shed_in_s: float | None
    dropped_ms: int
    latency_ms: int
    chosen_latency_ms: int


class LagMeter:
    """Reads the lag from the capture's and the worker's counts; owned by one reading thread."""

    def __init__(
        self,
        policy: LoadPolicy,
        captured: Callable[[], int],
        ledger: Callable[[], Ledger],
        shown: Callable[[], int | None] = lambda: None,
    ) -> None:
        """``shown``: while decoded captions wait to be shown (for the disk), the decoded count the
        captions on screen are current to; None when none wait. The lag counts from the lower one."""
        self._policy, self._captured, self._ledger, self._shown = policy, captured, ledger, shown
        self._history: deque[tuple[int, int]] = deque()  # (captured, backlog) of recent readings

    def read(self) -> LagReading:
        p = self._policy
        led = self._ledger()
        captured = max(self._captured(), led.received)
        backlog = max(0, captured - led.fed - led.shed)
        shown = self._shown()
        decoded = led.decoded if shown is None else min(led.decoded, shown)
        lag = max(backlog, captured - decoded - led.shed)
        self._history.append((captured, backlog))
        while len(self._history) > 2 and captured - self._history[1][0] >= samples_of(p.trend_ms):
            self._history.popleft()
        shed_in: float | None = None
        if led.last_gap_end is not None and captured - led.last_gap_end < samples_of(p.shed_hold_ms):
            state = LagState.SHEDDING
        elif backlog > samples_of(p.warn_ms):
            state = LagState.WARNING
            shed_in = self._seconds_until_shed(captured, backlog)
        elif led.latency_ms > led.chosen_latency_ms:
            state = LagState.CATCHING_UP
        else:
            state = LagState.OK
        return LagReading(
            lag_ms=ms_of(lag),
            backlog_ms=ms_of(backlog),
            state=state,
            shed_in_s=shed_in,
            dropped_ms=ms_of(led.shed),
            latency_ms=led.latency_ms,
            chosen_latency_ms=led.chosen_latency_ms,
        )

    def _seconds_until_shed(self, captured: int, backlog: int) -> float | None:
        """Headroom / growth, the growth being backlog gained per sample captured (both counts)."""
        c0, b0 = self._history[0]
        if captured <= c0 or backlog <= b0:
            return None
        growth = (backlog - b0) / (captured - c0)
        headroom = max(0, samples_of(self._policy.max_lag_ms) - backlog)
        return round(headroom / growth / SAMPLE_RATE, 1)
