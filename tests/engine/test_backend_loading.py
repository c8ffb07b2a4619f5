"""Loading ggml's backend modules one by one (captionist.engine_backends over the engine's
load_cpu_backend / backend_modules / load_backend_module), and the crash guard around each GPU
driver: a module that crashes the process is recorded and not loaded again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from captionist import _engine, paths
from captionist.backend_guard import BackendGuard, BackendStage
from tests.fakes.crashing_backend import module_folder

# Lists the devices with the guard's policy: the process the app would be at its start
LIST_DEVICES = (
    "import sys; from pathlib import Path\n"
    "from captionist import engine, engine_backends\n"
    "from captionist.backend_guard import BackendGuard\n"
    "guard = BackendGuard(Path(sys.argv[1]))\n"
    "engine_backends.set_policy(guard.policy())\n"
    "print([d.name for d in engine.compute_devices()], engine_backends.loaded(), engine_backends.skipped())\n"
)


def _run(code: str, modules: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CAPTIONIST_GGML_MODULES": str(modules)}
    env.pop("CAPTIONIST_CPU_VARIANT", None)
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_modules_are_listed_by_backend_name(tmp_path: Path) -> None:
    names = ("libggml-vulkan.so", "libggml-cuda.so", "libggml-cpu-zen4.so", "libggml-cpu-x64.so",
             "libggml-base.so", "libggml.so", "libggml-Bad.so", "ggml-cuda.dll", "notes.txt")  # fmt: skip
    for name in names:
        (tmp_path / name).touch()
    found = _engine.backend_modules(str(tmp_path))
    assert found == [(name, str(tmp_path / f"libggml-{name}.so")) for name in ("cuda", "vulkan")]
    assert _engine.backend_modules(str(tmp_path / "missing")) == []


def test_no_cpu_module_in_the_folder_is_a_clear_error(tmp_path: Path) -> None:
    code = (
        "import sys; from captionist import _engine\n"
        "try:\n    print(repr(_engine.load_cpu_backend(sys.argv[1])))\n"
        "except RuntimeError as e:\n    print('error:', e)\n"
    )
    out = _run(code, tmp_path, str(tmp_path))
    assert out.returncode == 0, out.stderr
    if any(Path(_engine.backend_module_dir()).glob("libggml-cpu-*")):  # built with its modules
        assert out.stdout.startswith("error: no CPU backend of ggml could be loaded from"), out.stdout
        assert str(tmp_path) in out.stdout
    else:  # the CPU backend is linked in: nothing to load
        assert out.stdout.strip() == "''"


def test_a_driver_that_crashes_is_turned_off_at_the_next_start(tmp_path: Path) -> None:
    modules = module_folder(tmp_path / "modules", crashing="vulkan")
    guard_dir = tmp_path / "guard"
    first = _run(LIST_DEVICES, modules, str(guard_dir))
    assert first.returncode == -signal.SIGSEGV, (first.returncode, first.stderr)
    guard = BackendGuard(guard_dir)
    found = guard.collect()
    assert [(c.backend, c.stage) for c in found] == [("vulkan", BackendStage.START_DRIVER)]
    second = _run(LIST_DEVICES, modules, str(guard_dir))
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "['CPU'] [] ['vulkan']"
    assert guard.collect() == []
    guard.enable("vulkan")  # the user's "turn it back on": it crashes again, and is off again
    assert _run(LIST_DEVICES, modules, str(guard_dir)).returncode == -signal.SIGSEGV
    assert [c.backend for c in guard.collect()] == ["vulkan"]


def test_a_driver_that_starts_leaves_no_record(tmp_path: Path) -> None:
    modules = module_folder(tmp_path / "modules", real=("vulkan",))
    guard_dir = tmp_path / "guard"
    out = _run(LIST_DEVICES, modules, str(guard_dir))
    assert out.returncode == 0, out.stderr
    devices, loaded = out.stdout.split("] [", 1)
    assert devices.startswith("['CPU'") and loaded.startswith("'vulkan'")  # lavapipe where Mesa has it
    assert BackendGuard(guard_dir).collect() == [] and list(guard_dir.glob("*")) == []


def test_the_policy_must_come_before_the_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    from captionist import engine, engine_backends

    monkeypatch.undo()  # conftest's no-op set_policy
    engine.compute_devices()
    with pytest.raises(engine_backends.BackendsAlreadyLoaded):
        engine_backends.set_policy(engine_backends.BackendPolicy())


def test_the_commands_keep_a_crashed_driver_off_and_say_why(tmp_path: Path, wav_48k: Path) -> None:
    """``captionist transcribe`` guards the drivers as the app does: after the crash it says what
    happened once, runs on the CPU by default, and names the reason when asked for the backend."""
    modules = module_folder(tmp_path / "modules", crashing="vulkan")
    env = {**os.environ, "CAPTIONIST_GGML_MODULES": str(modules), "CAPTIONIST_HOME": str(tmp_path / "home")}
    demo = ["--model", str(paths.bundled_demo_model())]

    def transcribe(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "captionist", "transcribe", *demo, *args, str(wav_48k)],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    assert transcribe().returncode == -signal.SIGSEGV
    after = transcribe()
    assert after.returncode == 0, after.stderr
    assert "while starting the graphics driver for Vulkan" in after.stderr
    again = transcribe("--backend", "vulkan")  # chosen by name: on the CPU, and said so
    assert again.returncode == 0, again.stderr
    assert again.stdout == after.stdout
    note = "Vulkan is off since it crashed Captionist: the model runs on the CPU"
    assert again.stderr == f"captionist: {note}\n"


def test_a_model_asked_onto_a_backend_that_is_off_names_the_reason(tmp_path: Path) -> None:
    """The engine's Python API under the guard's policy, without the app's loader."""
    modules = module_folder(tmp_path / "modules", crashing="vulkan")
    guard_dir = tmp_path / "guard"
    assert _run(LIST_DEVICES, modules, str(guard_dir)).returncode == -signal.SIGSEGV
    BackendGuard(guard_dir).collect()
    code = LIST_DEVICES + (
        "from captionist import paths\n"
        "try:\n    engine.Model(paths.bundled_demo_model(), backend='vulkan')\n"
        "except engine.EngineError as e:\n    print('error:', e)\n"
    )
    out = _run(code, modules, str(guard_dir))
    assert out.returncode == 0, out.stderr
    error = out.stdout.splitlines()[-1]
    assert error.startswith("error: backend 'vulkan' is not available"), error
    assert error.endswith("its module (vulkan) was not loaded: it crashed Captionist before; the app's "
                          "Preferences → General can turn it back on")  # fmt: skip


def test_a_module_folder_without_ggml_is_one_clear_error(tmp_path: Path) -> None:
    """CAPTIONIST_GGML_MODULES naming a folder without ggml's modules (a broken install): listing the
    devices and loading a model each fail with an error naming the folder and where it came from."""
    code = (
        "from captionist import engine, paths\n"
        "for call in (engine.compute_devices, lambda: engine.Model(paths.bundled_demo_model())):\n"
        "    try:\n        call(); print('ok')\n"
        "    except engine.EngineError as e:\n        print('error:', e)\n"
    )
    out = _run(code, tmp_path / "missing")
    assert out.returncode == 0, out.stderr
    if not any(Path(_engine.backend_module_dir()).glob("libggml-cpu-*")):
        assert out.stdout.split() == ["ok", "ok"]  # the CPU backend is linked in: nothing to load
        return
    reason = f"no CPU backend of ggml could be loaded from '{tmp_path / 'missing'}' (CAPTIONIST_GGML_MODULES)"
    listing, model = out.stdout.splitlines()
    assert listing == f"error: no compute device: {reason}"
    assert model.startswith("error: ") and model.endswith(reason)


def test_threads_that_start_the_engine_together_load_each_module_once(tmp_path: Path) -> None:
    """Eight threads use the engine for the first time at once (the model-loading thread and the
    window's Preferences, say): one loads, inside one trial per GPU module, the others wait for it
    and all see the same devices."""
    modules = module_folder(tmp_path / "modules", real=("vulkan",))
    code = (
        "import threading, time, contextlib\n"
        "from captionist import engine, engine_backends\n"
        "trials = []\n"
        "@contextlib.contextmanager\n"
        "def trial(name):\n"
        "    trials.append(name); time.sleep(0.2); yield\n"
        "engine_backends.set_policy(engine_backends.BackendPolicy(trial=trial))\n"
        "seen = []\n"
        "def use():\n"
        "    seen.append(tuple(d.name for d in engine.compute_devices()))\n"
        "threads = [threading.Thread(target=use) for _ in range(8)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(trials, len(seen), len(set(seen)), seen[0])\n"
    )
    out = _run(code, modules)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("['vulkan'] 8 1 ('CPU'"), out.stdout  # and Vulkan0 where a driver is
