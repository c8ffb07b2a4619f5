"""Every hyper-parameter bound of engine/GGUF.md: just inside loads and runs, just outside is an
EngineError naming the key (values the engine once crashed, hung or over-allocated on included)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from captionist import engine
from captionist.engine import EngineError

from .conftest import load_and_run
from .gguf_edit import rewrite_gguf

V, F = "voxtral.", "fastconformer."
NAN, INF = math.nan, math.inf

# (fixture, key, values that load and run) - keys no tensor shape depends on, so both ends can run.
INSIDE: list[tuple[str, str, list[Any]]] = [
    ("voxtral", V + "audio.hop_length", [1, 400]),
    ("voxtral", V + "audio.global_log_mel_max", [0.0, 20.0]),
    ("voxtral", V + "audio.n_left_pad_tokens", [0, 256]),
    ("voxtral", V + "audio.n_right_pad_extra_tokens", [0, 256]),
    ("voxtral", V + "default_num_delay_tokens", [1, 30]),
    ("voxtral", V + "time_embedding_theta", [1.0, 1e10]),
    ("voxtral", V + "encoder.rms_eps", [1e-12, 0.1]),
    ("voxtral", V + "encoder.rope_theta", [1.0, 1e10]),
    ("voxtral", V + "encoder.sliding_window", [1, 65536]),
    ("voxtral", V + "decoder.rms_eps", [1e-12, 0.1]),
    ("voxtral", V + "decoder.rope_theta", [1.0, 1e10]),
    ("voxtral", V + "decoder.sliding_window", [1, 131072]),
    ("voxtral", V + "decoder.max_position", [79, 1 << 24]),
    ("parakeet", F + "audio.hop_length", [1, 512]),
    ("parakeet", F + "audio.preemphasis", [0.0, 0.999]),
    ("parakeet", F + "audio.log_guard", [1e-20, 1.0]),
    ("parakeet", F + "encoder.norm_eps", [1e-12, 0.1]),
    ("parakeet", F + "encoder.xscale", [1e-3, 1e3]),
    ("parakeet", F + "encoder.left_context", [0, 4096]),
    ("parakeet", F + "encoder.lookaheads", [[0], [64], list(range(16))]),
    ("parakeet", F + "max_symbols_per_step", [1, 100]),
    ("nemotron35", F + "prompt.default_id", [0, 127]),
]

# (fixture, key, value, what the message says after the key)
OUTSIDE: list[tuple[str, str, Any, str]] = [
    ("voxtral", V + "audio.sample_rate", 16001, r"outside \[16000, 16000\]"),
    ("voxtral", V + "audio.n_fft", 15, r"outside \[16, 8192\]"),
    ("voxtral", V + "audio.n_fft", 8193, r"outside \[16, 8192\]"),
    ("voxtral", V + "audio.hop_length", 0, r"outside \[1, 400\]"),
    ("voxtral", V + "audio.hop_length", 401, r"outside \[1, 400\]"),
    ("voxtral", V + "audio.hop_length", 1 << 29, r"outside \[1, 400\]"),  # SIGFPE before
    ("voxtral", V + "audio.n_mel", 0, r"outside \[1, 1024\]"),
    ("voxtral", V + "audio.n_mel", 1025, r"outside \[1, 1024\]"),
    ("voxtral", V + "audio.global_log_mel_max", -0.001, r"outside \[0, 20\]"),
    ("voxtral", V + "audio.global_log_mel_max", 20.001, r"outside \[0, 20\]"),
    ("voxtral", V + "audio.global_log_mel_max", NAN, "not a finite number"),
    ("voxtral", V + "audio.global_log_mel_max", INF, "not a finite number"),
    ("voxtral", V + "audio.mel_frames_per_token", 1, r"outside \[2, 32\]"),
    ("voxtral", V + "audio.mel_frames_per_token", 33, r"outside \[2, 32\]"),
    ("voxtral", V + "audio.mel_frames_per_token", 10, "must be 2 \\* downsample_factor"),
    ("voxtral", V + "audio.downsample_factor", 0, r"outside \[1, 16\]"),
    ("voxtral", V + "audio.downsample_factor", 17, r"outside \[1, 16\]"),
    ("voxtral", V + "audio.n_left_pad_tokens", 257, r"outside \[0, 256\]"),
    ("voxtral", V + "audio.n_left_pad_tokens", 32000, r"outside \[0, 256\]"),  # hung before
    ("voxtral", V + "audio.n_right_pad_extra_tokens", 257, r"outside \[0, 256\]"),
    ("voxtral", V + "default_num_delay_tokens", 0, r"outside \[1, 30\]"),
    ("voxtral", V + "default_num_delay_tokens", 31, r"outside \[1, 30\]"),
    ("voxtral", V + "time_embedding_theta", 0.999, r"outside \[1, 1e\+10\]"),
    ("voxtral", V + "time_embedding_theta", 1.1e10, r"outside \[1, 1e\+10\]"),
    ("voxtral", V + "encoder.n_embd", 0, r"outside \[1, 65536\]"),
    ("voxtral", V + "encoder.n_embd", 65537, r"outside \[1, 65536\]"),
    ("voxtral", V + "encoder.n_layer", 0, r"outside \[1, 256\]"),
    ("voxtral", V + "encoder.n_layer", 257, r"outside \[1, 256\]"),
    ("voxtral", V + "encoder.n_layer", 20_000_000, r"outside \[1, 256\]"),  # 2 GB allocated before
    ("voxtral", V + "encoder.n_layer", 3, "the file holds 2 layers"),
    ("voxtral", V + "encoder.n_layer", 1, "the file holds more than 1 layers"),
    ("voxtral", V + "encoder.n_head", 0, r"outside \[1, 1024\]"),
    ("voxtral", V + "encoder.n_head", 1025, r"outside \[1, 1024\]"),
    ("voxtral", V + "encoder.head_dim", 1, r"outside \[2, 1024\]"),
    ("voxtral", V + "encoder.head_dim", 1025, r"outside \[2, 1024\]"),
    ("voxtral", V + "encoder.head_dim", 15, "must be even"),
    ("voxtral", V + "encoder.n_ff", 0, r"outside \[1, 262144\]"),
    ("voxtral", V + "encoder.n_ff", 262145, r"outside \[1, 262144\]"),
    ("voxtral", V + "encoder.rms_eps", 0.0, r"outside \[1e-12, 0.1\]"),
    ("voxtral", V + "encoder.rms_eps", -1e-5, r"outside \[1e-12, 0.1\]"),  # GGML_ASSERT abort before
    ("voxtral", V + "encoder.rms_eps", 0.1001, r"outside \[1e-12, 0.1\]"),
    ("voxtral", V + "encoder.rms_eps", NAN, "not a finite number"),
    ("voxtral", V + "encoder.rope_theta", 0.5, r"outside \[1, 1e\+10\]"),
    ("voxtral", V + "encoder.rope_theta", -INF, "not a finite number"),
    ("voxtral", V + "encoder.sliding_window", 0, r"outside \[1, 65536\]"),
    ("voxtral", V + "encoder.sliding_window", 65537, r"outside \[1, 65536\]"),
    ("voxtral", V + "decoder.n_embd", 1, r"outside \[2, 65536\]"),
    ("voxtral", V + "decoder.n_embd", 65537, r"outside \[2, 65536\]"),
    ("voxtral", V + "decoder.n_embd", 63, "must be even"),
    ("voxtral", V + "decoder.n_layer", 0, r"outside \[1, 256\]"),
    ("voxtral", V + "decoder.n_layer", 257, r"outside \[1, 256\]"),
    ("voxtral", V + "decoder.n_layer", 3, "the file holds 2 layers"),
    ("voxtral", V + "decoder.n_head", 0, r"outside \[1, 1024\]"),
    ("voxtral", V + "decoder.n_head", 1025, r"outside \[1, 1024\]"),
    ("voxtral", V + "decoder.n_head_kv", 0, r"outside \[1, 4\]"),
    ("voxtral", V + "decoder.n_head_kv", 5, r"outside \[1, 4\]"),
    ("voxtral", V + "decoder.n_head_kv", 3, r"must divide n_head \(4\)"),
    ("voxtral", V + "decoder.head_dim", 1, r"outside \[2, 1024\]"),
    ("voxtral", V + "decoder.head_dim", 1025, r"outside \[2, 1024\]"),
    ("voxtral", V + "decoder.n_ff", 0, r"outside \[1, 262144\]"),
    ("voxtral", V + "decoder.n_ff", 262145, r"outside \[1, 262144\]"),
    ("voxtral", V + "decoder.rms_eps", -1.0, r"outside \[1e-12, 0.1\]"),
    ("voxtral", V + "decoder.rms_eps", 0.1001, r"outside \[1e-12, 0.1\]"),
    ("voxtral", V + "decoder.rope_theta", 0.999, r"outside \[1, 1e\+10\]"),
    ("voxtral", V + "decoder.rope_theta", 1.1e10, r"outside \[1, 1e\+10\]"),
    ("voxtral", V + "decoder.sliding_window", 0, r"outside \[1, 131072\]"),
    ("voxtral", V + "decoder.sliding_window", 131073, r"outside \[1, 131072\]"),
    ("voxtral", V + "decoder.max_position", 78, r"outside \[79, 16777216\]"),
    ("voxtral", V + "decoder.max_position", (1 << 24) + 1, r"outside \[79, 16777216\]"),
    ("voxtral", V + "decoder.n_vocab", 1, r"outside \[2, 1048576\]"),
    ("voxtral", V + "decoder.n_vocab", (1 << 20) + 1, r"outside \[2, 1048576\]"),
    ("voxtral", V + "decoder.ada_dim", 0, r"outside \[1, 4096\]"),
    ("voxtral", V + "decoder.ada_dim", 4097, r"outside \[1, 4096\]"),
    ("parakeet", F + "audio.sample_rate", 15999, r"outside \[16000, 16000\]"),
    ("parakeet", F + "audio.n_fft", 15, r"outside \[16, 8192\]"),
    ("parakeet", F + "audio.n_fft", 8193, r"outside \[16, 8192\]"),
    ("parakeet", F + "audio.win_length", 1, r"outside \[2, 512\]"),
    ("parakeet", F + "audio.win_length", 513, r"outside \[2, 512\]"),
    ("parakeet", F + "audio.win_length", 401, "must be even"),
    ("parakeet", F + "audio.hop_length", 0, r"outside \[1, 512\]"),
    ("parakeet", F + "audio.hop_length", 1 << 29, r"outside \[1, 512\]"),
    ("parakeet", F + "audio.n_mel", 0, r"outside \[1, 1024\]"),
    ("parakeet", F + "audio.n_mel", 1025, r"outside \[1, 1024\]"),
    ("parakeet", F + "audio.preemphasis", -0.001, r"outside \[0, 0.999\]"),
    ("parakeet", F + "audio.preemphasis", 1.0, r"outside \[0, 0.999\]"),
    ("parakeet", F + "audio.log_guard", 0.0, r"outside \[1e-20, 1\]"),
    ("parakeet", F + "audio.log_guard", 1.001, r"outside \[1e-20, 1\]"),
    ("parakeet", F + "encoder.n_embd", 1, r"outside \[2, 65536\]"),
    ("parakeet", F + "encoder.n_embd", 65537, r"outside \[2, 65536\]"),
    ("parakeet", F + "encoder.n_layer", 0, r"outside \[1, 256\]"),
    ("parakeet", F + "encoder.n_layer", 20_000_000, r"outside \[1, 256\]"),
    ("parakeet", F + "encoder.n_layer", 4, "the file holds 3 layers"),
    ("parakeet", F + "encoder.n_head", 0, r"outside \[1, 64\]"),
    ("parakeet", F + "encoder.n_head", 65, r"outside \[1, 64\]"),
    ("parakeet", F + "encoder.n_head", 3, "must divide n_embd"),
    ("parakeet", F + "encoder.n_ff", 0, r"outside \[1, 262144\]"),
    ("parakeet", F + "encoder.n_ff", 262145, r"outside \[1, 262144\]"),
    ("parakeet", F + "encoder.conv_kernel", 0, r"outside \[1, 255\]"),
    ("parakeet", F + "encoder.conv_kernel", 256, r"outside \[1, 255\]"),
    ("parakeet", F + "encoder.conv_kernel", 8, "must be odd"),
    ("parakeet", F + "encoder.conv_norm", "group_norm", "is not layer_norm or batch_norm"),
    ("parakeet", F + "encoder.norm_eps", -1e-5, r"outside \[1e-12, 0.1\]"),
    ("parakeet", F + "encoder.norm_eps", 0.1001, r"outside \[1e-12, 0.1\]"),
    ("parakeet", F + "encoder.norm_eps", NAN, "not a finite number"),
    ("parakeet", F + "encoder.xscale", 0.00099, r"outside \[0.001, 1000\]"),
    ("parakeet", F + "encoder.xscale", 1000.1, r"outside \[0.001, 1000\]"),
    ("parakeet", F + "encoder.subsampling_factor", 1, r"outside \[2, 16\]"),
    ("parakeet", F + "encoder.subsampling_factor", 32, r"outside \[2, 16\]"),
    ("parakeet", F + "encoder.subsampling_factor", 6, "must be 2, 4, 8 or 16"),
    ("parakeet", F + "encoder.subsampling_channels", 0, r"outside \[1, 4096\]"),
    ("parakeet", F + "encoder.subsampling_channels", 4097, r"outside \[1, 4096\]"),
    ("parakeet", F + "encoder.subsampling_kernel", 5, r"outside \[3, 3\]"),
    ("parakeet", F + "encoder.subsampling_stride", 3, r"outside \[2, 2\]"),
    ("parakeet", F + "encoder.left_context", 4097, r"outside \[0, 4096\]"),
    ("parakeet", F + "encoder.lookaheads", [65], r"outside \[0, 64\]"),
    ("parakeet", F + "encoder.lookaheads", list(range(17)), "must list 1 to 16"),
    ("parakeet", F + "decoder.n_embd", 0, r"outside \[1, 65536\]"),
    ("parakeet", F + "decoder.n_embd", 65537, r"outside \[1, 65536\]"),
    ("parakeet", F + "decoder.n_layer", 0, r"outside \[1, 16\]"),
    ("parakeet", F + "decoder.n_layer", 17, r"outside \[1, 16\]"),
    ("parakeet", F + "decoder.n_layer", 2, "the file holds 1 layers"),
    ("parakeet", F + "joint.n_embd", 0, r"outside \[1, 65536\]"),
    ("parakeet", F + "joint.n_embd", 65537, r"outside \[1, 65536\]"),
    ("parakeet", F + "joint.activation", "gelu", "is not relu, tanh or sigmoid"),
    ("parakeet", F + "n_vocab", 1, r"outside \[2, 1048576\]"),
    ("parakeet", F + "n_vocab", (1 << 20) + 1, r"outside \[2, 1048576\]"),
    ("parakeet", F + "blank_id", 129, r"outside \[0, 128\]"),
    ("parakeet", F + "max_symbols_per_step", 0, r"outside \[1, 100\]"),
    ("parakeet", F + "max_symbols_per_step", 101, r"outside \[1, 100\]"),
    ("nemotron35", F + "prompt.n_prompts", 0, r"outside \[1, 4096\]"),
    ("nemotron35", F + "prompt.n_prompts", 4097, r"outside \[1, 4096\]"),
    ("nemotron35", F + "prompt.n_ff", 0, r"outside \[1, 262144\]"),
    ("nemotron35", F + "prompt.n_ff", 262145, r"outside \[1, 262144\]"),
    ("nemotron35", F + "prompt.default_id", 128, r"outside \[0, 127\]"),
    ("nemotron35", F + "prompt.ids", [128] * 121, "a prompt id is not below n_prompts"),
]


def _id(value: Any) -> str:
    return f"len{len(value)}" if isinstance(value, list) and len(value) > 3 else repr(value)


@pytest.mark.parametrize(
    ("fixture", "key", "value"),
    [(f, k, v) for f, k, vs in INSIDE for v in vs],
    ids=[f"{k}={_id(v)}" for _, k, vs in INSIDE for v in vs],
)
def test_just_inside_loads_and_runs(
    tmp_path: Path, fixture_ggufs: dict[str, Path], fixture: str, key: str, value: Any
) -> None:
    n = 1600 if key.endswith("hop_length") and value == 1 else 3200
    load_and_run(rewrite_gguf(fixture_ggufs[fixture], tmp_path / "in.gguf", set_kv={key: value}), n)


@pytest.mark.parametrize(
    ("fixture", "key", "value", "message"),
    OUTSIDE,
    ids=[f"{k}={_id(v)}" for _, k, v, _ in OUTSIDE],
)
def test_just_outside_names_the_key(
    tmp_path: Path, fixture_ggufs: dict[str, Path], fixture: str, key: str, value: Any, message: str
) -> None:
    p = rewrite_gguf(fixture_ggufs[fixture], tmp_path / "out.gguf", set_kv={key: value})
    with pytest.raises(EngineError) as err:
        engine.Model(p, backend="cpu", n_threads=1)
    text = str(err.value)
    assert "\n" not in text
    assert f"'{key}'" in text, text
    assert re.search(message, text), text


def documented_ranges() -> dict[str, str]:
    """key -> range text, from the "Valid ranges" tables of engine/GGUF.md."""
    doc = (Path(__file__).resolve().parents[2] / "engine" / "GGUF.md").read_text()
    out: dict[str, str] = {}
    in_ranges = False
    for line in doc.splitlines():
        if line.startswith("## "):
            in_ranges = line.startswith("## Valid ranges")
        elif in_ranges and line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            out[cells[0].strip("`")] = cells[2]
    return out


def test_every_documented_key_has_a_bound_test() -> None:
    """engine/GGUF.md's range tables and these tests list the same keys."""
    documented = documented_ranges()
    tested = {k for _, k, _ in INSIDE} | {k for _, k, _, _ in OUTSIDE}
    assert len(documented) > 50, "no range tables found in engine/GGUF.md"
    assert set(documented) <= tested, f"documented but untested: {sorted(set(documented) - tested)}"
    assert tested <= set(documented), f"tested but undocumented: {sorted(tested - set(documented))}"
