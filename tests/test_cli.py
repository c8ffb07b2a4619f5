"""The ``captionist`` entry point and the convert / quantize / live / devices commands."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import captionist
from captionist import __version__, engine
from captionist.__main__ import main
from captionist._version import __version__ as version_source
from captionist.feed.access import BindAddress


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("captionist: error: ")
    return lines[0]


def _fake_module(monkeypatch: pytest.MonkeyPatch, name: str, **attrs: object) -> None:
    mod = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(mod, key, value)
    monkeypatch.setitem(sys.modules, name, mod)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert __version__ == version_source
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"captionist {version_source}"


def test_no_arguments_start_the_gui(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    _fake_module(monkeypatch, "captionist.ui.app", run_gui=lambda in_tray: calls.append(("gui", in_tray)))
    assert main([]) == 0 and calls == [("gui", False)]
    assert main(["--in-tray"]) == 0 and calls[-1] == ("gui", True)  # what a login item runs


def test_no_gui_available_says_so(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "captionist.ui.app", None)
    assert main([]) == 1
    err = capsys.readouterr().err
    assert "desktop app is not available" in err and "Traceback" not in err


def test_usage_errors_exit_2(capsys) -> None:
    assert main(["frobnicate"]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert main(["quantize", "a.gguf", "b.gguf", "Q3_X"]) == 2
    assert "invalid choice: 'Q3_X'" in capsys.readouterr().err


def test_convert_calls_the_converter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import captionist.convert as convert

    calls = []
    monkeypatch.setattr(convert, "convert_checkpoint", lambda *a, **k: calls.append((a, k)))
    out = tmp_path / "m.gguf"
    assert main(["convert", str(tmp_path), "-o", str(out), "--outtype", "bf16"]) == 0
    assert calls == [((tmp_path, out, "bf16"), {"progress": True})]
    assert main(["convert", str(tmp_path), "-o", str(out)]) == 0
    assert calls[1][0][2] == "f16"


def test_convert_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import captionist.convert as convert

    def fail(*args: object, **kwargs: object) -> None:
        raise convert.ConversionError("missing tensor 'audio_tower.conv1.weight'")

    monkeypatch.setattr(convert, "convert_checkpoint", fail)
    assert main(["convert", str(tmp_path), "-o", str(tmp_path / "m.gguf")]) == 2
    assert "missing tensor" in _one_error_line(capsys.readouterr().err)
    assert main(["convert", str(tmp_path / "nope"), "-o", str(tmp_path / "m.gguf")]) == 2
    assert "checkpoint not found" in _one_error_line(capsys.readouterr().err)


def test_quantize(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    calls = []
    monkeypatch.setattr(engine, "quantize", lambda *a: calls.append(a), raising=False)
    src = tmp_path / "in.gguf"
    src.write_bytes(b"GGUF")
    assert main(["quantize", str(src), str(tmp_path / "out.gguf"), "q4_k_m"]) == 0
    assert calls == [(str(src), str(tmp_path / "out.gguf"), "Q4_K_M")]
    assert main(["quantize", str(tmp_path / "missing.gguf"), str(tmp_path / "o.gguf"), "Q8_0"]) == 2
    assert "model file not found" in _one_error_line(capsys.readouterr().err)
    assert main(["quantize", str(src), str(src), "Q8_0"]) == 2
    assert "must differ" in _one_error_line(capsys.readouterr().err)

    def fail(*args: object) -> None:
        raise engine.EngineError("tensor enc.blk.0.attn_q.weight: row size not a multiple of 256")

    monkeypatch.setattr(engine, "quantize", fail, raising=False)
    assert main(["quantize", str(src), str(tmp_path / "o.gguf"), "Q4_K"]) == 2
    assert "not a multiple of 256" in _one_error_line(capsys.readouterr().err)
    monkeypatch.delattr(engine, "quantize")
    assert main(["quantize", str(src), str(tmp_path / "o.gguf"), "Q4_K"]) == 2
    assert "quantization is not available" in _one_error_line(capsys.readouterr().err)


NO_FEED = {"serve": None, "serve_token": None, "captions_file": None, "keywords": []}


def test_live_passes_its_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    _fake_module(monkeypatch, "captionist.pipeline.headless", run_live=lambda **kw: calls.append(kw) or 3)
    out = tmp_path / "t.srt"
    argv = ["live", "--model", "m.gguf", "--device", "2", "--delay-ms", "480", "-o", str(out)]
    assert main([*argv, "--duration", "1.5", "--backend", "cpu"]) == 3
    assert calls == [
        {
            "model": "m.gguf",
            "device": ["2"],
            "latency_ms": 480,
            "language": None,
            "output": out,
            "duration": 1.5,
            "backend": "cpu",
            **NO_FEED,
        }
    ]
    assert main(["live"]) == 3
    assert calls[1] == {
        "model": None,
        "device": None,
        "latency_ms": None,
        "language": None,
        "output": None,
        "duration": None,
        "backend": "auto",
        **NO_FEED,
    }
    assert main(["live", "--latency-ms", "160", "--language", "de-DE"]) == 3
    assert (calls[2]["latency_ms"], calls[2]["language"]) == (160, "de-DE")
    argv = ["live", "--serve", "0.0.0.0:0", "--serve-token", "tok_12345", "--captions-file", "c.txt"]
    assert main([*argv, "--keyword", "Alice", "--keyword", "budget review"]) == 3
    assert calls[3]["serve"] == BindAddress("0.0.0.0", 0) and calls[3]["serve_token"] == "tok_12345"
    assert calls[3]["captions_file"] == Path("c.txt") and calls[3]["keywords"] == ["Alice", "budget review"]
    assert main(["live", "--serve", "8791"]) == 3 and calls[4]["serve"] == BindAddress("127.0.0.1", 8791)
    assert main(["live", "--device", "usb", "--device", "monitor"]) == 3
    assert calls[5]["device"] == ["usb", "monitor"]  # mixed


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--serve", "http://x"], "--serve takes [HOST:]PORT"), (["--serve", "99999"], "port must be 0-65535"),
     (["--serve", "0", "--serve-token", "short"], "--serve-token must be 8-128")],
)  # fmt: skip
def test_live_refuses_a_bad_serve_option_in_one_line(argv: list[str], message: str, capsys) -> None:
    assert main(["live", *argv]) == 2
    assert message in _one_error_line(capsys.readouterr().err)


def test_live_errors(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    assert main(["live", "--duration", "0"]) == 2
    assert "--duration must be > 0" in _one_error_line(capsys.readouterr().err)
    assert main(["live", "--latency-ms", "560", "--delay-ms", "480"]) == 2
    assert "--latency-ms 560 and --delay-ms 480 differ" in _one_error_line(capsys.readouterr().err)
    monkeypatch.setitem(sys.modules, "captionist.pipeline.headless", None)
    assert main(["live"]) == 2
    assert "live captioning is not available" in _one_error_line(capsys.readouterr().err)


def test_devices(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import captionist.audio.devices as devices

    monkeypatch.setattr(devices, "format_device_list", lambda: "0  Built-in Microphone\n1  Monitor")
    assert main(["devices"]) == 0
    assert capsys.readouterr().out == "0  Built-in Microphone\n1  Monitor\n"

    def unavailable() -> str:
        raise devices.AudioUnavailable("audio is unavailable: PortAudio library not found")

    monkeypatch.setattr(devices, "format_device_list", unavailable)
    assert main(["devices"]) == 2
    assert "PortAudio library not found" in _one_error_line(capsys.readouterr().err)


def test_a_bug_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def buggy() -> str:
        return {}["missing"]

    import captionist.audio.devices as devices

    monkeypatch.setattr(devices, "format_device_list", buggy)
    with pytest.raises(KeyError):
        main(["devices"])


def test_module_entry_point_in_a_real_process(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(captionist.__file__).parent.parent)
    args = [sys.executable, "-m", "captionist", "transcribe", str(tmp_path / "none.wav"), "--model", "x.gguf"]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == f"captionist: error: audio file not found: {tmp_path / 'none.wav'}\n"
    proc = subprocess.run([*args[:3], "--version"], capture_output=True, text=True, env=env, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, f"captionist {version_source}\n")


def test_transcribe_golden_with_a_real_fastconformer_model(
    nemotron_tiny_gguf: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`captionist transcribe` prints exactly what Model.transcribe gives for the same audio."""
    import json

    from captionist.audio.files import load_audio
    from captionist.transcript import render, segment_tokens

    wav = Path(__file__).resolve().parent / "data" / "audio" / "speech_short.wav"
    model = engine.Model(nemotron_tiny_gguf, backend="cpu", n_threads=1)
    want = model.transcribe(load_audio(wav))
    assert want.text.strip()

    args = ["transcribe", str(wav), "--model", str(nemotron_tiny_gguf), "--backend", "cpu", "--threads", "1"]
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["text"] == want.text.strip() and doc["token_ids"] == want.token_ids
    assert [(t["id"], t["piece"], t["time_ms"]) for t in doc["tokens"]] == [
        (t.id, t.piece, t.time_ms) for t in want.tokens
    ]
    assert (doc["latency_ms"], doc["language"]) == (model.default_latency_ms, None) and "delay_ms" not in doc

    assert main(args) == 0
    out = capsys.readouterr().out
    assert out == render("txt", segment_tokens(want.tokens, token_ms=model.token_ms))
    assert "".join(out.split()) == "".join(want.text.split())  # every character, in order

    assert main(["transcribe", str(wav), "--model", str(nemotron_tiny_gguf), "--latency-ms", "100"]) == 2
    assert _one_error_line(capsys.readouterr().err) == (
        "captionist: error: latency 100 ms is not supported by this model; "
        "choose one of 80, 160, 560, 1120 ms"
    )
    assert main(["transcribe", str(wav), "--model", str(nemotron_tiny_gguf), "--language", "de"]) == 2
    assert "takes no language choice" in _one_error_line(capsys.readouterr().err)


def test_transcribe_with_a_real_end_of_utterance_model(parakeet_eou_tiny_gguf: Path, capsys) -> None:
    from captionist.audio.files import load_audio
    from captionist.transcript import parse, render, segment_tokens, with_utterance_ends

    wav = Path(__file__).resolve().parent / "data" / "audio" / "speech_short.wav"
    model = engine.Model(parakeet_eou_tiny_gguf, backend="cpu", n_threads=1)
    want = model.transcribe(load_audio(wav))
    ends = [at for at, e in want.events if e == engine.StreamEvent.END_OF_UTTERANCE]
    captions = segment_tokens(with_utterance_ends(want.tokens, ends), token_ms=model.token_ms)
    assert len(ends) >= 2 and len(captions) > len(segment_tokens(want.tokens, token_ms=model.token_ms))
    args = ["transcribe", str(wav), "--model", str(parakeet_eou_tiny_gguf), "--threads", "1"]
    assert main([*args, "--format", "srt"]) == 0
    assert parse("srt", capsys.readouterr().out) == captions  # a new cue after each end of utterance
    assert main([*args, "--latency-ms", "160"]) == 0
    out = capsys.readouterr().out
    assert out == render("txt", captions) and len(out.splitlines()) > 1  # a line per utterance
    assert "".join(out.split()) == "".join(want.text.split())


def test_devices_compute_lists_what_backend_takes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices", "--compute"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    devices = engine.compute_devices()
    assert len(lines) == len(devices)
    assert [line.split()[0] for line in lines] == [d.name.lower() for d in devices]
    assert sum(line.endswith("(auto)") for line in lines) == 1
    cpu_line = next(line for line in lines if line.startswith("cpu "))
    assert "AVX" in cpu_line or "NEON" in cpu_line or "SSE" in cpu_line


def test_devices_says_which_backends_are_off_and_turns_them_back_on(capsys: pytest.CaptureFixture) -> None:
    from captionist import paths

    folder = paths.backend_guard_dir()
    folder.mkdir(parents=True)
    (folder / "crashed.json").write_text(
        '{"crashes": [{"backend": "vulkan", "stage": "start_driver", "when": "2026-12-06T05:30:00"}]}'
    )
    assert main(["devices", "--compute"]) == 0
    note = capsys.readouterr().out.strip().splitlines()[-1]
    assert note == ("# Vulkan is off: it crashed Captionist 06 Dec 2026, 05:30 when its driver started. "
                    "To use it again: captionist devices --turn-on vulkan")  # fmt: skip
    assert main(["devices", "--turn-on", "Vulkan"]) == 0
    assert capsys.readouterr().out == "vulkan is on again from the next run of Captionist\n"
    assert main(["devices", "--compute"]) == 0
    assert "#" not in capsys.readouterr().out
    assert main(["devices", "--turn-on", "vulkan"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line == "captionist: error: 'vulkan' is not turned off (off since they crashed Captionist: none)"


def test_an_unknown_backend_is_one_clear_error(
    nemotron_tiny_gguf: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wav = Path(__file__).resolve().parent / "data" / "audio" / "speech_short.wav"
    code = main(["transcribe", str(wav), "--model", str(nemotron_tiny_gguf), "--backend", "warpdrive"])
    assert code != 0
    line = _one_error_line(capsys.readouterr().err)
    assert "warpdrive" in line and "not available" in line and "CPU" in line
