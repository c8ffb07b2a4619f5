"""Sanity checks of the committed reference fixtures (no torch needed).

They guard the fixture files themselves: that they load, agree with each other and with the
padding/prompt arithmetic of the reference, so engine tests can rely on them.
"""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from safetensors.numpy import load_file

DATA = Path(__file__).parent / "data"
MODELS = ["tiny_wide", "tiny_small"]
CLIPS = ["speech_short.wav", "speech_mid.wav", "speech_long.wav", "silence.wav", "noise.wav"]


def _expected(model: str) -> dict:
    return json.loads((DATA / "reference" / model / "expected.json").read_text(encoding="utf-8"))


def _tekken(model: str) -> dict:
    return json.loads((DATA / "reference" / model / "hf" / "tekken.json").read_text(encoding="utf-8"))


def _safetensors_header(path: Path) -> dict:
    """Tensor entries (dtype, shape) of a safetensors file; numpy cannot load BF16 data itself."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header


def _detokenize(ids: list[int], pieces: list[bytes]) -> str:
    """mistral-common's rule: each run of normal ids is decoded on its own (invalid UTF-8 -> U+FFFD)."""
    runs, run = [], b""
    for i in ids + [0]:
        if i >= 1000:
            run += pieces[i - 1000]
        elif run:
            runs.append(run.decode("utf-8", errors="replace"))
            run = b""
    return "".join(runs)


@pytest.mark.parametrize("clip", CLIPS)
def test_clip_is_16k_mono_and_speech_is_never_digital_silence(clip: str) -> None:
    audio, rate = sf.read(DATA / "audio" / clip, dtype="float32")
    assert rate == 16000 and audio.ndim == 1 and audio.dtype == np.float32
    assert sf.info(DATA / "audio" / clip).subtype == "PCM_16"
    if clip == "silence.wav":
        assert not audio.any()
    else:
        assert np.count_nonzero(audio == 0.0) < audio.size // 10
    if clip == "speech_long.wav":
        assert audio.size > 15 * 16000


def test_tekken_has_real_control_ids() -> None:
    tk = _tekken("tiny_small")
    names = {t["token_str"]: t["rank"] for t in tk["special_tokens"]}
    assert names["<s>"] == 1 and names["</s>"] == 2
    assert names["[STREAMING_PAD]"] == 32 and names["[STREAMING_WORD]"] == 33
    assert tk["config"]["default_num_special_tokens"] == len(tk["special_tokens"]) == 1000
    assert tk["config"]["default_vocab_size"] == 1000 + len(tk["vocab"])
    assert tk["audio"]["transcription_delay_ms"] == 480 and tk["audio"]["streaming_n_left_pad_tokens"] == 32
    pieces = [base64.b64decode(v["token_bytes"]) for v in tk["vocab"]]
    assert pieces[:256] == [bytes([i]) for i in range(256)]
    assert any(len(p) > 1 and p[0] >= 0x80 for p in pieces)


@pytest.mark.parametrize("model", MODELS)
def test_expected_cases_are_consistent(model: str) -> None:
    doc = _expected(model)
    tk = _tekken(model)
    pieces = [base64.b64decode(v["token_bytes"]) for v in tk["vocab"]]
    vocab = doc["vocab_size"]
    assert vocab == tk["config"]["default_vocab_size"]
    assert len(doc["cases"]) == len(CLIPS) * 6 and len(doc["stream_cases"]) == 6
    for c in doc["cases"] + doc["stream_cases"]:
        d, ids = c["delay_tokens"], c["token_ids"]
        n_samples = sf.info(DATA / "audio" / c["clip"]).frames
        assert c["prompt_len"] == 33 + d
        assert c["n_audio_tokens"] == 32 + math.ceil(n_samples / 1280) + d + 11
        assert all(0 <= i < vocab and i != doc["eos_id"] for i in ids)
        assert len(c["margins"]) == len(ids) + int(c["ended_with_eos"])
        assert len(c["margins"]) <= c["n_audio_tokens"] - c["prompt_len"]
        assert all(m >= 0 for m in c["margins"])
        assert _detokenize(ids, pieces) == c["text"]
    speech = [c for c in doc["cases"] if c["clip"].startswith("speech")]
    assert all(len(set(c["token_ids"])) > 1 for c in speech if len(c["token_ids"]) > 4)


@pytest.mark.parametrize("model", MODELS)
def test_layouts_hold_the_same_tensors(model: str) -> None:
    hf = load_file(DATA / "reference" / model / "hf" / "model.safetensors")
    mistral = _safetensors_header(DATA / "reference" / model / "mistral" / "consolidated.safetensors")
    assert {v["dtype"] for v in mistral.values()} == {"BF16"}
    hf_shapes = sorted(tuple(t.shape) for k, t in hf.items() if k != "lm_head.weight")
    assert hf_shapes == sorted(tuple(v["shape"]) for v in mistral.values())
    config = json.loads((DATA / "reference" / model / "hf" / "config.json").read_text())
    params = json.loads((DATA / "reference" / model / "mistral" / "params.json").read_text())
    assert params["dim"] == config["text_config"]["hidden_size"]
    enc = params["multimodal"]["whisper_model_args"]["encoder_args"]
    assert enc["dim"] == config["audio_config"]["hidden_size"]
    emb = mistral["mm_streams_embeddings.embedding_module.tok_embeddings.weight"]
    assert tuple(emb["shape"]) == (config["text_config"]["vocab_size"], params["dim"])


@pytest.mark.parametrize("model", MODELS)
def test_intermediates_shapes(model: str) -> None:
    z = np.load(DATA / "reference" / model / "intermediates_speech_short_d6.npz")
    config = json.loads((DATA / "reference" / model / "hf" / "config.json").read_text())
    t_mel = z["padded_audio"].size // 160
    assert z["mel"].shape == (128, t_mel) and t_mel % 8 == 0
    assert z["enc_out"].shape == (t_mel // 2, config["audio_config"]["hidden_size"])
    assert z["audio_embeds"].shape == (t_mel // 8, config["text_config"]["hidden_size"])
    assert z["logits0"].shape == (config["text_config"]["vocab_size"],)
    assert z["mel_filters"].shape == (201, 128) and z["window"].shape == (400,)
    first = _expected(model)["cases"]
    short = next(c for c in first if c["clip"] == "speech_short.wav" and c["delay_tokens"] == 6)
    top = np.sort(z["logits0"])[-2:]
    assert top[1] - top[0] == pytest.approx(short["margins"][0], abs=1e-5)
    first_id = short["token_ids"][0] if short["token_ids"] else _expected(model)["eos_id"]
    assert int(np.argmax(z["logits0"])) == first_id
