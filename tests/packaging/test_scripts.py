"""The installer scripts that cannot run here (macOS, Windows, hosted CI): what they must say."""

from __future__ import annotations

import plistlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"


def test_makefile_has_a_target_per_platform() -> None:
    targets = set(re.findall(r"^([a-z]+):", (PACKAGING / "Makefile").read_text(), re.M))
    assert {"linux", "macos", "windows", "icons", "clean"} <= targets


def test_ci_workflow_builds_every_platform_by_calling_the_makefile_only() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "installers.yml").read_text())
    job = workflow["jobs"]["installer"]
    matrix = job["strategy"]["matrix"]["include"]
    assert {m["os"] for m in matrix} == {"ubuntu-22.04", "macos-14", "macos-15-intel", "windows-latest"}
    assert {m["target"] for m in matrix} == {"linux", "macos", "windows"}
    runs = [step["run"] for step in job["steps"] if "run" in step]
    builds = [r for r in runs if "make" in r and "choco" not in r]
    assert builds == ["make -C packaging ${{ matrix.target }} PYTHON=python"]
    assert any(step.get("uses", "").startswith("actions/upload-artifact") for step in job["steps"])


def test_windows_installer_is_per_user_and_takes_the_version_from_outside() -> None:
    iss = (PACKAGING / "windows" / "captionist.iss").read_text()
    assert "PrivilegesRequired=lowest" in iss
    assert "AppVersion={#AppVersion}" in iss
    assert "{autoprograms}\\Captionist" in iss  # Start-menu entry
    assert not re.search(r"\d+\.\d+\.\d+", iss.split("[Setup]")[1])  # no version written in


def test_macos_entitlements_allow_audio_input() -> None:
    entitlements = plistlib.loads((PACKAGING / "macos" / "entitlements.plist").read_bytes())
    assert entitlements["com.apple.security.device.audio-input"] is True


def test_the_spec_asks_for_the_microphone() -> None:
    assert "NSMicrophoneUsageDescription" in (PACKAGING / "captionist.spec").read_text()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("script", ["macos/build_dmg.sh", "linux/install.sh"])
def test_shell_scripts_parse(script: str) -> None:
    out = subprocess.run(["bash", "-n", str(PACKAGING / script)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
