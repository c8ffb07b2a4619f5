"""Random espeak-ng variants for the demo model's training data: seeded files, a private data copy,
and voices that really differ from their accent, from each other and from the held-out voices."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from tests.tools.espeak_marker import needs_espeak
from tools.demo_bank import WordBank
from tools.demo_data import HELDOUT_VOICES, TRAIN_ACCENTS, synthesize_word
from tools.demo_voices import (
    N_FORMANTS,
    RANDOM_PREFIX,
    VARIANTS_PER_DIR,
    install_variants,
    random_variant,
    system_data_dir,
)


def test_random_variants_are_seeded_and_spread_the_formants() -> None:
    a = random_variant(np.random.default_rng(3), "cx0001")
    assert a == random_variant(np.random.default_rng(3), "cx0001")
    texts = [random_variant(np.random.default_rng(s), "cx0001") for s in range(40)]
    assert len(set(texts)) == 40
    assert a.startswith("language variant\nname cx0001\n")
    scales = []
    for text in texts:
        formants = re.findall(r"^formant (\d) (\d+) (\d+) (\d+)$", text, re.MULTILINE)
        assert [int(f[0]) for f in formants] == list(range(N_FORMANTS))
        scales.append(np.mean([int(f[1]) for f in formants]))
        low, high = map(int, re.search(r"^pitch (\d+) (\d+)$", text, re.MULTILINE).groups())
        assert 60 <= low < high
    # One vocal-tract scale per voice: shorter and longer tracts than any default voice's 100 %.
    assert min(scales) < 92 and max(scales) > 118


@needs_espeak
def test_install_links_espeak_data_once_and_refuses_other_names(tmp_path: Path) -> None:
    variants = {"cx0000": random_variant(np.random.default_rng(0), "cx0000")}
    paths = install_variants(variants, tmp_path)
    path = Path(paths["cx0000"])
    written = path / "espeak-ng-data" / "voices" / "!v" / "cx0000"
    assert written.read_text() == variants["cx0000"]
    assert (path / "espeak-ng-data" / "phontab").resolve() == (system_data_dir() / "phontab").resolve()
    assert not (system_data_dir() / "voices" / "!v" / "cx0000").exists()  # the system's data untouched
    stamp = written.stat().st_mtime_ns
    assert install_variants(variants, tmp_path) == paths
    assert written.stat().st_mtime_ns == stamp  # not written again
    other = {"cx0000": random_variant(np.random.default_rng(1), "cx0000")}
    assert install_variants(other, tmp_path) != paths  # another file, another directory
    with pytest.raises(ValueError, match="cx"):
        install_variants({"f5": "language variant\n"}, tmp_path)  # may never shadow a named variant


@needs_espeak
def test_many_variants_are_spread_over_directories_espeak_can_list(tmp_path: Path) -> None:
    """espeak-ng lists at most 349 voices; one directory with hundreds of variants loses some."""
    rng = np.random.default_rng(5)
    names = [f"cx{i:04d}" for i in range(VARIANTS_PER_DIR + 2)]
    paths = install_variants({n: random_variant(rng, n) for n in names}, tmp_path)
    assert len(set(paths.values())) == 2
    for name in (names[0], names[VARIANTS_PER_DIR - 1], names[-1]):
        assert _sound("go", f"en-us+{name}", paths[name]) != _sound("go", "en-us")


def _sound(word: str, voice: str, data_path: str = "") -> bytes:
    return hashlib.sha256(synthesize_word(word, voice, 170, 50, data_path).tobytes()).digest()


@needs_espeak
def test_random_variant_voices_really_differ(tmp_path: Path) -> None:
    """espeak-ng says nothing when it cannot find or apply a variant: the voice must be checked."""
    speakers = WordBank.random_speakers(seed=0, count=4, variants_dir=tmp_path)
    assert [s.voice.split("+")[1] for s in speakers] == [f"{RANDOM_PREFIX}{i:04d}" for i in range(4)]
    assert all(s.voice.split("+")[0] in TRAIN_ACCENTS for s in speakers)
    assert speakers == WordBank.random_speakers(seed=0, count=4, variants_dir=tmp_path)
    seen = {_sound("eight", v) for v in HELDOUT_VOICES}
    for s in speakers:
        accent = s.voice.split("+")[0]
        assert _sound("eight", accent, s.data_path) != _sound("eight", s.voice, s.data_path)
        seen.add(_sound("eight", s.voice, s.data_path))
    assert len(seen) == len(HELDOUT_VOICES) + len(speakers)
