"""The lag figure and the load policy as plain sample arithmetic (captionist.pipeline.lag)."""

from __future__ import annotations

import pytest

from captionist.pipeline.lag import (
    LagMeter,
    LagState,
    Ledger,
    LoadAction,
    LoadGovernor,
    LoadPolicy,
    next_latency,
    samples_of,
)

S = samples_of(1000)  # one second of samples


class Counts:
    """What the capture and the worker would publish, set by hand."""

    def __init__(self) -> None:
        self.captured = 0
        self.ledger = Ledger(latency_ms=560, chosen_latency_ms=560)

    def meter(self, policy: LoadPolicy | None = None) -> LagMeter:
        return LagMeter(policy or LoadPolicy(), lambda: self.captured, lambda: self.ledger)


def test_lag_counts_capture_queue_backlog_engine_and_running_feed() -> None:
    c = Counts()
    meter = c.meter()
    c.captured = 10 * S  # 10 s captured, of which the worker read 7 s (3 s still in the capture queue)
    c.ledger = Ledger(received=7 * S, fed=6 * S, decoded=5 * S, shed=0, latency_ms=560, chosen_latency_ms=560)
    r = meter.read()
    # waiting: 3 s in the queue + 1 s in the worker; decoding: 1 s in a running feed / the engine
    assert (r.lag_ms, r.backlog_ms, r.dropped_ms) == (5000, 4000, 0)
    c.captured += S // 2  # the worker is blocked in feed: only the capture side moves
    assert meter.read().lag_ms == 5500


def test_shed_audio_is_neither_lag_nor_backlog() -> None:
    c = Counts()
    c.captured = 10 * S
    c.ledger = Ledger(received=10 * S, fed=2 * S, decoded=2 * S, shed=7 * S, last_gap_end=9 * S)
    r = c.meter().read()
    assert (r.lag_ms, r.backlog_ms, r.dropped_ms) == (1000, 1000, 7000)


def test_a_source_without_counts_uses_what_the_worker_read() -> None:
    c = Counts()
    c.ledger = Ledger(received=3 * S, fed=S, decoded=S)
    assert c.meter().read().lag_ms == 2000


def test_states_and_seconds_until_shedding_from_sample_counts() -> None:
    policy = LoadPolicy(slow_ms=1500, warn_ms=2500, max_lag_ms=4000, shed_hold_ms=5000, trend_ms=2000)
    c = Counts()
    meter = c.meter(policy)
    c.captured, c.ledger = (
        2 * S,
        Ledger(received=2 * S, fed=S, decoded=S, latency_ms=560, chosen_latency_ms=560),
    )
    assert meter.read().state == LagState.OK
    c.ledger = Ledger(received=2 * S, fed=S, decoded=S, latency_ms=1120, chosen_latency_ms=560)
    assert meter.read().state == LagState.CATCHING_UP
    # 2.5 s more captured, nothing more fed (a stalled engine): the backlog grew as fast as the audio
    c.captured = 4 * S + S // 2
    r = meter.read()
    assert r.state == LagState.WARNING and r.backlog_ms == 3500
    assert r.shed_in_s == 0.5  # 0.5 s of headroom at 1 s per second
    # over the next trend_ms the engine keeps pace (3 s fed in 3 s): a warning, but no countdown
    c.ledger = Ledger(received=7 * S, fed=4 * S, decoded=4 * S, latency_ms=1120, chosen_latency_ms=560)
    c.captured = 7 * S + S // 2
    r = meter.read()
    assert r.state == LagState.WARNING and r.shed_in_s is None
    # audio dropped: SHEDDING for shed_hold_ms of audio after the gap, then back to the plain state
    c.ledger = Ledger(
        received=6 * S,
        fed=2 * S,
        decoded=2 * S,
        shed=3 * S,
        last_gap_end=5 * S,
        latency_ms=560,
        chosen_latency_ms=560,
    )
    c.captured = 6 * S
    r = meter.read()
    assert r.state == LagState.SHEDDING and r.dropped_ms == 3000
    c.captured = 10 * S - 1
    assert meter.read().state == LagState.SHEDDING
    c.captured = 10 * S
    c.ledger = Ledger(
        received=10 * S,
        fed=7 * S,
        decoded=7 * S,
        shed=3 * S,
        last_gap_end=5 * S,
        latency_ms=560,
        chosen_latency_ms=560,
    )
    assert meter.read().state == LagState.OK


@pytest.mark.parametrize(
    ("choices", "current", "want"),
    [
        ((80, 160, 560, 1120), 80, 160),  # FastConformer: each step at least doubles the chunk
        ((80, 160, 560, 1120), 160, 560),
        ((80, 160, 560, 1120), 560, 1120),
        ((80, 160, 560, 1120), 1120, None),
        (tuple(range(80, 1201, 80)) + (2400,), 480, 960),  # Voxtral's delays
        (tuple(range(80, 1201, 80)) + (2400,), 720, 2400),
        ((240, 480, 960), 700, 960),  # no choice twice as large: the largest
    ],
)
def test_next_latency(choices: tuple[int, ...], current: int, want: int | None) -> None:
    assert next_latency(choices, current) == want


def test_governor_raises_latency_before_it_sheds_and_spaces_the_steps() -> None:
    policy = LoadPolicy(
        slow_ms=1500, warn_ms=2500, max_lag_ms=4000, keep_ms=1000, step_every_ms=2000, trend_ms=2000
    )
    g = LoadGovernor(policy, (80, 160, 560, 1120), chosen_ms=160)
    assert g.decide(backlog=S, captured=8 * S).action == LoadAction.NONE
    assert g.decide(backlog=S + S // 2, captured=10 * S).action == LoadAction.NONE  # at slow_ms: fine
    d = g.decide(backlog=S + S // 2 + 1, captured=10 * S)  # above it, and more than 2 s of audio ago
    assert (d.action, d.latency_ms) == (LoadAction.RAISE_LATENCY, 560)
    g.applied(d, captured=10 * S)
    assert g.current_ms == 560 and g.chosen_ms == 160
    assert g.decide(backlog=2 * S, captured=12 * S - 1).action == LoadAction.NONE  # give it time
    d = g.decide(backlog=2 * S, captured=12 * S)
    assert (d.action, d.latency_ms) == (LoadAction.RAISE_LATENCY, 1120)
    g.applied(d, captured=12 * S)
    assert g.decide(backlog=3 * S, captured=20 * S).action == LoadAction.NONE  # nothing larger left
    d = g.decide(backlog=4 * S + 1, captured=21 * S)  # the last resort, down to keep_ms
    assert (d.action, d.shed_samples) == (LoadAction.SHED, 3 * S + 1)


def test_a_backlog_that_is_already_draining_does_not_change_the_latency() -> None:
    """E.g. audio queued while the model loaded, or a burst from the device: a fast engine drains it."""
    g = LoadGovernor(LoadPolicy(trend_ms=2000), (240, 480, 960), chosen_ms=240)
    for captured, backlog in [(3 * S, 3 * S), (5 * S, 3 * S), (7 * S, 2 * S), (9 * S, S + S // 2 + 1)]:
        assert g.decide(backlog=backlog, captured=captured).action == LoadAction.NONE
    assert g.current_ms == 240


def test_governor_restores_the_chosen_latency_after_keeping_up_and_backs_off() -> None:
    policy = LoadPolicy(restore_below_ms=500, restore_after_ms=10000, trend_ms=5000)
    g = LoadGovernor(policy, (240, 480, 960), chosen_ms=240)
    g.decide(backlog=S, captured=0)
    raise_ = g.decide(backlog=2 * S, captured=5 * S)
    assert (raise_.action, raise_.latency_ms) == (LoadAction.RAISE_LATENCY, 480)
    g.applied(raise_, captured=5 * S)
    assert g.decide(backlog=S // 4, captured=6 * S).action == LoadAction.NONE  # calm from here
    assert g.decide(backlog=S // 2, captured=10 * S).action == LoadAction.NONE  # not calm: starts over
    assert g.decide(backlog=0, captured=11 * S).action == LoadAction.NONE
    assert g.decide(backlog=0, captured=21 * S - 1).action == LoadAction.NONE
    d = g.decide(backlog=0, captured=21 * S)
    assert (d.action, d.latency_ms) == (LoadAction.RESTORE_LATENCY, 240)
    g.applied(d, captured=21 * S)
    assert g.current_ms == 240
    again = g.decide(backlog=2 * S, captured=26 * S)  # it did not hold
    assert again.action == LoadAction.RAISE_LATENCY
    g.applied(again, captured=26 * S)
    g.decide(backlog=0, captured=27 * S)
    assert g.decide(backlog=0, captured=37 * S).action == LoadAction.NONE  # now 20 s of calm needed
    assert g.decide(backlog=0, captured=47 * S).action == LoadAction.RESTORE_LATENCY


def test_governor_follows_the_users_choice_and_can_be_told_to_shed_only() -> None:
    g = LoadGovernor(LoadPolicy(), (240, 480, 960), chosen_ms=240)
    g.decide(backlog=S, captured=0)
    g.applied(g.decide(backlog=2 * S, captured=5 * S), captured=5 * S)
    assert g.current_ms == 480
    g.choose(960)
    assert (g.current_ms, g.chosen_ms) == (960, 960)
    assert g.decide(backlog=0, captured=100 * S).action == LoadAction.NONE  # nothing to restore
    shed_only = LoadGovernor(LoadPolicy(slow_down=False), (240, 480, 960), chosen_ms=240)
    shed_only.decide(backlog=S, captured=0)
    assert shed_only.decide(backlog=3 * S, captured=10 * S).action == LoadAction.NONE
    assert shed_only.decide(backlog=5 * S, captured=20 * S).action == LoadAction.SHED


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"keep_ms": 4000}, "LoadPolicy: need 0 <= keep_ms < max_lag_ms; got 4000, 4000"),
        ({"warn_ms": 5000}, "LoadPolicy: need 0 < slow_ms <= warn_ms <= max_lag_ms; got 1500, 5000, 4000"),
        ({"slow_ms": 0}, "LoadPolicy: need 0 < slow_ms <= warn_ms <= max_lag_ms; got 0, 2500, 4000"),
        ({"max_feed_ms": 0}, "LoadPolicy: max_feed_ms must be positive; got 0"),
    ],
)
def test_policy_rejects_thresholds_out_of_order(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError) as err:
        LoadPolicy(**kwargs)
    assert str(err.value) == message
