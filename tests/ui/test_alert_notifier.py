from __future__ import annotations

from captionist.alerts.watcher import KeywordHit
from captionist.settings import AlertSettings
from captionist.ui.alert_notifier import REPEAT_S, AlertNotifier, describe


def hit(keyword: str = "Alice", time_ms: int = 83_400) -> KeywordHit:
    return KeywordHit(keyword, keyword + ",", time_ms, 3, 4)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_keyword_is_announced_once_per_repeat_window_and_with_a_sound_if_chosen(qapp) -> None:
    shown, beeps, clock = [], [], Clock()
    settings = AlertSettings(sound=True)
    notifier = AlertNotifier(settings, show_message=lambda t, b: shown.append((t, b)) or True,
                             beep=lambda: beeps.append(1), clock=clock)  # fmt: skip
    assert notifier.notify(hit())
    assert shown == [("“Alice” was said", "“Alice,” at 01:23 into the session")] and beeps == [1]
    clock.now += REPEAT_S - 1
    assert not notifier.notify(hit("alice"))  # the same keyword, just now
    assert notifier.notify(hit("Bob"))  # another one is announced
    clock.now += 2
    assert notifier.notify(hit())
    assert len(shown) == 3 and len(beeps) == 3
    settings.sound = False
    clock.now += REPEAT_S
    assert notifier.notify(hit()) and len(beeps) == 3
    settings.notify = False
    clock.now += REPEAT_S
    assert not notifier.notify(hit()) and len(shown) == 4


def test_without_a_tray_the_window_says_it(qapp) -> None:
    told: list[str] = []
    notifier = AlertNotifier(AlertSettings(), show_message=lambda t, b: False, fallback=told.append)
    assert notifier.notify(hit(time_ms=5_000))
    assert told == ["“Alice” was said: “Alice,” at 00:05 into the session"]
    assert describe(hit(time_ms=3_723_000))[1] == "“Alice,” at 1:02:03 into the session"
