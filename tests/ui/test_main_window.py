from __future__ import annotations

from pathlib import Path

import soundfile
from PySide6.QtCore import Qt

from captionist import paths
from captionist.audio.devices import list_sources
from captionist.models import ModelStore
from captionist.pipeline.controller import SessionController
from captionist.pipeline.session_state import SessionState
from captionist.settings import OverlaySettings, Settings
from captionist.transcript import parse
from captionist.ui.banner import Problem
from captionist.ui.main_window import MainWindow
from captionist.ui.overlay import CaptionOverlay
from tests.fakes.fake_engine import FakeModel
from tests.fakes.fake_sounddevice import FakeSoundDevice
from tests.ui.conftest import wait_for_model


def test_latency_control_offers_the_models_choices(app_parts, qtbot) -> None:
    win, _, model, _, _ = app_parts
    assert win.latency.choices() == model.latencies_ms == (240, 480, 960)
    assert win.latency.value_ms() == 480 and win.latency.label.text() == "480 ms"  # the model's default
    assert win.language.isHidden()  # this model recognises the language itself
    seen = []
    for index in range(win.latency.slider.maximum() + 1):
        with qtbot.waitSignal(win.latency.latency_changed) as blocker:
            win.latency.slider.setValue(index)
        seen.append(blocker.args[0])
        assert win.latency.label.text() == f"{blocker.args[0]} ms"
    assert seen == [240, 480, 960]
    assert win.settings.latency_ms == {"voxtral-q4.gguf": 960}  # remembered for this model


def _run_once(win: MainWindow, controller: SessionController, fake_sd: FakeSoundDevice, qtbot) -> None:
    with qtbot.waitSignal(controller.state_changed):
        qtbot.mouseClick(win.start_button, Qt.MouseButton.LeftButton)
    assert win.start_button.text() == "Stop" and not win.sources.isEnabled()
    assert fake_sd.streams[-1].done.wait(5)
    with qtbot.waitSignal(controller.session_finished, timeout=10000):
        qtbot.mouseClick(win.start_button, Qt.MouseButton.LeftButton)
    assert win.start_button.text() == "Start" and win.sources.isEnabled()


def test_start_stop_restart_shows_transcript_and_overlay(app_parts, qtbot) -> None:
    win, controller, model, fake_sd, want = app_parts
    assert [s.name for s in win.sources.selected()] == ["USB Mic"]
    assert win.selected_model().name == "voxtral-q4.gguf"
    _run_once(win, controller, fake_sd, qtbot)
    body = [line for line in win.transcript.plain_text().splitlines() if not line.startswith("—")]
    assert " ".join(body).split() == want
    assert (
        " ".join(win.overlay.visible_lines()).split()
        == want[-len(" ".join(win.overlay.visible_lines()).split()) :]
    )
    assert win.rtf_label.text().startswith("RTF") and win.backend_label.text() == "backend: fake-cpu"
    _run_once(win, controller, fake_sd, qtbot)
    assert win.transcript.plain_text().count(" · USB Mic —") == 2
    assert model.finishes == 2
    assert win.transcript.find(want[-1]) and win.transcript.text.textCursor().selectedText() == want[-1]
    assert not win.transcript.find("not-there")
    assert win.statusBar().currentMessage().startswith("Transcript saved to")


def test_latency_change_applies_live(app_parts, qtbot) -> None:
    win, controller, model, fake_sd, _ = app_parts
    fake_sd.devices[0].audio = None  # a live device with nothing replayed: the session stays open
    with qtbot.waitSignal(controller.state_changed):
        win.start_session()
    with qtbot.waitSignal(controller.notice, timeout=5000) as blocker:
        win.latency.slider.setValue(win.latency.choices().index(960))
    assert blocker.args == ["latency set to 960 ms"] and model.latency_changes == [960]
    assert len(model.streams) == 1  # the same stream went on: no text lost
    with qtbot.waitSignal(controller.session_finished, timeout=10000):
        controller.stop()


def test_errors_are_shown_in_the_banner(app_parts, qtbot) -> None:
    win, controller, _, fake_sd, _ = app_parts
    fake_sd.devices[0].present = False
    assert not win.start_session()
    assert not win.error_banner.isHidden()
    assert win.error_banner.text() == "cannot open 'USB Mic': Device unavailable: USB Mic"
    assert controller.state == SessionState.IDLE and win.start_button.text() == "Start"
    for i in range(win.sources.list.count()):
        win.sources.list.item(i).setCheckState(Qt.CheckState.Unchecked)
    assert win.settings.sources == []
    assert not win.start_session()
    assert win.error_banner.text().splitlines() == [
        "cannot open 'USB Mic': Device unavailable: USB Mic",
        "Tick at least one audio source.",
    ]


def test_import_rejects_non_gguf_and_accepts_gguf(app_parts, qtbot, tmp_path) -> None:
    win = app_parts[0]
    bad = tmp_path / "notes.gguf"
    bad.write_text("hello")
    assert not win.import_model(bad)
    assert win.error_banner.text() == f"{bad} is not a GGUF model file"
    good = tmp_path / "other.gguf"
    good.write_bytes(b"GGUF" + bytes(8))
    assert win.import_model(good)
    assert win.selected_model().name == "other.gguf" and win.settings.model_path.endswith("other.gguf")
    assert win.model_combo.count() == 2
    wait_for_model(qtbot, win)


def test_no_model_guides_the_user(qtbot, fake_sd, tmp_path) -> None:
    fake_sd.add_device("Mic", rate=16000, default=True)
    ctl = SessionController(sd=fake_sd, model_loader=lambda p, b: FakeModel())
    win = MainWindow(
        ctl,
        Settings(),
        list_sources=lambda: list_sources(fake_sd, pactl=None),
        model_store=ModelStore(tmp_path / "empty", demo=tmp_path / "none.gguf"),
    )
    qtbot.addWidget(win)
    assert win.error_banner.text().startswith("No speech model yet")
    assert not win.start_session()
    assert win.error_banner.text().splitlines()[-1] == "Choose a model first (Import GGUF…)."
    assert len(win.error_banner.text().splitlines()) == 2  # distinct messages stack


def test_a_model_that_is_gone_is_replaced_and_the_user_told(qtbot, fake_sd, tmp_path) -> None:
    """The model chosen last was deleted or renamed outside the app (or is on an unplugged drive):
    the window selects another and says which, instead of switching models without a word."""
    store = ModelStore(tmp_path / "models", demo=tmp_path / "none.gguf")
    store.root.mkdir()
    kept = store.root / "kept.gguf"
    kept.write_bytes(b"GGUF" + bytes(8))
    gone = tmp_path / "usb" / "gone.gguf"
    settings = Settings(model_path=str(gone))
    ctl = SessionController(sd=fake_sd, model_loader=lambda p, b: FakeModel())
    win = MainWindow(ctl, settings, list_sources=lambda: list_sources(fake_sd, pactl=None), model_store=store)
    qtbot.addWidget(win)
    assert win.selected_model() == kept and settings.model_path == str(kept)
    assert win.info_banner.text() == (
        f"The model chosen before, gone.gguf, is not there any more ({gone.parent}); "
        f"“{win.model_combo.currentText()}” is selected instead."
    )
    assert win.error_banner.isHidden()
    wait_for_model(qtbot, win)

    win.refresh_models()  # the configured model is there: nothing more to say
    assert win.info_banner.problems() == [Problem.MISSING_MODEL]
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF" + bytes(8))
    assert win.import_model(other)  # the user chose a model: the notice has done its work
    assert win.info_banner.isHidden()


def test_a_source_that_is_gone_is_said_and_its_old_index_not_taken(qtbot, tmp_path) -> None:
    """PortAudio's ids are device indices: after the headset is unplugged its old index may name
    another device. The window must not capture that device in its place, and must say what it did."""
    store = ModelStore(tmp_path / "models", demo=tmp_path / "none.gguf")

    def window(sd: FakeSoundDevice, settings: Settings) -> MainWindow:
        ctl = SessionController(sd=sd, model_loader=lambda p, b: FakeModel())
        win = MainWindow(ctl, settings, list_sources=lambda: list_sources(sd, pactl=None), model_store=store)
        qtbot.addWidget(win)
        return win

    before = FakeSoundDevice()
    before.add_device("Mic", default=True)
    before.add_device("USB Headset")
    settings = Settings()
    first = window(before, settings)
    assert first.info_banner.isHidden()
    first.sources.list.item(0).setCheckState(Qt.CheckState.Unchecked)
    first.sources.list.item(1).setCheckState(Qt.CheckState.Checked)  # the user picks the headset
    assert settings.sources == ["1"] and settings.source_names == {"1": "USB Headset"}

    today = FakeSoundDevice()  # the next start: the headset is unplugged, a capture card came
    today.add_device("Mic", default=True)
    today.add_device("HDMI Capture")  # index 1, the headset's before
    win = window(today, settings)
    assert [s.name for s in win.sources.selected()] == ["Mic"]
    assert win.info_banner.text() == (
        "The audio source chosen before, ‘USB Headset’, is not connected; ‘Mic’ is ticked instead. "
        "Plug it in and press Refresh sources, or tick another."
    )
    today.devices[0].present = False  # the mic went too: the line changes, and is still one line
    win.refresh_sources()
    assert win.info_banner.text() == (
        "The audio source chosen before, ‘USB Headset’, is not connected. "
        "Plug it in and press Refresh sources, or tick another."
    )
    today.devices[0].present = True
    today.add_device("USB Headset")  # plugged in again, at index 2
    win.refresh_sources()
    assert [s.name for s in win.sources.selected()] == ["USB Headset"]
    assert win.info_banner.isHidden()
    assert settings.sources == ["1"]  # nothing chosen by hand: the saved choice stays as it was


def test_finished_session_can_be_exported_in_another_format(app_parts, qtbot, tmp_path) -> None:
    win, controller, _, fake_sd, want = app_parts
    assert not win.export_button.isEnabled()
    _run_once(win, controller, fake_sd, qtbot)
    assert win.export_button.isEnabled() and win.last_transcript.suffix == ".txt"
    dest = tmp_path / "again.srt"
    assert win.export_last(dest)
    assert " ".join(c.text for c in parse("srt", dest.read_text())).split() == want
    assert not win.export_last(tmp_path / "again.docx")
    assert "docx" in win.error_banner.text()


def test_idle_meters_come_from_a_preview_closed_during_sessions(qtbot, fake_sd, tmp_path) -> None:
    from captionist.audio.capture import Capture
    from captionist.ui.level_preview import LevelPreview
    from tests.conftest import speech_like

    fake_sd.add_device("Mic", rate=16000, default=True)
    model_file = tmp_path / "models" / "m.gguf"
    model_file.parent.mkdir()
    model_file.write_bytes(b"GGUF")
    ctl = SessionController(sd=fake_sd, model_loader=lambda p, b: FakeModel())
    win = MainWindow(
        ctl,
        Settings(transcript_dir=str(tmp_path / "t")),
        list_sources=lambda: list_sources(fake_sd, pactl=None),
        model_store=ModelStore(model_file.parent, demo=tmp_path / "none.gguf"),
        preview=LevelPreview(lambda chosen: Capture(chosen, sd=fake_sd)),
    )
    qtbot.addWidget(win)
    win.show()  # the meters run while the window is on screen (test_source_meters.py)
    wait_for_model(qtbot, win)
    preview_stream = fake_sd.streams[-1]
    assert preview_stream.active
    preview_stream.push(speech_like(16000, [(0.2, True)], amp=0.5))
    qtbot.waitUntil(lambda: win.sources.meters["0"].value() > 50, timeout=3000)
    with qtbot.waitSignal(ctl.state_changed):
        win.start_session()
    assert preview_stream.closed and fake_sd.streams[-1] is not preview_stream
    with qtbot.waitSignal(ctl.session_finished, timeout=10000):
        ctl.stop()
    assert fake_sd.streams[-1].active  # metering again


def write_language_gguf(path: Path, names: list[str], ids: list[int]) -> None:
    """A GGUF header holding a language dictionary (the keys engine/GGUF.md gives Nemotron 3.5)."""
    from gguf import GGUFWriter

    w = GGUFWriter(str(path), "fastconformer_rnnt")
    w.add_array("fastconformer.prompt.names", names)
    w.add_array("fastconformer.prompt.ids", ids)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _window(qtbot, fake_sd, tmp_path, models: dict[str, FakeModel], settings: Settings) -> MainWindow:
    fake_sd.add_device("Mic", rate=16000, default=True)
    ctl = SessionController(sd=fake_sd, model_loader=lambda p, b: models[Path(p).name])
    win = MainWindow(
        ctl,
        settings,
        list_sources=lambda: list_sources(fake_sd, pactl=None),
        model_store=ModelStore(tmp_path / "models", demo=tmp_path / "none.gguf"),
    )
    qtbot.addWidget(win)
    wait_for_model(qtbot, win)
    return win


def test_language_picker_for_a_model_with_languages(qtbot, fake_sd, tmp_path) -> None:
    (tmp_path / "models").mkdir()
    names = ["en-US", "en", "en-GB", "enGB", "de-DE", "de", "auto"]
    write_language_gguf(tmp_path / "models" / "multi.gguf", names, [0, 0, 1, 1, 9, 9, 101])
    (tmp_path / "models" / "english.gguf").write_bytes(b"GGUF")
    multi = FakeModel(
        languages=tuple(names), default_language="auto", latencies_ms=(80, 160), default_latency_ms=160
    )
    english = FakeModel(latencies_ms=(160,), default_latency_ms=160)
    settings = Settings(model_path=str(tmp_path / "models" / "multi.gguf"), language={"multi.gguf": "de"})
    win = _window(qtbot, fake_sd, tmp_path, {"multi.gguf": multi, "english.gguf": english}, settings)
    assert not win.language.isHidden()
    assert win.language.labels() == ["Auto", "English (en-GB)", "English (en-US)", "German (de-DE)"]
    assert win.language.language() == "de-DE"  # remembered as the alias "de": the same entry
    with qtbot.waitSignal(win.language.language_changed):
        win.language.combo.setCurrentIndex(0)
    assert win.settings.language == {"multi.gguf": "auto"}

    win.model_combo.setCurrentIndex(win.model_combo.findData(str(tmp_path / "models" / "english.gguf")))
    wait_for_model(qtbot, win)
    assert win.language.isHidden() and win.language.language() is None
    assert win.latency.choices() == (160,) and win.latency.label.text() == "160 ms (fixed)"
    assert not win.latency.slider.isEnabled()


def test_language_change_applies_live(qtbot, fake_sd, tmp_path) -> None:
    (tmp_path / "models").mkdir()
    write_language_gguf(tmp_path / "models" / "multi.gguf", ["auto", "de", "fr"], [101, 9, 8])
    model = FakeModel(languages=("auto", "de", "fr"), default_language="auto")
    win = _window(
        qtbot, fake_sd, tmp_path, {"multi.gguf": model}, Settings(transcript_dir=str(tmp_path / "t"))
    )
    assert win.language.labels() == ["Auto", "French (fr)", "German (de)"]
    with qtbot.waitSignal(win.controller.state_changed):
        assert win.start_session()
    qtbot.waitUntil(lambda: bool(model.streams))
    assert model.streams[0].language == "auto"
    with qtbot.waitSignal(win.controller.notice, timeout=5000) as blocker:
        win.language.combo.setCurrentIndex(win.language.combo.findData("de"))
    assert blocker.args == ["language set to de"] and model.language_changes == ["de"]
    with qtbot.waitSignal(win.controller.session_finished, timeout=10000):
        win.controller.stop()


def test_latency_is_remembered_per_model_and_old_delay_settings_still_load(qtbot, fake_sd, tmp_path) -> None:
    (tmp_path / "models").mkdir()
    for name in ("a.gguf", "b.gguf"):
        (tmp_path / "models" / name).write_bytes(b"GGUF")
    voxtral = FakeModel(architecture="voxtral_realtime", latencies_ms=(240, 480, 960))
    other = FakeModel(latencies_ms=(80, 160, 560, 1120), default_latency_ms=1120)
    # a settings file from before per-model latencies: one Voxtral delay
    settings = Settings(model_path=str(tmp_path / "models" / "a.gguf"), delay_ms=960)
    win = _window(qtbot, fake_sd, tmp_path, {"a.gguf": voxtral, "b.gguf": other}, settings)
    assert win.latency.value_ms() == 960
    win.model_combo.setCurrentIndex(1)
    wait_for_model(qtbot, win)
    assert win.latency.value_ms() == 1120  # the old delay is Voxtral's; this model gets its default
    with qtbot.waitSignal(win.latency.latency_changed):
        win.latency.slider.setValue(1)
    win.model_combo.setCurrentIndex(0)
    wait_for_model(qtbot, win)
    assert win.latency.value_ms() == 960
    win.model_combo.setCurrentIndex(1)
    wait_for_model(qtbot, win)
    assert win.latency.value_ms() == 160 and win.settings.latency_ms == {"b.gguf": 160}


def test_start_waits_for_the_model_and_a_broken_model_is_reported(qtbot, fake_sd, tmp_path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "broken.gguf").write_bytes(b"GGUF")

    def loader(path, backend):
        raise RuntimeError("broken.gguf: tensor enc.norm.weight is missing")

    fake_sd.add_device("Mic", rate=16000, default=True)
    ctl = SessionController(sd=fake_sd, model_loader=loader)
    win = MainWindow(
        ctl,
        Settings(),
        list_sources=lambda: list_sources(fake_sd, pactl=None),
        model_store=ModelStore(tmp_path / "models", demo=tmp_path / "none.gguf"),
    )
    qtbot.addWidget(win)
    assert not win.start_button.isEnabled() and win.latency.label.text() == "loading…"
    assert not win.start_session()
    assert win.error_banner.text() == "The model is still loading; press Start again in a moment."
    qtbot.waitUntil(lambda: "cannot use the model" in win.error_banner.text())
    assert win.error_banner.text().splitlines()[-1] == (
        "cannot use the model broken.gguf: broken.gguf: tensor enc.norm.weight is missing"
    )
    assert not win.start_button.isEnabled() and ctl.state == SessionState.IDLE


def test_ends_of_utterance_start_new_lines_in_transcript_and_overlay(qtbot, fake_sd, tmp_path) -> None:
    from tests.conftest import speech_like

    pcm = speech_like(16000, [(0.4, True), (0.6, False), (0.4, True), (0.6, False)])
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "eou.gguf").write_bytes(b"GGUF")
    model = FakeModel(eou_after_ms=320, eou_id=7, latencies_ms=(160,), default_latency_ms=160)
    fake_sd.add_device("Mic", rate=16000, default=True, audio=pcm)
    ctl = SessionController(sd=fake_sd, model_loader=lambda p, b: model)
    overlay = CaptionOverlay(OverlaySettings(lines=3))
    qtbot.addWidget(overlay)
    overlay.resize(2000, overlay.height())
    win = MainWindow(
        ctl,
        Settings(transcript_dir=str(tmp_path / "t"), transcript_format="srt"),
        overlay=overlay,
        list_sources=lambda: list_sources(fake_sd, pactl=None),
        model_store=ModelStore(tmp_path / "models", demo=tmp_path / "none.gguf"),
    )
    qtbot.addWidget(win)
    wait_for_model(qtbot, win)
    _run_once(win, ctl, fake_sd, qtbot)
    first, second = [f"w{i}" for i in range(5)], [f"w{i}" for i in range(12, 18)]
    body = [line.split() for line in win.transcript.plain_text().splitlines() if not line.startswith("—")]
    assert body == [first, second]
    assert [line.split() for line in overlay.visible_lines()] == [first, second]
    cues = parse("srt", win.last_transcript.read_text())
    assert [c.text.split() for c in cues] == [first, second]


def _real_window(qtbot, fake_sd, tmp_path, ggufs: list[Path]) -> MainWindow:
    import shutil

    from captionist.engine import Model

    root = tmp_path / "models"
    root.mkdir(exist_ok=True)
    for gguf in ggufs:
        shutil.copyfile(gguf, root / gguf.name)
    fake_sd.add_device("Mic", rate=16000, default=True)
    ctl = SessionController(sd=fake_sd, model_loader=lambda p, b: Model(str(p), backend="cpu", n_threads=1))
    win = MainWindow(
        ctl,
        Settings(model_path=str(root / ggufs[0].name)),
        list_sources=lambda: list_sources(fake_sd, pactl=None),
        model_store=ModelStore(root, demo=tmp_path / "none.gguf"),
    )
    qtbot.addWidget(win)
    qtbot.waitUntil(lambda: win.model_info is not None, timeout=30000)
    return win


def test_real_fastconformer_models_offer_their_own_latencies(
    qtbot, fake_sd, tmp_path, nemotron_tiny_gguf, parakeet_eou_tiny_gguf
) -> None:
    win = _real_window(qtbot, fake_sd, tmp_path, [nemotron_tiny_gguf, parakeet_eou_tiny_gguf])
    labels = [win.model_combo.itemText(i) for i in range(win.model_combo.count())]
    assert [label.split(" (")[0] for label in labels] == [
        "nemotron-tiny · FastConformer",
        "parakeet-tiny · FastConformer",
    ]
    assert win.latency.choices() == (80, 160, 560, 1120) and win.latency.value_ms() == 1120
    assert win.language.isHidden()
    win.model_combo.setCurrentIndex(1)
    qtbot.waitUntil(
        lambda: win.model_info is not None and win.model_info.path.name == "parakeet-tiny.gguf", timeout=30000
    )
    assert win.latency.choices() == (160,) and win.latency.label.text() == "160 ms (fixed)"
    assert win.model_info.end_of_utterance and win.model_info.eou_id >= 0


def test_real_language_model_offers_one_entry_per_language(
    qtbot, fake_sd, tmp_path, nemotron35_tiny_gguf
) -> None:
    from captionist.engine import Model

    languages = Model(nemotron35_tiny_gguf, backend="cpu", n_threads=1).languages
    win = _real_window(qtbot, fake_sd, tmp_path, [nemotron35_tiny_gguf])
    assert not win.language.isHidden()
    labels = win.language.labels()
    assert len(labels) == len(set(labels)) and len(labels) <= len(languages)
    if "auto" in languages:
        assert labels[0] == "Auto"
    codes = [win.language.combo.itemData(i) for i in range(win.language.combo.count())]
    assert set(codes) <= set(languages)


def test_a_transcript_folder_that_cannot_be_used_is_said_and_the_default_used(
    qtbot, fake_sd, tmp_path, wav_48k
) -> None:
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Mic", rate=rate, channels=2, audio=audio, default=True)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.gguf").write_bytes(b"GGUF")
    chosen = tmp_path / "USB" / "Notes"  # on a drive that is not plugged in
    ctl = SessionController(sd=fake_sd, model_loader=lambda p, b: FakeModel())
    win = MainWindow(
        ctl,
        Settings(transcript_dir=str(chosen)),
        list_sources=lambda: list_sources(fake_sd, pactl=None),
        model_store=ModelStore(tmp_path / "models", demo=tmp_path / "none.gguf"),
    )
    qtbot.addWidget(win)
    wait_for_model(qtbot, win)
    shown: list[str] = []
    for plugged_in in (False, True):
        if plugged_in:
            chosen.mkdir(parents=True)
        with qtbot.waitSignal(ctl.state_changed):
            assert win.start_session()
        assert fake_sd.streams[-1].done.wait(5)
        with qtbot.waitSignal(ctl.session_finished, timeout=10000) as finished:
            ctl.stop()
        shown.append(win.info_banner.text() if win.info_banner.isVisibleTo(win) else "")
        assert finished.args[0].transcript.parent == (
            chosen if plugged_in else paths.default_transcript_dir()
        )
        if not plugged_in:
            assert not (tmp_path / "USB").exists()  # not made on the local disk in the drive's place
    assert f"The transcript folder {chosen} cannot be used (No such file or directory)" in shown[0]
    assert f"saved in {paths.default_transcript_dir()}" in shown[0]
    assert shown[1] == ""  # the line went when a session could use the chosen folder again
