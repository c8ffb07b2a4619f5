"""The skip marker of tests that synthesize speech with espeak-ng."""

from __future__ import annotations

import pytest

from tools.demo_data import espeak_available

needs_espeak = pytest.mark.skipif(
    not espeak_available(), reason="espeak-ng is not installed (apt-get install espeak-ng): no synthesis"
)
