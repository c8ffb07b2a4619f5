from __future__ import annotations

import json
from pathlib import Path

from captionist import paths
from captionist.models.info import ModelInfo
from captionist.settings import Settings, load_settings, save_settings


def test_round_trip_in_config_dir(_isolated_home: Path) -> None:
    s = Settings()
    s.delay_ms = 960
    s.sources = ["pulse:null.monitor", "3"]
    s.overlay.lines = 4
    s.overlay.geometry["HDMI-1"] = [10, 20, 800, 120]
    path = save_settings(s)
    assert path == paths.settings_file() and path.is_relative_to(_isolated_home)
    loaded = load_settings()
    assert loaded.notice is None and loaded.settings == s


def test_missing_file_gives_defaults() -> None:
    result = load_settings()
    assert result.settings == Settings() and result.notice is None


def test_upgrade_keeps_unknown_keys_and_fills_new_ones() -> None:
    path = paths.settings_file()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"delay_ms": 240, "future_feature": {"x": 1}, "overlay": {"lines": 3}}))
    result = load_settings()
    assert result.notice is None
    assert result.settings.delay_ms == 240 and result.settings.overlay.lines == 3
    assert result.settings.overlay.font_size == Settings().overlay.font_size  # new key: default
    save_settings(result.settings)
    assert json.loads(path.read_text())["future_feature"] == {"x": 1}


def test_corrupt_file_falls_back_to_defaults_with_notice() -> None:
    path = paths.settings_file()
    path.parent.mkdir(parents=True)
    path.write_text('{"delay_ms": 480,,,')
    result = load_settings()
    assert result.settings == Settings()
    assert result.notice.startswith("settings file was corrupt")
    assert path.with_name("settings.json.bad").read_text() == '{"delay_ms": 480,,,'
    assert str(path.with_name("settings.json.bad")) in result.notice


def test_wrong_types_are_dropped_individually() -> None:
    path = paths.settings_file()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"delay_ms": "fast", "backend": "cpu", "overlay": {"outline": 1, "lines": 5}}))
    result = load_settings()
    assert result.settings.delay_ms == Settings().delay_ms and result.settings.backend == "cpu"
    assert result.settings.overlay.lines == 5 and result.settings.overlay.outline is True
    assert result.notice.startswith("ignored invalid settings: delay_ms, overlay.outline;")


def _info(name: str, architecture: str, latencies: tuple[int, ...], default: int, languages=()) -> ModelInfo:
    return ModelInfo(
        path=Path("/models") / name,
        name=name,
        architecture=architecture,
        variant="",
        latencies_ms=latencies,
        default_latency_ms=default,
        languages=tuple(languages),
        default_language=languages[0] if languages else None,
        punctuation=True,
        end_of_utterance=False,
        token_ms=80,
        eou_id=-1,
        backend="CPU",
    )


VOXTRAL = _info("voxtral.gguf", "voxtral_realtime", (80, 480, 960, 2400), 480)
NEMOTRON = _info("nemotron.gguf", "fastconformer_rnnt", (80, 160, 560, 1120), 1120, ("auto", "de", "fr"))


def test_latency_and_language_are_remembered_per_model() -> None:
    s = Settings()
    assert (s.latency_for(VOXTRAL), s.latency_for(NEMOTRON)) == (480, 1120)  # the models' defaults
    assert (s.language_for(VOXTRAL), s.language_for(NEMOTRON)) == (None, "auto")
    s.remember_latency(NEMOTRON, 160)
    s.remember_language(NEMOTRON, "de")
    s.remember_latency(VOXTRAL, 960)
    save_settings(s)
    loaded = load_settings()
    assert loaded.notice is None
    t = loaded.settings
    assert (t.latency_for(VOXTRAL), t.latency_for(NEMOTRON), t.language_for(NEMOTRON)) == (960, 160, "de")
    assert t.latency_ms == {"nemotron.gguf": 160, "voxtral.gguf": 960} and t.delay_ms == 960


def test_an_old_delay_ms_still_loads_and_applies_to_voxtral_only() -> None:
    path = paths.settings_file()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"schema": 1, "delay_ms": 2400, "model_path": "/models/voxtral.gguf"}))
    result = load_settings()
    assert result.notice is None and result.settings.delay_ms == 2400
    assert result.settings.latency_for(VOXTRAL) == 2400
    assert result.settings.latency_for(NEMOTRON) == 1120  # not one of its choices: its default


def test_stored_choices_a_model_does_not_offer_fall_back_to_its_defaults() -> None:
    path = paths.settings_file()
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "latency_ms": {"nemotron.gguf": 99, "voxtral.gguf": "fast", "7": None},
                "language": {"nemotron.gguf": "klingon", "voxtral.gguf": ["de"]},
                "delay_ms": 123,
            }
        )
    )
    result = load_settings()
    s = result.settings
    assert result.notice.startswith("ignored invalid settings: latency_ms, language;")
    assert s.latency_ms == {"nemotron.gguf": 99} and s.language == {"nemotron.gguf": "klingon"}
    assert (s.latency_for(NEMOTRON), s.language_for(NEMOTRON), s.latency_for(VOXTRAL)) == (1120, "auto", 480)
    path.write_text(json.dumps({"latency_ms": [1, 2], "language": "de", "delay_ms": 10**40}))
    result = load_settings()
    assert result.notice.startswith("ignored invalid settings: delay_ms, latency_ms, language;")
    assert result.settings.latency_ms == {} and result.settings.delay_ms == 0


def test_source_names_are_kept_and_a_bad_entry_is_dropped() -> None:
    names = {"3": "USB Headset", "pulse:a.monitor": "Monitor"}
    save_settings(Settings(sources=["3", "pulse:a.monitor"], source_names=names))
    assert load_settings().settings.source_names == names
    path = paths.settings_file()
    bad = {"3": "USB Headset", "4": 7, "5": "x" * 201}
    path.write_text(json.dumps({"sources": ["3"], "source_names": bad}))
    result = load_settings()
    assert result.notice.startswith("ignored invalid settings: source_names;")
    assert result.settings.source_names == {"3": "USB Headset"} and result.settings.sources == ["3"]


def test_a_transcript_folder_typed_as_home_relative_is_taken_from_home(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir("/")
    assert Settings(transcript_dir="~/Notes").transcript_folder() == tmp_path / "Notes"
    assert Settings(transcript_dir="Notes").transcript_folder() == Path.home() / "Notes"  # not /Notes
    assert Settings(transcript_dir="/srv/notes").transcript_folder() == Path("/srv/notes")
    assert Settings().transcript_folder() == paths.default_transcript_dir()
