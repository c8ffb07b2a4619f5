"""captionist.frozen: what the app does differently inside an installer's bundle, and --quit-after."""

from __future__ import annotations

import ctypes
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
        (["libggml.so.0", "libggml-cpu-haswell.so", "libggml-cpu-skylakex.so", "libggml-cuda.so"],
         ["libggml-cpu-haswell.so", "libggml-cpu-skylakex.so", "libggml-cuda.so"]),
        (["ggml.dll", "ggml-base.dll", "ggml-cuda.dll"], ["ggml-cuda.dll"]),
    ],
)
def test_dynamic_backends_are_the_loadable_modules(
    tmp_path: Path, names: list[str], expected: list[str]
) -> None:
    for name in names:
        (tmp_path / name).touch()
    assert [p.name for p in frozen.dynamic_backends(tmp_path)] == expected


class FakeFunction:
    """Stands in for a ctypes function: takes argtypes/restype, records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    def __call__(self, *args: object) -> None:
        self.calls.append(args)


class FakeGgml:
    def __init__(self) -> None:
        self.ggml_backend_load_all_from_path = FakeFunction()


def test_loadable_backends_are_registered_from_their_folder(tmp_path: Path) -> None:
    lib = tmp_path / "libggml" / "lib64"
    lib.mkdir(parents=True)
    for name in ("libggml.so.0", "libggml-base.so.0", "libggml-cpu-haswell.so"):
        (lib / name).touch()
    (tmp_path / "libggml.so.0").touch()  # PyInstaller's link at the top of the bundle
    opened: list[str] = []
    fake = FakeGgml()

    def open_library(path: str) -> FakeGgml:
        opened.append(path)
        return fake

    assert frozen.load_dynamic_backends(tmp_path, open_library)  # type: ignore[arg-type]
    assert opened == [str(tmp_path / "libggml.so.0")]  # the copy the engine links
    assert fake.ggml_backend_load_all_from_path.calls == [(os.fsencode(lib),)]


def test_a_linked_build_loads_nothing(tmp_path: Path) -> None:
    for name in ("libggml.so.0", "libggml-base.so.0", "libggml-cpu.so.0"):
        (tmp_path / name).touch()

    def open_library(path: str) -> ctypes.CDLL:
        raise AssertionError(f"nothing to load, yet {path} was opened")

    assert not frozen.load_dynamic_backends(tmp_path, open_library)


@LINUX_ONLY
def test_backend_loading_calls_the_real_ggml(tmp_path: Path) -> None:
    """The ctypes call against the installed ggml. With the PyPI wheel (CPU backend linked) a renamed
    copy of the linked CPU library stands in for a module without ggml's backend entry points, which
    is skipped quietly; with tools/install_ggml.sh's build (backends as modules) a real CPU variant
    module is loaded."""
    import libggml

    lib_dir = next(d for d in (Path(libggml.__file__).parent / n for n in ("lib64", "lib")) if d.is_dir())
    for name in ("libggml.so.0", "libggml-base.so.0"):
        (tmp_path / name).symlink_to(lib_dir / name)
    if (lib_dir / "libggml-cpu.so.0").exists():
        (tmp_path / "libggml-cpu.so.0").symlink_to(lib_dir / "libggml-cpu.so.0")
        shutil.copyfile(lib_dir / "libggml-cpu.so.0", tmp_path / "libggml-cpu-standin.so")
    else:
        shutil.copyfile(lib_dir / "libggml-cpu-x64.so", tmp_path / "libggml-cpu-x64.so")
    code = (
        "import sys; from pathlib import Path; from captionist import frozen; "
        "print(frozen.load_dynamic_backends(Path(sys.argv[1])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
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
        [sys.executable, "-m", "captionist", "--quit-after", "1"], env=env, capture_output=True, text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert (tmp_path / "home" / "config" / "settings.json").is_file()  # saved at a clean exit
