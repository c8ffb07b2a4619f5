"""The built installer bundle, run as a user would: ``make -C packaging linux`` first (.ci/run does).

Marked slow: they need dist/captionist/ from PyInstaller. They start the frozen program itself, with
its own Python, engine, ggml and Qt, and a config folder of their own (CAPTIONIST_HOME).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from version import read_version

from tests.fakes.crashing_backend import module_folder
from tests.fakes.fake_portal import FakePortal, PrivateBus

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "dist" / "captionist"
CLIPS = ROOT / "tests" / "data" / "demo" / "clips.json"
REFERENCE = ROOT / "tests" / "data" / "reference" / "tiny_small"  # a random-weight model and its golden ids
LINUX = sys.platform.startswith("linux")

pytestmark = pytest.mark.slow


def program() -> Path:
    """The bundle's command-line program (on Windows the console one, beside the windowed one)."""
    if sys.platform == "darwin":
        return ROOT / "dist" / "Captionist.app" / "Contents" / "MacOS" / "Captionist"
    return BUNDLE / ("captionist-cli.exe" if sys.platform == "win32" else "captionist")


@pytest.fixture(scope="module")
def exe() -> Path:
    path = program()
    if not path.is_file():
        pytest.fail(f"{path} is missing: build it first with `make -C packaging linux`")
    return path


def run(
    args: list[str | Path], home: Path, timeout: float = 300, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``args`` with ``home`` as CAPTIONIST_HOME (no user settings touched) and ``env`` added."""
    environ = {**os.environ, "CAPTIONIST_HOME": str(home), **env}
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=timeout, env=environ
    )


def test_version(exe: Path, tmp_path: Path) -> None:
    out = run([exe, "--version"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"captionist {read_version()}"


def words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text.lower())


def test_transcribes_a_clip_with_the_embedded_demo_model(exe: Path, tmp_path: Path) -> None:
    """With no --model the frozen program uses its embedded demo model and writes exactly what the
    installed package's engine and demo model write for the same held-out clip (how right that
    is, is tests/engine/test_demo_model.py's business), and that is mostly the spoken words."""
    import soundfile

    from captionist import engine, paths

    clip = json.loads(CLIPS.read_text(encoding="utf-8"))[0]
    wav = CLIPS.parent / clip["file"]
    out = run([exe, "transcribe", wav, "--delay-ms", "480"], tmp_path)  # no --model: the bundled one
    assert out.returncode == 0, out.stderr
    pcm, _ = soundfile.read(wav, dtype="float32")
    expected = engine.Model(paths.bundled_demo_model(), backend="cpu").transcribe(pcm, delay_ms=480).text
    assert words(out.stdout) == words(expected)
    spoken = words(clip["text"])
    assert len(set(words(expected)) & set(spoken)) >= len(spoken) // 2 + 1, (expected, spoken)


def test_frozen_converter_and_engine_match_the_reference(exe: Path, tmp_path: Path) -> None:
    """Convert, quantize and transcribe inside the bundle: the reference implementation's token ids."""
    model = tmp_path / "tiny.gguf"
    out = run([exe, "convert", REFERENCE / "mistral", "-o", model, "--outtype", "f32"], tmp_path)
    assert out.returncode == 0, out.stderr
    expected = json.loads((REFERENCE / "expected.json").read_text())
    case = next(c for c in expected["cases"] if c["clip"] == "speech_mid.wav" and c["delay_tokens"] == 2)
    clip = ROOT / "tests" / "data" / "audio" / case["clip"]
    out = run([exe, "transcribe", clip, "--model", model, "--delay-ms", "160", "--format", "json"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["token_ids"] == case["token_ids"]
    quantized = tmp_path / "q8.gguf"
    out = run([exe, "quantize", model, quantized, "Q8_0"], tmp_path)
    assert out.returncode == 0, out.stderr
    out = run([exe, "transcribe", clip, "--model", quantized, "--format", "srt"], tmp_path)
    assert out.returncode == 0 and "-->" in out.stdout, out.stderr


def test_gui_starts_offscreen_and_quits_cleanly(exe: Path, tmp_path: Path) -> None:
    out = run([exe, "--quit-after", "4"], tmp_path, timeout=120, QT_QPA_PLATFORM="offscreen")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert (tmp_path / "config" / "settings.json").is_file()  # written on the way out


@pytest.mark.skipif(not LINUX, reason="the crashing module is built as a Linux shared object")
def test_the_bundle_keeps_a_gpu_driver_that_crashed_it_off(tmp_path: Path) -> None:
    """A copy of the bundle whose Vulkan module crashes when it loads (as a broken driver does): the
    first run dies in it, the next runs on the CPU and says why (frozen.prepare points the engine at
    the bundle's modules, which it loads under the crash guard)."""
    internal = BUNDLE / "_internal"
    if not any(internal.glob("libggml-cpu-*.so")):
        pytest.skip("this bundle links ggml's CPU backend: it has no modules to load")
    copy = tmp_path / "bundle"
    if subprocess.run(["cp", "-al", str(BUNDLE), str(copy)], capture_output=True).returncode != 0:
        subprocess.run(["cp", "-a", str(BUNDLE), str(copy)], check=True)  # another file system
    crashing = module_folder(tmp_path / "modules", crashing="vulkan") / "libggml-vulkan.so"
    (copy / "_internal" / "libggml-vulkan.so").unlink(missing_ok=True)  # a link: the original stays
    (copy / "_internal" / "libggml-vulkan.so").write_bytes(crashing.read_bytes())
    env = {"GGML_VK_VISIBLE_DEVICES": "0"}
    first = run([copy / "captionist", "devices", "--compute"], tmp_path / "home", timeout=120, **env)
    assert first.returncode == -signal.SIGSEGV, (first.returncode, first.stderr)
    second = run([copy / "captionist", "devices", "--compute"], tmp_path / "home", timeout=120, **env)
    assert second.returncode == 0, second.stderr
    devices, off = second.stdout.splitlines()
    assert devices.split()[0] == "cpu"
    assert off.startswith("# Vulkan is off: it crashed Captionist") and off.endswith("--turn-on vulkan")
    assert "while starting the graphics driver for Vulkan" in second.stderr
    assert (BUNDLE / "_internal" / "libggml-vulkan.so").read_bytes() != crashing.read_bytes()


def test_the_frozen_app_serves_the_caption_page(exe: Path, tmp_path: Path) -> None:
    # aiohttp and feed/page.html inside the bundle: the feed switched on in the settings, then the
    # page fetched from the running app.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "settings.json").write_text(json.dumps({"feed": {"enabled": True, "port": port}}))
    environ = {**os.environ, "CAPTIONIST_HOME": str(tmp_path), "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.Popen([str(exe), "--quit-after", "20"], env=environ, stderr=subprocess.PIPE, text=True)
    page = ""
    try:
        deadline = time.monotonic() + 60
        while not page and proc.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
                    page = resp.read().decode()
            except OSError:
                time.sleep(0.3)
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=60)
    assert "<title>Captionist captions</title>" in page and '"font_size": 28' in page, stderr


@pytest.mark.skipif(not LINUX or not PrivateBus.available(), reason="Linux with dbus-daemon only")
def test_the_frozen_app_asks_a_wayland_desktop_for_its_shortcuts(exe: Path, tmp_path: Path) -> None:
    # jeepney and the portal client inside the bundle: a Wayland session whose bus has a (fake)
    # GlobalShortcuts portal gets the three shortcuts bound.
    with PrivateBus() as bus, FakePortal(bus.address) as portal:
        environ = {
            **os.environ,
            "CAPTIONIST_HOME": str(tmp_path),
            "QT_QPA_PLATFORM": "offscreen",
            "XDG_SESSION_TYPE": "wayland",
            "DBUS_SESSION_BUS_ADDRESS": bus.address,
        }
        proc = subprocess.Popen(
            [str(exe), "--quit-after", "20"], env=environ, stderr=subprocess.PIPE, text=True
        )
        try:
            portal.wait_for(lambda: portal.bound or proc.poll() is not None, timeout=60)
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=60)
        bound = [key for key, _ in portal.bound[0][1]] if portal.bound else []
        assert bound == ["start_stop", "show_overlay", "click_through"], stderr


def test_bundle_holds_the_engine_ggml_and_the_demo_model() -> None:
    internal = BUNDLE / "_internal"
    assert (internal / "captionist" / "models_data" / "demo.gguf").is_file()
    assert list((internal / "captionist").glob("_engine*"))
    names = {p.name for p in internal.rglob("*ggml*")}
    for lib in ("libggml.so.0", "libggml-base.so.0") if LINUX else ():
        assert lib in names
    if LINUX:  # the CPU backend: linked (the PyPI wheel) or one module per CPU variant (install_ggml.sh)
        assert "libggml-cpu.so.0" in names or any(n.startswith("libggml-cpu-") for n in names), names
    assert (internal / "captionist" / "resources" / "captionist.svg").is_file()
    assert (internal / "captionist" / "feed" / "page.html").is_file()
    assert (internal / "captionist" / "help" / "README.md").is_file()  # what Help opens
    assert list((internal / "pywebrtc_audio").glob("_webrtc_audio*"))  # echo cancellation (audio/echo.py)


def test_bundle_leaves_out_what_the_app_does_not_use() -> None:
    files = {p.name for p in BUNDLE.rglob("*")}
    for unwanted in (
        "libQt6Quick.so.6",
        "libQt6Qml.so.6",
        "libQt6Pdf.so.6",
        "libQt6WebEngineCore.so.6",
        "libqgtk3.so",
        "libqtvirtualkeyboardplugin.so",
        "torch",
        "transformers",
        "PIL",
    ):
        assert unwanted not in files
    assert not (BUNDLE / "_internal" / "PySide6" / "Qt" / "translations").exists()


@pytest.mark.skipif(not LINUX, reason="ldd")
def test_every_library_resolves_inside_the_bundle_or_the_system() -> None:
    """Only Wayland's client libraries may come from the user's system (any Wayland desktop has them)."""
    internal = BUNDLE / "_internal"
    missing = []
    for lib in internal.rglob("*.so*"):
        if lib.is_symlink() or not lib.is_file():
            continue
        ldd = subprocess.run(
            ["ldd", str(lib)],
            capture_output=True,
            text=True,
            env={**os.environ, "LD_LIBRARY_PATH": str(internal)},
        )
        missing += [
            f"{lib.name}: {line.split()[0]}"
            for line in ldd.stdout.splitlines()
            if "not found" in line and not line.strip().startswith("libwayland-")
        ]
    assert not missing


@pytest.mark.skipif(not LINUX, reason="the Linux bundle's installer")
def test_linux_install_script_adds_the_menu_entry_and_removes_it(tmp_path: Path) -> None:
    home = tmp_path / "user"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "XDG_DATA_HOME": ""}
    out = subprocess.run(
        ["sh", str(BUNDLE / "install.sh")], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    desktop = home / ".local/share/applications/captionist.desktop"
    assert f'Exec="{home}/.local/opt/captionist/captionist"' in desktop.read_text()
    assert (home / ".local/share/icons/hicolor/256x256/apps/captionist.png").is_file()
    assert (home / ".local/share/icons/hicolor/scalable/apps/captionist.svg").is_file()
    version = run([home / ".local/bin/captionist", "--version"], tmp_path / "cfg")
    assert version.stdout.strip() == f"captionist {read_version()}"

    out = subprocess.run(
        ["sh", str(home / ".local/opt/captionist/install.sh"), "--uninstall"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert not desktop.exists()
    assert not (home / ".local/opt/captionist").exists()
    assert not (home / ".local/bin/captionist").exists()
