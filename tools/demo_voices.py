"""Random espeak-ng voice variants for training the demo model (dev-only; needs espeak-ng).

espeak-ng's named variants (``m1``, ``f3``, ``klatt`` …) are small text files that scale the
formant frequencies, heights and widths, set the pitch range and add voicing, breath, echo or
roughness. The held-out voices differ from the training voices mostly in exactly these settings
(``en+f5`` is a training accent with an unseen variant), so training on a few dozen fixed
variants teaches the model those voices and little about voices in between. ``random_variant``
draws a fresh variant file from ranges that span the named ones (formants scaled 86-128 % as one
vocal tract, each then +/- 6 %; a pitch range starting at 60-175 Hz and 20-80 Hz wide; voicing,
breath, echo, flutter, roughness, consonant strength); ``install_variants`` writes such files
into private espeak-ng data directories (links to the system's data plus the variants), used with
``espeak-ng --path`` (the system's data is never touched)::

    rng = np.random.default_rng(0)
    paths = install_variants({"cx0000": random_variant(rng, "cx0000")}, Path("/tmp/espeak-variants"))
    # espeak-ng --path=<paths["cx0000"]> -v en-us+cx0000 ...   (demo_data.synthesize_word(..., data_path=))

Variant names start with ``RANDOM_PREFIX`` so they can never shadow a named variant, in
particular a held-out one.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

RANDOM_PREFIX = "cx"
N_FORMANTS = 9  # espeak-ng's formant lines 0..8
VARIANTS_PER_DIR = 128  # see install_variants
_DATA_AT = re.compile(r"Data at:\s*(\S.*)$", re.MULTILINE)


def random_variant(rng: np.random.Generator, name: str) -> str:
    """The text of one random espeak-ng variant file called ``name`` (``language variant`` and its
    settings)."""
    scale = rng.uniform(0.86, 1.28)  # one vocal-tract length for every formant
    low = int(rng.uniform(60, 175))
    lines = ["language variant", f"name {name}", "", f"pitch {low} {low + int(rng.uniform(20, 80))}"]
    for k in range(N_FORMANTS):
        freq = round(100 * scale * rng.uniform(0.94, 1.06))
        height = round(rng.uniform(55, 130))
        width = round(rng.uniform(70, 200))
        lines.append(f"formant {k} {freq} {height} {width}")
    lines.append(f"voicing {round(rng.uniform(60, 160))}")
    lines.append(f"flutter {round(rng.uniform(0, 10))}")
    lines.append(f"roughness {int(rng.integers(0, 6))}")
    lines.append(f"consonants {round(rng.uniform(70, 150))} {round(rng.uniform(70, 150))}")
    if rng.random() < 0.3:
        lines.append(f"echo {round(rng.uniform(100, 150))} {round(rng.uniform(4, 15))}")
    if rng.random() < 0.25:
        amps = " ".join(str(round(rng.uniform(0, 8))) for _ in range(N_FORMANTS - 1))
        lines.append(f"breath {amps}")
    return "\n".join(lines) + "\n"


def system_data_dir() -> Path:
    """espeak-ng's own data directory (``espeak-ng --version`` says where it is)."""
    try:
        out = subprocess.run(["espeak-ng", "--version"], check=True, capture_output=True, text=True).stdout
    except FileNotFoundError as e:
        raise RuntimeError("espeak-ng is not installed (apt-get install espeak-ng)") from e
    m = _DATA_AT.search(out)
    if m is None or not Path(m.group(1).strip()).is_dir():
        raise RuntimeError(f"cannot tell where espeak-ng keeps its data from: {out.strip()!r}")
    return Path(m.group(1).strip())


def install_variants(variants: dict[str, str], root: Path) -> dict[str, str]:
    """Write ``variants`` (name -> file text, names starting with ``RANDOM_PREFIX``) into private
    espeak-ng data directories under ``root`` and return each name's ``espeak-ng --path``.

    A private directory links every entry of the system's data except ``voices``, whose ``!v``
    holds only random variants, at most ``VARIANTS_PER_DIR`` of them: espeak-ng lists at most
    349 voices (languages included) and, past that, says a voice "does not exist". Directories
    are named by a hash of their files and reused."""
    for name in variants:
        if not re.fullmatch(rf"{RANDOM_PREFIX}\w+", name):
            raise ValueError(f"random variant names must match {RANDOM_PREFIX}<word>; got {name!r}")
    names = sorted(variants)
    out: dict[str, str] = {}
    for first in range(0, len(names), VARIANTS_PER_DIR):
        chunk = {n: variants[n] for n in names[first : first + VARIANTS_PER_DIR]}
        key = hashlib.sha256(repr(sorted(chunk.items())).encode()).hexdigest()[:16]
        home = root / key
        done = home / "complete"
        if not done.exists():
            if home.exists():
                shutil.rmtree(home)
            data = home / "espeak-ng-data"
            (data / "voices" / "!v").mkdir(parents=True)
            for entry in system_data_dir().iterdir():
                if entry.name != "voices":
                    (data / entry.name).symlink_to(entry)
            for name, text in chunk.items():
                (data / "voices" / "!v" / name).write_text(text)
            done.write_text("")
        out.update(dict.fromkeys(chunk, str(home)))
    return out
