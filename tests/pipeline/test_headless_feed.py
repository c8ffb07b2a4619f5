"""``captionist live --serve``: the URL first on stdout, the session on the feed while it runs,
the captions file, keyword announcements; and a port in use is a clear error before anything starts."""

from __future__ import annotations

import io
import re
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile
import soxr

from captionist.feed.access import BindAddress
from captionist.feed.server import FeedError
from captionist.pipeline.headless import run_live
from tests.fakes.fake_engine import FakeModel, expected_words
from tests.feed.feed_client import Received, read_sse, run


def serve_live(fake_sd, tmp_path: Path, out, err, serve: BindAddress, **kw) -> int:
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    return run_live(str(model_file), "null", 480, tmp_path / "t.txt", 1.5, "auto", sd=fake_sd,
                    model_loader=lambda p, b: FakeModel(), out=out, err=err, serve=serve, **kw)  # fmt: skip


class GrowingText(io.StringIO):
    """stdout that another thread can watch (StringIO.getvalue is safe to call while it grows)."""


def test_serve_prints_the_url_first_and_the_feed_has_the_session(qapp, fake_sd, wav_48k, tmp_path) -> None:
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Monitor of null", rate=rate, channels=2, audio=audio)
    want = expected_words(soxr.resample(audio[:, 0], rate, 16000).astype(np.float32))
    out, err = GrowingText(), io.StringIO()
    got: list[Received] = []

    def reader() -> None:
        deadline = time.monotonic() + 20
        while "\n" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        url = out.getvalue().splitlines()[0].split()[-1]
        done = lambda r: r.messages[-1]["type"] == "session_stop"  # noqa: E731
        got.append(run(lambda s: read_sse(s, url + "events?after=0", done)))  # type: ignore[arg-type]

    thread = threading.Thread(target=reader)
    thread.start()
    captions = tmp_path / "obs" / "captions.txt"
    status = serve_live(fake_sd, tmp_path, out, err, BindAddress("127.0.0.1", 0), captions_file=captions,
                        keywords=[want[1], "never said"])  # fmt: skip
    thread.join(30)
    assert status == 0, err.getvalue()
    first, *rest = out.getvalue().splitlines()
    assert re.fullmatch(r"serving captions at http://127\.0\.0\.1:\d+/", first)
    assert " ".join(rest).split() == want
    [feed] = got
    kinds = [m["type"] for m in feed.messages]
    assert kinds[0] == "hello" and kinds.index("session_start") < kinds.index("tokens")
    start = feed.messages[kinds.index("session_start")]
    assert start["latency_ms"] == 480 and start["model"] == "m.gguf"
    assert "".join(t["text"] for t in feed.tokens()).split() == want
    alerts = [m for m in feed.messages if m["type"] == "alert"]
    assert [a["keyword"] for a in alerts] == [want[1]] and alerts[0]["text"] == want[1]
    assert f'keyword "{want[1]}" at' in err.getvalue()
    assert captions.read_text().split() == " ".join(want).split()[-len(captions.read_text().split()) :]
    assert captions.read_text().strip()


def test_serve_beyond_the_loopback_puts_the_token_in_the_url(qapp, fake_sd, wav_48k, tmp_path) -> None:
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Monitor of null", rate=rate, channels=2, audio=audio)
    out, err = io.StringIO(), io.StringIO()
    status = serve_live(fake_sd, tmp_path, out, err, BindAddress("0.0.0.0", 0), serve_token="my-token-1")
    assert status == 0, err.getvalue()
    first = out.getvalue().splitlines()[0]
    assert re.fullmatch(r"serving captions at http://[\w.-]+:\d+/\?token=my-token-1", first)
    assert "0.0.0.0" not in first  # an address other devices can open
    out = io.StringIO()
    serve_live(fake_sd, tmp_path, out, io.StringIO(), BindAddress("0.0.0.0", 0))
    first = out.getvalue().splitlines()[0]
    assert re.fullmatch(r"serving captions at http://[\w.-]+:\d+/\?token=[\w-]{16,}", first)  # generated


def test_a_port_in_use_fails_before_the_session(qapp, fake_sd, wav_48k, tmp_path) -> None:
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Monitor of null", rate=rate, channels=2, audio=audio)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        out, busy = io.StringIO(), BindAddress("127.0.0.1", taken.getsockname()[1])
        with pytest.raises(FeedError, match="cannot serve captions"):
            serve_live(fake_sd, tmp_path, out, io.StringIO(), busy)
    assert out.getvalue() == "" and not fake_sd.streams  # nothing opened, nothing printed


def test_a_captions_file_that_cannot_be_written_is_said_and_the_session_goes_on(
    qapp, fake_sd, wav_48k, tmp_path
) -> None:
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Monitor of null", rate=rate, channels=2, audio=audio)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    out, err = io.StringIO(), io.StringIO()
    status = serve_live(fake_sd, tmp_path, out, err, None, captions_file=blocker / "captions.txt")
    assert status == 0, err.getvalue()
    said = [line for line in err.getvalue().splitlines() if "captions file" in line]
    assert said == [f"captionist: cannot write the captions file {blocker / 'captions.txt'}: File exists"]
    want = expected_words(soxr.resample(audio[:, 0], rate, 16000).astype(np.float32))
    assert out.getvalue().split() == want
