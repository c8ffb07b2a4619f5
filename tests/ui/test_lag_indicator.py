"""The status bar's lag figure says what the load policy is doing, and the overlay shows a gap."""

from __future__ import annotations

import pytest

from captionist.pipeline.events import AudioGap, CaptionUpdate, WorkerStats
from captionist.pipeline.lag import LagState
from captionist.ui.lag_indicator import LagIndicator, lag_text


def _stats(state: LagState, lag_ms: int, **kw: object) -> WorkerStats:
    base: dict = dict(backend="cpu", rtf=1.2, lag_ms=lag_ms, dropped_ms=0, audio_ms=60000, latency_ms=560)
    return WorkerStats(**{**base, "lag_state": state, **kw})


@pytest.mark.parametrize(
    ("stats", "text"),
    [
        (_stats(LagState.OK, 640), "lag 0.6 s"),
        (
            _stats(LagState.CATCHING_UP, 1800, latency_ms=1120),
            "lag 1.8 s - latency raised to 1120 ms to keep up",
        ),
        (_stats(LagState.WARNING, 3100, shed_in_s=4.4), "lag 3.1 s - falling behind: skipping audio in 4 s"),
        (_stats(LagState.WARNING, 3100, shed_in_s=0.2), "lag 3.1 s - falling behind: skipping audio in 1 s"),
        (_stats(LagState.WARNING, 3100), "lag 3.1 s - falling behind: audio will be skipped if this grows"),
        (
            _stats(LagState.SHEDDING, 1200, dropped_ms=9000),
            "lag 1.2 s - fell behind: 9.0 s of audio skipped so far",
        ),
    ],
)
def test_lag_text_per_state(stats: WorkerStats, text: str) -> None:
    assert lag_text(stats) == text


def test_main_window_status_bar_shows_the_warning(app_parts) -> None:
    win = app_parts[0]
    assert isinstance(win.lag_label, LagIndicator)
    win.controller.stats.emit(_stats(LagState.WARNING, 3100, shed_in_s=4.0))
    assert win.lag_label.text() == "lag 3.1 s - falling behind: skipping audio in 4 s"
    assert win.lag_label.property("lagState") == "warning"
    win.controller.stats.emit(_stats(LagState.OK, 500))
    assert win.lag_label.text() == "lag 0.5 s" and win.lag_label.property("lagState") == "ok"


def test_a_gap_is_a_line_of_its_own_in_the_overlay_and_the_transcript_pane(app_parts) -> None:
    win = app_parts[0]
    gap = AudioGap(61000, 68500)
    win.controller.caption.emit(CaptionUpdate(revision=0, text="", new_text="", new_tokens=[], gap=gap))
    mark = "[7.5 s of audio not transcribed: transcription fell behind]"
    assert gap.label() == mark
    assert win.overlay.visible_lines() in ([mark], [gap.short_label()])  # one line, never wrapped
    assert mark in win.transcript.plain_text().splitlines()


def test_a_screen_reader_is_told_when_captions_fall_behind_and_catch_up(qtbot, monkeypatch) -> None:
    from captionist.ui import lag_indicator
    from captionist.ui.announce import Urgency

    said: list[tuple[str, Urgency]] = []
    monkeypatch.setattr(lag_indicator, "announce", lambda widget, text, urgency: said.append((text, urgency)))
    now = [0.0]
    indicator = LagIndicator(clock=lambda: now[0])
    qtbot.addWidget(indicator)
    for state, lag in [(LagState.OK, 600), (LagState.CATCHING_UP, 1500), (LagState.OK, 700)]:
        indicator.show_stats(_stats(state, lag))
    assert said == []  # keeping up, or raising the latency to keep up: nothing to say
    indicator.show_stats(_stats(LagState.WARNING, 3100, shed_in_s=4.4))
    indicator.show_stats(_stats(LagState.WARNING, 3300, shed_in_s=3.2))  # the same news
    indicator.show_stats(_stats(LagState.SHEDDING, 1200, dropped_ms=9000))
    indicator.show_stats(_stats(LagState.OK, 600))
    assert said == [
        ("Captions are falling behind. lag 3.1 s - falling behind: skipping audio in 4 s", Urgency.POLITE),
        ("Captions fell behind; audio was skipped. lag 1.2 s - fell behind: 9.0 s of audio skipped so far",
         Urgency.INTERRUPT),
        ("Captions caught up. lag 0.6 s", Urgency.POLITE),
    ]  # fmt: skip
    now[0] = 10.0  # hovering at the threshold: not told again so soon
    indicator.show_stats(_stats(LagState.WARNING, 3000))
    indicator.show_stats(_stats(LagState.OK, 600))
    assert len(said) == 3
    now[0] = 40.0
    indicator.show_stats(_stats(LagState.WARNING, 3000))
    assert said[3][0].startswith("Captions are falling behind. lag 3.0 s") and said[3][1] is Urgency.POLITE


def test_a_new_session_is_not_told_that_the_last_one_caught_up(qtbot, monkeypatch) -> None:
    from captionist.ui import lag_indicator

    said: list[str] = []
    monkeypatch.setattr(lag_indicator, "announce", lambda widget, text, urgency: said.append(text))
    indicator = LagIndicator(clock=lambda: 0.0)
    qtbot.addWidget(indicator)
    indicator.show_stats(_stats(LagState.WARNING, 3100))  # the last session ended behind
    indicator.session_started()
    indicator.show_stats(_stats(LagState.OK, 300))
    assert len(said) == 1 and said[0].startswith("Captions are falling behind")
