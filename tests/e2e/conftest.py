"""Fixtures of the end-to-end tests: a private PulseAudio daemon with a null sink, the model, and a
private X desktop (Xvfb and openbox) for the tests that run the real app's windows."""

from __future__ import annotations

import ctypes.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from captionist import paths
from tests.e2e.pulse_server import PulseServer, PulseUnavailable
from tests.ui.x11_desktop import X11Desktop, X11Unavailable

SINK = "captionist_e2e"


def unavailable(reason: str) -> NoReturn:
    """Skip, or fail where the environment promises the end-to-end pieces (``.ci/run``)."""
    if os.environ.get("CAPTIONIST_E2E_REQUIRED") == "1":
        pytest.fail(f"{reason} (CAPTIONIST_E2E_REQUIRED=1)")
    pytest.skip(reason)


def start_pulse(scratch: Path) -> PulseServer:
    """A private daemon with the ``SINK`` null sink, or a skip (a failure under ``.ci/run``) saying
    what is missing. The caller closes it."""
    if ctypes.util.find_library("portaudio") is None:
        unavailable("end-to-end capture needs PortAudio (apt-get install libportaudio2)")
    try:
        server = PulseServer.start(scratch)
    except PulseUnavailable as exc:
        unavailable(f"end-to-end capture needs PulseAudio and espeak-ng: {exc}")
    try:
        server.add_null_sink(SINK)
    except BaseException:
        server.close()
        raise
    return server


@pytest.fixture(scope="module")
def pulse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PulseServer]:
    with start_pulse(tmp_path_factory.mktemp("pulse")) as server:
        yield server


@pytest.fixture(scope="module")
def model() -> Path:
    chosen = os.environ.get("CAPTIONIST_E2E_MODEL")
    path = Path(chosen) if chosen else paths.bundled_demo_model()
    assert path.is_file(), f"no model for the end-to-end test: {path}"
    return path


@pytest.fixture
def desktop() -> Iterator[X11Desktop]:
    """A private X desktop, or a skip (a failure under ``.ci/run``) saying what is missing."""
    try:
        started = X11Desktop.start()
    except X11Unavailable as exc:
        unavailable(f"this end-to-end test needs an X desktop (Xvfb, openbox, xdotool, xev): {exc}")
    try:
        yield started
    finally:
        started.close()
