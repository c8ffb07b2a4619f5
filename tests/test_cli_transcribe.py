"""``captionist transcribe`` with a fake engine injected in place of ``captionist.engine.Model``."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from captionist import engine, paths
from captionist.__main__ import main
from captionist.engine import EngineError
from captionist.transcript import Caption, parse
from tests.fakes.fake_engine import FakeModel as FakeLiveModel

TOKEN_MS = 80
FRAME = 16000 * TOKEN_MS // 1000
EOU_ID = 7


class FakeModel(FakeLiveModel):
    """The fake engine (tests/fakes): one token ``" w<frame>"`` per voiced 80 ms frame. A path with
    "fastconformer" in it gives a FastConformer-like model with languages whose first silent frame
    after speech ends an utterance (with an end-of-utterance control token, id ``EOU_ID``).
    ``calls`` records the (latency, language) of each stream."""

    instances: list[FakeModel] = []

    def __init__(
        self, path: str, backend: str = "auto", n_threads: int | None = None, repack_cache: Path | None = None
    ) -> None:
        if "broken" in str(path):
            raise EngineError(f"{path}: not a Captionist model file (bad magic)")
        if "fastconformer" in str(path):
            super().__init__(
                path,
                latencies_ms=(80, 160, 560, 1120),
                default_latency_ms=1120,
                languages=("auto", "de", "de-DE"),
                default_language="auto",
                architecture="fastconformer_rnnt",
                eou_after_ms=80,
                eou_id=EOU_ID,
            )
        else:
            super().__init__(path, latencies_ms=(480, 960), architecture="voxtral_realtime")
        self.backend, self.n_threads, self.repack_cache = backend, n_threads, repack_cache
        self.calls: list[tuple[int | None, str | None]] = []
        self.block_sizes: list[int] = []
        FakeModel.instances.append(self)

    def stream(self, latency_ms: int | None = None, language: str | None = None, *, delay_ms=None):
        s = super().stream(latency_ms, language, delay_ms=delay_ms)
        self.calls.append((s.latency_ms, language))
        feed = s.feed

        def recording_feed(pcm: np.ndarray):
            self.block_sizes.append(pcm.size)
            return feed(pcm)

        s.feed = recording_feed  # type: ignore[method-assign]
        return s

    def transcribe(self, *args, **kwargs):
        raise AssertionError("the CLI streams files block by block; it never decodes them whole")


@pytest.fixture(autouse=True)
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> type[FakeModel]:
    FakeModel.instances = []
    monkeypatch.setattr(engine, "Model", FakeModel, raising=False)
    return FakeModel


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    return path


def speech(tmp_path: Path, name: str = "talk.wav", rate: int = 16000) -> Path:
    """Voiced frames 0-5 and 20-24 (a 1.12 s pause between), 2 s in all."""
    t = np.arange(2 * rate) / rate
    voiced = ((t < 0.48) | ((t >= 1.6) & (t < 2.0))).astype(np.float32)
    path = tmp_path / name
    sf.write(
        path,
        0.3 * np.sin(2 * np.pi * 200 * t).astype(np.float32) * voiced,
        rate,
        subtype="FLOAT" if name.endswith(".wav") else None,
    )
    return path


EXPECTED = [
    Caption(0, 480, " ".join(f"w{i}" for i in range(6))),
    Caption(1600, 2000, " ".join(f"w{i}" for i in range(20, 25))),
]


def test_txt_to_stdout(tmp_path: Path, model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["transcribe", str(speech(tmp_path)), "--model", str(model), "--threads", "3"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out == "w0 w1 w2 w3 w4 w5 w20 w21 w22 w23 w24\n"
    (m,) = FakeModel.instances
    assert (m.path, m.backend, m.n_threads, m.calls) == (str(model), "auto", 3, [(480, None)])
    assert m.repack_cache == paths.repack_cache_dir()  # the app's cache: later loads of Q4_K map it


@pytest.mark.parametrize("fmt", ["srt", "vtt", "json"])
def test_subtitle_formats_to_a_file(tmp_path: Path, model: Path, fmt: str) -> None:
    out = tmp_path / "out" / f"talk.{fmt}"
    rc = main(["transcribe", str(speech(tmp_path)), "--model", str(model), "--format", fmt, "-o", str(out)])
    assert rc == 0
    assert parse(fmt, out.read_text(encoding="utf-8")) == EXPECTED


def test_format_follows_the_output_suffix(tmp_path: Path, model: Path) -> None:
    out = tmp_path / "talk.vtt"
    assert main(["transcribe", str(speech(tmp_path)), "--model", str(model), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("WEBVTT")


def test_json_fields(tmp_path: Path, model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = speech(tmp_path, rate=44100)
    rc = main(["transcribe", str(src), "--model", str(model), "--format", "json", "--delay-ms", "960"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert doc["model"] == str(model) and doc["delay_ms"] == 960 and doc["duration_ms"] == 2000
    assert doc["latency_ms"] == 960 and doc["language"] is None
    assert doc["file"] == str(src)
    assert doc["text"].split() == [f"w{i}" for i in [*range(6), *range(20, 25)]]
    assert doc["token_ids"] == [1000 + i for i in [*range(6), *range(20, 25)]]
    assert doc["tokens"][6] == {"id": 1020, "piece": " w20", "time_ms": 1600, "is_control": False}
    assert doc["captions"][1] == {"start_ms": 1600, "end_ms": 2000, "text": EXPECTED[1].text}
    assert FakeModel.instances[0].calls == [(960, None)]


def test_md_and_timestamped_txt(tmp_path: Path, model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = speech(tmp_path)
    assert main(["transcribe", str(src), "--model", str(model), "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert md.startswith(f"# {src}\n") and "- **model:** " in md and "w0 w1" in md
    assert main(["transcribe", str(src), "--model", str(model), "--timestamps"]) == 0
    assert parse("txt", capsys.readouterr().out) == EXPECTED


def test_several_inputs_to_a_directory(tmp_path: Path, model: Path) -> None:
    a, b = speech(tmp_path, "a.wav"), speech(tmp_path, "b.flac")
    out = tmp_path / "subs"
    args = ["transcribe", str(a), str(b), "--model", str(model), "--format", "srt", "-o", f"{out}/"]
    assert main(args) == 0  # a path ending in / is a directory, created
    assert sorted(p.name for p in out.iterdir()) == ["a.srt", "b.srt"]
    assert parse("srt", (out / "b.srt").read_text(encoding="utf-8")) == EXPECTED
    assert len(FakeModel.instances) == 1  # the model is loaded once


def test_several_inputs_to_stdout_have_headers(
    tmp_path: Path, model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = speech(tmp_path, "a.wav"), speech(tmp_path, "b.wav")
    assert main(["transcribe", str(a), str(b), "--model", str(model)]) == 0
    out = capsys.readouterr().out
    assert out.count("w0 w1") == 2 and f"==> {a} <==" in out and f"==> {b} <==" in out


def test_clashing_names_and_file_as_directory(tmp_path: Path, model: Path, capsys) -> None:
    a = speech(tmp_path, "a.wav")
    (tmp_path / "x").mkdir()
    b = speech(tmp_path / "x", "a.wav")
    assert main(["transcribe", str(a), str(b), "--model", str(model), "-o", f"{tmp_path / 'o'}/"]) == 2
    assert "share a file name" in capsys.readouterr().err
    assert main(["transcribe", str(a), str(a), "--model", str(model), "-o", str(a)]) == 2
    err = capsys.readouterr().err
    assert f"-o {a} is a file: with several inputs, -o must be an existing directory" in err


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("captionist: error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--threads", "0"], "--threads must be >= 1"),
        (
            ["--latency-ms", "480", "--delay-ms", "960"],
            "--latency-ms 480 and --delay-ms 960 differ; give one",
        ),
    ],
)
def test_bad_options_exit_2(tmp_path: Path, model: Path, capsys, extra: list[str], message: str) -> None:
    assert main(["transcribe", str(speech(tmp_path)), "--model", str(model), *extra]) == 2
    assert message in _one_error_line(capsys.readouterr().err)
    assert FakeModel.instances == []


@pytest.mark.parametrize(
    ("name", "extra", "message"),
    [
        (
            "m.gguf",
            ["--delay-ms", "100"],
            "latency 100 ms is not supported by this model; choose one of 480, 960 ms",
        ),
        (
            "m.gguf",
            ["--latency-ms", "80"],
            "latency 80 ms is not supported by this model; choose one of 480, 960",
        ),
        ("m.gguf", ["--language", "de"], "this model recognises the language itself"),
        ("fastconformer.gguf", ["--language", "xx"], "unknown language 'xx'; choose one of auto, de, de-DE"),
    ],
)
def test_choices_the_model_does_not_offer_exit_2(
    tmp_path: Path, capsys, name: str, extra: list[str], message: str
) -> None:
    model = tmp_path / name
    model.write_bytes(b"GGUF")
    out = tmp_path / "never.srt"
    assert main(["transcribe", str(speech(tmp_path)), "--model", str(model), *extra, "-o", str(out)]) == 2
    assert message in _one_error_line(capsys.readouterr().err)
    assert FakeModel.instances[0].calls == [] and not out.exists()  # refused before transcribing


def test_latency_and_language_of_a_model_with_languages(tmp_path: Path, capsys) -> None:
    model = tmp_path / "fastconformer.gguf"
    model.write_bytes(b"GGUF")
    args = ["transcribe", str(speech(tmp_path)), "--model", str(model), "--format", "json"]
    assert main([*args, "--latency-ms", "160", "--language", "de-DE"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["latency_ms"], doc["language"]) == (160, "de-DE") and "delay_ms" not in doc
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["latency_ms"], doc["language"]) == (1120, "auto")  # the model's defaults
    assert [m.calls for m in FakeModel.instances] == [[(160, "de-DE")], [(1120, None)]]


def test_an_end_of_utterance_starts_a_new_cue_and_line(tmp_path: Path, capsys) -> None:
    model = tmp_path / "fastconformer.gguf"
    model.write_bytes(b"GGUF")
    t = np.arange(16000) / 16000
    voiced = ((t < 0.24) | ((t >= 0.32) & (t < 0.56))).astype(np.float32)  # one silent frame between
    src = tmp_path / "two.wav"
    sf.write(src, 0.3 * np.sin(2 * np.pi * 200 * t).astype(np.float32) * voiced, 16000, subtype="FLOAT")
    assert main(["transcribe", str(src), "--model", str(model)]) == 0
    assert capsys.readouterr().out == "w0 w1 w2\nw4 w5 w6\n"  # without the end: one line (80 ms gap)
    assert main(["transcribe", str(src), "--model", str(model), "--format", "srt"]) == 0
    assert [c.text for c in parse("srt", capsys.readouterr().out)] == ["w0 w1 w2", "w4 w5 w6"]


def test_engine_error_exits_2_without_traceback(tmp_path: Path, capsys) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"nope")
    assert main(["transcribe", str(speech(tmp_path)), "--model", str(broken)]) == 2
    assert "not a Captionist model file" in _one_error_line(capsys.readouterr().err)


def test_missing_inputs_fail_before_loading_the_model(tmp_path: Path, model: Path, capsys) -> None:
    assert main(["transcribe", str(tmp_path / "nope.wav"), "--model", str(model)]) == 2
    assert "audio file not found" in _one_error_line(capsys.readouterr().err)
    assert FakeModel.instances == []
    assert main(["transcribe", str(speech(tmp_path)), "--model", str(tmp_path / "none.gguf")]) == 2
    assert "model file not found" in _one_error_line(capsys.readouterr().err)


def test_an_undecodable_input_is_reported_and_the_rest_still_written(
    tmp_path: Path, model: Path, capsys
) -> None:
    bad = tmp_path / "bad.wav"
    bad.write_text("not audio")
    good = speech(tmp_path, "good.wav")
    out = tmp_path / "o"
    assert (
        main(["transcribe", str(bad), str(good), "--model", str(model), "-o", f"{out}/", "--format", "srt"])
        == 2
    )
    assert "cannot decode" in _one_error_line(capsys.readouterr().err)
    assert [p.name for p in out.iterdir()] == ["good.srt"]


def test_default_model(tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    fake = types.ModuleType("captionist.models")
    fake.default_model_path = lambda: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "captionist.models", fake)
    assert main(["transcribe", str(speech(tmp_path))]) == 2
    assert "no model given" in _one_error_line(capsys.readouterr().err)
    fake.default_model_path = lambda: model  # type: ignore[attr-defined]
    assert main(["transcribe", str(speech(tmp_path))]) == 0
    assert FakeModel.instances[0].path == str(model)
    monkeypatch.setitem(sys.modules, "captionist.models", None)  # module missing
    assert main(["transcribe", str(speech(tmp_path))]) == 2
    assert "no model given" in _one_error_line(capsys.readouterr().err)
