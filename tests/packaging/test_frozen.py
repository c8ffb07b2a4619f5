"""captionist.frozen: what the app does differently inside an installer's bundle, and --quit-after."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from captionist import __main__ as entry
from captionist import frozen


@pytest.fixture
def fake_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Pretend to run frozen from ``tmp_path`` (what PyInstaller's bootloader sets)."""
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    return tmp_path


def test_not_frozen_in_a_python_install() -> None:
    assert not frozen.is_frozen()
    assert frozen.bundle_dir() is None
    assert frozen.resource_dir() is None


def test_prepare_does_nothing_when_not_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LD_LIBRARY_PATH", "/somewhere")
    frozen.prepare()
    assert os.environ["LD_LIBRARY_PATH"] == "/somewhere"


def test_frozen_paths_point_into_the_bundle(fake_bundle: Path) -> None:
    assert frozen.is_frozen()
    assert frozen.bundle_dir() == fake_bundle
    assert frozen.resource_dir() == fake_bundle / "captionist" / "resources"


LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux loader behaviour")


@LINUX_ONLY
def test_prepare_gives_child_processes_the_users_library_path(
    fake_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LD_LIBRARY_PATH", str(fake_bundle))
    monkeypatch.setenv("LD_LIBRARY_PATH_ORIG", "/opt/mine")
    frozen.prepare()
    assert os.environ["LD_LIBRARY_PATH"] == "/opt/mine"
    assert "LD_LIBRARY_PATH_ORIG" not in os.environ

    monkeypatch.setenv("LD_LIBRARY_PATH", str(fake_bundle))  # the user had none
    frozen.prepare()
    assert "LD_LIBRARY_PATH" not in os.environ


def test_prepare_gives_a_windowed_app_null_streams(
    fake_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    monkeypatch.setattr(sys, "stderr", None)
    frozen.prepare()
    assert sys.stdout is not None and sys.stderr is not None
    print("goes nowhere")
    sys.stderr.write("neither does this\n")


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["libggml.so.0", "libggml-base.so.0", "libggml-cpu.so.0"], []),  # the PyPI wheel: linked
        (["libggml.0.dylib", "libggml-metal.0.dylib", "libggml-blas.0.dylib"], []),
        (
            ["libggml.so.0", "libggml-cpu-haswell.so", "libggml-cpu-skylakex.so", "libggml-cuda.so"],
            ["libggml-cpu-haswell.so", "libggml-cpu-skylakex.so", "libggml-cuda.so"],
        ),
        (["ggml.dll", "ggml-base.dll", "ggml-cuda.dll"], ["ggml-cuda.dll"]),
    ],
)
def test_dynamic_backends_are_the_loadable_modules(
    tmp_path: Path, names: list[str], expected: list[str]
) -> None:
    for name in names:
        (tmp_path / name).touch()
    assert [p.name for p in frozen.dynamic_backends(tmp_path)] == expected


def test_the_module_folder_is_found_where_pyinstaller_keeps_it(tmp_path: Path) -> None:
    lib = tmp_path / "libggml" / "lib64"
    lib.mkdir(parents=True)
    for name in ("libggml.so.0", "libggml-base.so.0", "libggml-cpu-haswell.so"):
        (lib / name).touch()
    (tmp_path / "libggml.so.0").touch()  # PyInstaller's link at the top of the bundle
    assert frozen.dynamic_backend_folder(tmp_path) == lib


def test_a_linked_build_has_no_module_folder(tmp_path: Path) -> None:
    for name in ("libggml.so.0", "libggml-base.so.0", "libggml-cpu.so.0"):
        (tmp_path / name).touch()
    assert frozen.dynamic_backend_folder(tmp_path) is None


def test_prepare_points_the_engine_at_the_bundles_modules(
    fake_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("libggml.so.0", "libggml-cpu-haswell.so", "libggml-vulkan.so"):
        (fake_bundle / name).touch()
    monkeypatch.setenv("CAPTIONIST_GGML_MODULES", "")  # unset for prepare; restored after the test
    frozen.prepare()
    assert os.environ["CAPTIONIST_GGML_MODULES"] == str(fake_bundle)
    monkeypatch.setenv("CAPTIONIST_GGML_MODULES", "/the/users/choice")
    frozen.prepare()
    assert os.environ["CAPTIONIST_GGML_MODULES"] == "/the/users/choice"


@LINUX_ONLY
def test_the_engine_loads_the_modules_of_the_folder_it_is_given(tmp_path: Path) -> None:
    """The real engine with CAPTIONIST_GGML_MODULES naming a bundle-like folder. With
    tools/install_ggml.sh's build (backends as modules) it loads a CPU variant from there (the only
    one: x64); with the PyPI wheel (CPU backend linked) there is nothing to load and the linked CPU
    backend serves."""
    import libggml

    lib_dir = next(d for d in (Path(libggml.__file__).parent / n for n in ("lib64", "lib")) if d.is_dir())
    linked = (lib_dir / "libggml-cpu.so.0").exists()
    if not linked:
        shutil.copyfile(lib_dir / "libggml-cpu-x64.so", tmp_path / "libggml-cpu-x64.so")
    code = (
        "from captionist import engine; d = engine.compute_devices(); "
        "print([x.name for x in d], d[0].cpu_features)"
    )
    env = {**os.environ, "CAPTIONIST_GGML_MODULES": str(tmp_path)}
    env.pop("CAPTIONIST_CPU_VARIANT", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("['CPU']"), out.stdout
    if not linked:
        assert "AVX" not in out.stdout  # the x64 (SSE2) variant, not the machine's best from the wheel
    assert "load_backend" not in out.stderr  # ggml's loader lines stay quiet unless CAPTIONIST_GGML_LOG


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--quit-after", "3"], 3.0),
        (["--quit-after", "0.5"], 0.5),
        (["--quit-after", "0"], None),
        (["--quit-after", "soon"], None),
        (["--quit-after"], None),
        (["transcribe", "--quit-after", "3"], None),
    ],
)
def test_quit_after_is_only_the_whole_command_line(args: list[str], expected: float | None) -> None:
    assert entry.quit_after_seconds(args) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], (False, None)),
        (["--in-tray"], (True, None)),
        (["--in-tray", "--quit-after", "3"], (True, 3.0)),
        (["--quit-after", "3", "--in-tray"], (True, 3.0)),
        (["--in-tray", "--in-tray"], None),
        (["--in-tray", "transcribe", "a.wav"], None),
        (["transcribe", "--in-tray"], None),
    ],
)
def test_the_desktop_app_takes_in_tray_and_quit_after_only(args: list[str], expected: object) -> None:
    assert entry.gui_request(args) == expected


def test_gui_quits_by_itself_after_quit_after(tmp_path: Path) -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "CAPTIONIST_HOME": str(tmp_path / "home")}
    out = subprocess.run(
        [sys.executable, "-m", "captionist", "--quit-after", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert (tmp_path / "home" / "config" / "settings.json").is_file()  # saved at a clean exit
