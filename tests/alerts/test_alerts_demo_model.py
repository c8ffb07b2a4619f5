"""Keyword alerts on the demo model's own words: the held-out sentences (unseen voices, unseen word
sequences) go through the real capture, worker and engine; the keywords in what the model wrote are
each reported once, in order, and where it heard a sentence right, every keyword said is reported
at the words' times, with the tokens the caption feed numbers."""

from __future__ import annotations

import gc
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
SENTENCES = json.loads((DEMO_DATA / "sentences.json").read_text())
KEYWORDS = ["captions", "down", "world no", "oh", "back", "zero", "Hello world"]


@pytest.fixture(scope="module")
def demo() -> engine.Model:
    return engine.Model(paths.bundled_demo_model(), backend="cpu", n_threads=2)


def session(qtbot, fake_sd, model: engine.Model, clip: dict) -> tuple[list[str], list, list[dict]]:
    """One live session on ``clip``: the words heard, the hits, and the feed's events."""
    # The last session's controller, feed and watcher are garbage now (in reference cycles). Collect
    # them here, on the GUI thread: left to Python's collector, they could be freed on whatever thread
    # allocates next, the new session's worker, deleting their QObjects there while this thread
    # handles their deferred deletes (a segfault in ~QObject, seen in CI about once in four runs).
    gc.collect()
    pcm, rate = soundfile.read(DEMO_DATA / clip["file"], dtype="float32")
    fake_sd.add_device(clip["file"], rate=rate, channels=1, audio=pcm)
    ctl = SessionController(sd=fake_sd, model_loader=lambda path, backend: model)
    feed = CaptionFeed(Settings())
    feed.attach(ctl)
    alerts = KeywordAlerts(KEYWORDS)
    alerts.attach(ctl)
    hits: list = []
    alerts.hit.connect(hits.append)
    alerts.hit.connect(feed.publish_alert)
    index = len(fake_sd.devices) - 1
    src = Source(str(index), clip["file"], "input", "ALSA", 1, rate, open_device=index)
    assert ctl.start(SessionConfig(paths.bundled_demo_model(), [src], 480, None, token_ms=model.token_ms))
    assert fake_sd.streams[-1].done.wait(10)
    with qtbot.waitSignal(ctl.session_finished, timeout=60000) as finished:
        ctl.stop()
    events = [json.loads(t) for _, t in feed.hub.read(after=0, limit=10_000).items]
    return finished.args[0].summary.text.split(), hits, events


def expected_hits(words: list[str]) -> list[str]:
    keywords = KeywordList.parse(KEYWORDS)
    return [k.text for i in range(len(words)) for k in keywords.ending_at(words[: i + 1])]


def test_keywords_in_spoken_sentences_are_each_reported_once(qtbot, fake_sd, demo) -> None:
    assert all(w in DEMO_WORDS for k in KEYWORDS for w in k.lower().split())  # the model's vocabulary
    exact = 0
    for clip in SENTENCES:
        heard, hits, events = session(qtbot, fake_sd, demo, clip)
        said = clip["text"].split()
        # what the model wrote, matched word by word afterwards, is what the watcher reported live
        assert [h.keyword for h in hits] == expected_hits(heard), (clip["file"], heard)
        if heard == said:  # and where it heard the sentence right, each keyword that was said
            exact += 1
            assert [h.keyword for h in hits] == expected_hits(said)
            spans: dict[str, list[tuple[float, float]]] = {}
            for w in clip["words"]:
                spans.setdefault(w["word"], []).append((w["start_ms"], w["end_ms"]))
            for hit in hits:  # at its first word: a word's token is timed where the word ends
                first = hit.text.split()[0].lower()
                near = [start <= hit.time_ms <= end + 400 for start, end in spans[first]]
                assert any(near), (hit, spans[first])
        texts = {t["index"]: t["text"] for e in events if e["type"] == "tokens" for t in e["tokens"]}
        sent = [e for e in events if e["type"] == "alert"]
        assert [a["keyword"] for a in sent] == [h.keyword for h in hits]
        for a in sent:  # the feed's alerts name the tokens of the words spoken
            assert "".join(texts[i] for i in a["tokens"]).strip() == a["text"]
    assert exact >= 2, "the demo model must get some held-out sentences right for this test to mean much"
