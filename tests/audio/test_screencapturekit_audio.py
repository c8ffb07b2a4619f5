"""macOS ScreenCaptureKit permission check against a fake Quartz."""

from __future__ import annotations

from captionist.audio.screencapturekit_audio import (
    ScreenCapturePermission,
    macos_version,
    screen_capture_permission,
)


class FakeQuartz:
    def __init__(self, granted: bool, grant_on_request: bool = False) -> None:
        self.granted, self.grant_on_request = granted, grant_on_request
        self.calls: list[str] = []

    def CGPreflightScreenCaptureAccess(self) -> bool:  # noqa: N802 - mirrors pyobjc
        self.calls.append("preflight")
        return self.granted

    def CGRequestScreenCaptureAccess(self) -> bool:  # noqa: N802
        self.calls.append("request")
        return self.grant_on_request


def _check(quartz: FakeQuartz, request: bool = False, release: str = "14.5") -> ScreenCapturePermission:
    return screen_capture_permission(request, quartz=quartz, os_platform="darwin", release=release)


def test_granted_is_read_without_a_prompt() -> None:
    quartz = FakeQuartz(granted=True)
    assert _check(quartz, request=True) is ScreenCapturePermission.GRANTED
    assert quartz.calls == ["preflight"]


def test_undecided_prompts_only_when_asked() -> None:
    quartz = FakeQuartz(granted=False, grant_on_request=True)
    assert _check(quartz) is ScreenCapturePermission.NOT_GRANTED
    assert quartz.calls == ["preflight"]
    assert _check(quartz, request=True) is ScreenCapturePermission.GRANTED
    assert quartz.calls[-1] == "request"
    assert _check(FakeQuartz(False), request=True) is ScreenCapturePermission.NOT_GRANTED


def test_older_macos_and_other_systems_are_unsupported() -> None:
    quartz = FakeQuartz(granted=True)
    assert _check(quartz, release="12.7") is ScreenCapturePermission.UNSUPPORTED
    assert (
        screen_capture_permission(quartz=quartz, os_platform="linux") is ScreenCapturePermission.UNSUPPORTED
    )
    assert quartz.calls == []
    assert screen_capture_permission(os_platform="darwin", release="14.0") in (
        ScreenCapturePermission.UNSUPPORTED,  # no pyobjc Quartz here
        ScreenCapturePermission.GRANTED,
        ScreenCapturePermission.NOT_GRANTED,
    )
    assert (
        macos_version("13.6.1") == (13, 6) and macos_version("") == (0, 0) and macos_version("15") == (15, 0)
    )
