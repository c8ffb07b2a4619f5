"""Keyword alerts on the demo model's own words: a held-out sentence spoken by an unseen voice goes
through the real capture, worker and engine, and every keyword it contains is reported once, in
order, at the words' times, with the tokens the caption feed numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import soundfile

from captionist import engine, paths
from captionist.alerts.keyword_alerts import KeywordAlerts
from captionist.alerts.keywords import KeywordList
from captionist.audio.devices import Source
from captionist.feed.caption_feed import CaptionFeed
from captionist.pipeline.controller import SessionConfig, SessionController
from captionist.settings import Settings
from tools.demo_vocab import DEMO_WORDS

pytest.importorskip("captionist._engine")
DEMO_DATA = Path(__file__).resolve().parent.parent / "data" / "demo"
CLIP = "sentence_007.wav"  # "left zero captions off six down world no down yes"
KEYWORDS = ["captions", "down", "world no", "Hello"]  # "hello" is not said


def test_keywords_in_a_spoken_sentence_are_each_reported_once(qtbot, fake_sd, tmp_path) -> None:
    [clip] = [c for c in json.loads((DEMO_DATA / "sentences.json").read_text()) if c["file"] == CLIP]
    said = clip["text"].split()
    assert all(w in DEMO_WORDS for k in KEYWORDS for w in k.lower().split())  # the model's vocabulary
    pcm, rate = soundfile.read(DEMO_DATA / CLIP, dtype="float32")
    model = engine.Model(paths.bundled_demo_model(), backend="cpu", n_threads=2)
    fake_sd.add_device("Mic", rate=rate, channels=1, audio=pcm)
    ctl = SessionController(sd=fake_sd, model_loader=lambda path, backend: model)
    feed = CaptionFeed(Settings())
    feed.attach(ctl)
    alerts = KeywordAlerts(KEYWORDS)
    alerts.attach(ctl)
    hits = []
    alerts.hit.connect(hits.append)
    alerts.hit.connect(feed.publish_alert)
    src = Source("0", "Mic", "input", "ALSA", 1, rate, open_device=0)
    assert ctl.start(SessionConfig(paths.bundled_demo_model(), [src], 480, None, token_ms=model.token_ms))
    assert fake_sd.streams[-1].done.wait(10)
    with qtbot.waitSignal(ctl.session_finished, timeout=60000) as finished:
        ctl.stop()
    heard = finished.args[0].summary.text.split()
    assert heard == said, "the demo model must get this held-out sentence right for this test"

    keywords = KeywordList.parse(KEYWORDS)
    want = [k.text for i in range(len(said)) for k in keywords.ending_at(said[: i + 1])]
    assert [h.keyword for h in hits] == want == ["captions", "down", "world no", "down"]
    starts = {w["word"]: [] for w in clip["words"]}
    for w in clip["words"]:
        starts[w["word"]].append(w["start_ms"])
    for hit in hits:  # each at (the model's latency after) where its first word was spoken
        first = hit.text.split()[0]
        assert any(0 <= hit.time_ms - s <= 480 + 400 for s in starts[first]), (hit, starts[first])
    events = [json.loads(t) for _, t in feed.hub.read(after=0, limit=10_000).items]
    texts = {t["index"]: t["text"] for e in events if e["type"] == "tokens" for t in e["tokens"]}
    alerts_sent = [e for e in events if e["type"] == "alert"]
    assert [a["keyword"] for a in alerts_sent] == want
    for a in alerts_sent:
        assert "".join(texts[i] for i in a["tokens"]).strip() == a["text"]
