"""Machine ceilings measured in-process (memory read bandwidth, F32 matmul rate) and per-step costs of a
model file (bytes of weights read and FLOPs per decoder step / per encoder token).

Thread counts follow OPENBLAS_NUM_THREADS / OMP_NUM_THREADS, which the caller must set before
numpy is first imported.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGUFReader


def _best(fn, repeats: int) -> float:  # noqa: ANN001 - any zero-argument callable
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def read_bandwidth_gbs(n_threads: int, n_bytes: int = 1 << 30, repeats: int = 5) -> tuple[float, str]:
    """Best read bandwidth in GB/s over two methods (BLAS gemv over a matrix; per-thread numpy sums)."""
    rows = n_bytes // (4 * 4096)
    a = np.ones((rows, 4096), dtype=np.float32)  # touched, so every page is resident
    x = np.ones(4096, dtype=np.float32)
    gemv = n_bytes / _best(lambda: a @ x, repeats) / 1e9
    parts = np.array_split(a.reshape(-1), n_threads)
    with ThreadPoolExecutor(n_threads) as pool:
        summed = n_bytes / _best(lambda: list(pool.map(np.sum, parts)), repeats) / 1e9
    return (gemv, "gemv") if gemv >= summed else (summed, f"{n_threads}-thread sum")


def matmul_gflops(n: int = 2048, repeats: int = 5) -> float:
    """Best F32 square matmul rate (numpy / OpenBLAS) in GFLOP/s."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    return 2.0 * n**3 / _best(lambda: a @ b, repeats) / 1e9


@dataclass(frozen=True)
class StepCosts:
    """Per-step work of one model file, from its tensor table (bytes as stored)."""

    dec_weight_bytes: int  # decoder layers + final norm + tied output head: read every step
    dec_matmul_params: int  # elements of the decoder matrices and the head (2 FLOPs each per step)
    enc_weight_bytes: int  # conv stem + encoder layers + projector
    enc_frame_params: int  # encoder-layer matrix elements, applied per encoder frame
    conv1_params: int  # applied per mel frame
    conv2_params: int  # applied per encoder frame
    proj_params: int  # applied per audio token
    kv_bytes_per_position: int  # decoder K+V bytes one cached position costs to read per step


def step_costs(path: Path, info: dict) -> StepCosts:
    """Costs from the GGUF's tensor sizes and the loaded model's dims (``Model.info``)."""
    reader = GGUFReader(path)
    sizes = {t.name: (int(t.n_bytes), int(t.n_elements)) for t in reader.tensors}
    dec_bytes = sum(b for n, (b, _) in sizes.items() if n.startswith("dec.blk.") or n == "dec.norm.weight")
    dec_bytes += sizes["dec.token_embd.weight"][0]
    dec_params = sum(e for n, (_, e) in sizes.items() if n.startswith("dec.blk.") and _is_matrix(n))
    dec_params += sizes["dec.token_embd.weight"][1]
    enc_bytes = sum(b for n, (b, _) in sizes.items() if n.startswith(("enc.", "proj.")))
    enc_params = sum(e for n, (_, e) in sizes.items() if n.startswith("enc.blk.") and _is_matrix(n))
    d = info["decoder"]
    kv_elem = 2 if sizes["dec.token_embd.weight"][0] < 4 * sizes["dec.token_embd.weight"][1] else 4
    return StepCosts(
        dec_weight_bytes=dec_bytes,
        dec_matmul_params=dec_params,
        enc_weight_bytes=enc_bytes,
        enc_frame_params=enc_params,
        conv1_params=sizes["enc.conv1.weight"][1],
        conv2_params=sizes["enc.conv2.weight"][1],
        proj_params=sizes["proj.linear_1.weight"][1] + sizes["proj.linear_2.weight"][1],
        kv_bytes_per_position=2 * d["n_layer"] * d["n_head_kv"] * d["head_dim"] * kv_elem,
    )


def _is_matrix(name: str) -> bool:
    return name.endswith(".weight") and not name.endswith(("norm.weight", ".ada_1.weight", ".ada_2.weight"))


def decoder_step_flops(c: StepCosts, info: dict, context: float) -> float:
    """FLOPs of one decoder position: matrices + head, plus attention over `context` cached positions."""
    d = info["decoder"]
    attention = 4.0 * context * d["n_head"] * d["head_dim"] * d["n_layer"]
    return 2.0 * c.dec_matmul_params + attention


def encoder_token_flops(c: StepCosts, info: dict, context: float, frames_per_token: int = 4) -> float:
    """FLOPs of one audio token: conv stem (2x mel frames), encoder frames, attention, projector."""
    e = info["encoder"]
    attention = 4.0 * context * e["n_head"] * e["head_dim"] * e["n_layer"]
    per_frame = 2.0 * (c.enc_frame_params + c.conv2_params) + attention
    return frames_per_token * per_frame + 2.0 * (2 * frames_per_token * c.conv1_params + c.proj_params)
