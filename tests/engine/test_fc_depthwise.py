"""The convolution module's causal depthwise convolution in its two forms (fc_encoder.cpp,
`depthwise_as_conv_2d`): ggml_ssm_conv, and ggml_conv_2d_dw_direct, which graphs on a device take for
the kernel widths ggml's CUDA backend has no SSM_CONV kernel for (it aborts on them: cuda_rules.py).
CAPTIONIST_FC_DEPTHWISE=conv_2d puts the second form on the CPU, where the reference checks it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader

from captionist import _engine, engine
from tools.compare_node_dumps import read_dump
from tools.dump_stream_nodes import dump_stream

from .backend_rules import Verdict
from .conftest import DEVICE_PARAMS
from .cuda_rules import verdict
from .fastconformer_fixtures import HF_MODELS, NEMO_MODELS, clip, expected
from .gguf_edit import rewrite_gguf

MODEL = "nemotron_tiny_ctx"
FORM = "CAPTIONIST_FC_DEPTHWISE"


@pytest.fixture(scope="module")
def fc_width(
    fc_f32: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
) -> Callable[[int], Path]:
    """fc_width(k) -> the tiny Nemotron model with its depthwise kernels cut to width k (odd, < 9):
    the same model otherwise, a width ggml's CUDA backend has no SSM_CONV kernel for when k is 7."""
    root = tmp_path_factory.mktemp("fc_width")

    def make(k: int) -> Path:
        out = root / f"{MODEL}.k{k}.gguf"
        if not out.exists():
            src = fc_f32(MODEL)
            cut = {
                t.name: np.array(t.data)[:, :k]
                for t in GGUFReader(src).tensors
                if t.name.endswith("conv_dw.weight")
            }
            assert cut, "no depthwise kernels in the fixture"
            rewrite_gguf(src, out, set_kv={"fastconformer.encoder.conv_kernel": k}, replace=cut)
        return out

    return make


def encoder_out(
    path: Path, backend: str = "cpu", latency_ms: int | None = None
) -> tuple[np.ndarray, list[int]]:
    """The encoder's output and the token ids of the long clip streamed in 80 ms pieces, at the
    largest latency unless told (one frame per chunk would hide a transposed result)."""
    m = engine.Model(path, backend=backend, n_threads=1)
    lat = latency_ms or m.info["latencies_ms"][-1]  # the most frames per chunk
    s = _engine.Stream(m._m, latency_ms=lat, capture=True)
    pcm = clip(MODEL, "speech_long")
    ids: list[int] = []
    for i in range(0, len(pcm), 1280):
        ids += [t[0] for t in s.feed(pcm[i : i + 1280])["new_tokens"]]
    ids += [t[0] for t in s.finish()["new_tokens"]]
    return np.asarray(s.captured()["encoder_out"]), ids


def depthwise_ops(path: Path, backend: str, out: Path) -> tuple[dict[str, int], list]:
    """How many SSM_CONV and CONV_2D_DW nodes a short stream's first graphs have (the subsampling
    has its own CONV_2D_DW nodes), and the nodes ggml's CUDA backend would abort on or get wrong."""
    assert dump_stream(path, out, backend, computes=2, flash="", kv_type="", timeout=600) == 0
    records = read_dump(out)
    bad = [(r.op, verdict(r)) for r in records if verdict(r)[0] in (Verdict.ABORTS, Verdict.WRONG)]
    return {op: sum(r.op == op for r in records) for op in ("SSM_CONV", "CONV_2D_DW")}, bad


def test_the_2d_form_gives_the_reference_ids(
    fc_f32: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FORM, "conv_2d")
    checked = 0
    for model in HF_MODELS + NEMO_MODELS:
        m = engine.Model(fc_f32(model), backend="cpu", n_threads=1)
        for case in expected(model)["cases"]:
            lat = (case["lookahead"] + 1) * 80 if "lookahead" in case else None
            t = m.transcribe(clip(model, case["clip"]), latency_ms=lat, language=case.get("language"))
            assert t.token_ids == case["token_ids"], (model, case["clip"], lat)
            checked += 1
    assert checked >= 20, checked


def test_the_switch_changes_the_form(
    fc_f32: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """So that the test above checks the 2-D form, not the default one again."""
    plain, _ = depthwise_ops(fc_f32(MODEL), "cpu", tmp_path / "plain.nodes")
    monkeypatch.setenv(FORM, "conv_2d")
    switched, _ = depthwise_ops(fc_f32(MODEL), "cpu", tmp_path / "switched.nodes")
    assert plain["SSM_CONV"] > 0 and switched["SSM_CONV"] == 0, (plain, switched)
    assert switched["CONV_2D_DW"] == plain["CONV_2D_DW"] + plain["SSM_CONV"], (plain, switched)


def test_both_forms_agree_at_a_width_cuda_has_no_kernel_for(
    fc_width: Callable[[int], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Width 7 on the CPU: ggml_ssm_conv (the default there) against the 2-D form."""
    ssm, ssm_ids = encoder_out(fc_width(7))
    monkeypatch.setenv(FORM, "conv_2d")
    dw, dw_ids = encoder_out(fc_width(7))
    assert ssm.shape == dw.shape and ssm.size > 0
    assert np.abs(ssm - dw).max() <= 1e-5 * np.abs(ssm).max()
    assert ssm_ids == dw_ids
    base, _ = encoder_out(fc_width(9))  # the cut kernels changed the model: the check above can fail
    assert np.abs(base - ssm).max() > 1e-3 * np.abs(base).max()


@pytest.mark.parametrize("device", DEVICE_PARAMS)
def test_a_device_takes_the_2d_form_only_where_cuda_lacks_the_width(
    device: str, fc_width: Callable[[int], Path], fc_f32: Callable[[str], Path], tmp_path: Path
) -> None:
    """On a device, width 7 runs as CONV_2D_DW (no node CUDA would abort on), width 9 keeps
    ggml_ssm_conv (the form measured on an H200), and width 7 agrees with the CPU."""
    at7, bad7 = depthwise_ops(fc_width(7), device.lower(), tmp_path / "k7.nodes")
    at9, bad9 = depthwise_ops(fc_f32(MODEL), device.lower(), tmp_path / "k9.nodes")
    assert at7["SSM_CONV"] == 0 and at9["SSM_CONV"] > 0, (at7, at9)
    assert not bad7 and not bad9, (bad7, bad9)
    cpu, cpu_ids = encoder_out(fc_width(7))
    dev, _ = encoder_out(fc_width(7), device.lower())
    assert cpu.shape == dev.shape
    assert np.abs(cpu - dev).max() <= 5e-3 * np.abs(cpu).max()
