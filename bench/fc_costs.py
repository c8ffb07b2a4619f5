"""Work per chunk of a FastConformer RNN-T GGUF (engine/GGUF.md), for the bounds of bench_fastconformer.py.

Per chunk of ``c = lookahead + 1`` encoder frames (one encoder graph in steady state):

* encoder FLOPs: 2 x (every encoder-layer matrix but ``attn_pos``, ``enc.sub.out``, ``enc.proj``) per
  frame; the subsampling convolutions per frame (stage 0: 4 outputs x F1 x C x 9 MACs; stage s: 2^(2-s)
  outputs x F_s x C x (9 + C)); attention over ``W = left_context // c x c + c`` keys (content, position
  and value products: 3 x 2 x W x E per layer and frame). ``attn_pos`` is applied once per stream
  (the engine tabulates ``attn_pos · pe`` when the stream starts), so it counts neither FLOPs nor bytes.
* decoder FLOPs: per token one LSTM step (2 x the LSTM matrices and ``dec.proj``); per joint evaluation
  2 x ``joint.out``; the fewest evaluations greedy decoding needs are one per frame plus one per token
  (one per frame when ``max_symbols_per_step`` is 1: a token moves to the next frame).
* bytes: every weight the chunk uses, read once (the encoder's, and the decoder's and joint's when the
  chunk scores frames; the decoder's few MB are re-used within the chunk from cache).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gguf import GGUFReader


@dataclass(frozen=True)
class FcCosts:
    n_embd: int
    n_layer: int
    left_context: int
    max_symbols: int
    enc_bytes: int  # encoder weights read per chunk (all but attn_pos)
    enc_frame_flops: float  # matrices + subsampling per encoder frame (attention apart)
    dec_bytes: int  # embedding rows are gathered; LSTM, dec.proj, joint.out read
    token_flops: float  # one LSTM step + dec.proj
    joint_flops: float  # one joint evaluation (one frame)
    weight_bytes: int  # the whole file's tensor data

    def keys(self, chunk: int) -> int:
        """Keys each query of a steady-state chunk attends to (its own chunk + the left chunks)."""
        return self.left_context // chunk * chunk + chunk

    def chunk_flops(self, chunk: int, frames: float, tokens: float) -> tuple[float, float]:
        """(encoder, decoder) FLOPs of one encoder graph of `frames` frames (`chunk` in steady state)
        that emits `tokens` tokens."""
        attention = 3 * 2.0 * self.keys(chunk) * self.n_embd * self.n_layer
        evaluations = frames + (tokens if self.max_symbols > 1 else 0.0)
        encoder = frames * (self.enc_frame_flops + attention)
        return encoder, tokens * self.token_flops + evaluations * self.joint_flops

    def chunk_bytes(self) -> tuple[int, int]:
        """(encoder, decoder + joint) weight bytes one chunk reads."""
        return self.enc_bytes, self.dec_bytes


def _u32(reader: GGUFReader, key: str) -> int:
    return int(reader.fields[f"fastconformer.{key}"].parts[-1][0])


def _is_matrix(name: str, n_dims: int) -> bool:
    """A matrix applied to every frame (subsampling convolutions and depthwise kernels are counted apart)."""
    if name == "enc.sub.out.weight":
        return True
    return (
        n_dims == 2
        and name.endswith(".weight")
        and not name.startswith("enc.sub.")
        and "conv_dw." not in name
    )


def fc_costs(path: Path) -> FcCosts:
    reader = GGUFReader(path)
    sizes = {t.name: (int(t.n_bytes), int(t.n_elements), len(t.shape)) for t in reader.tensors}
    e, c = _u32(reader, "encoder.n_embd"), _u32(reader, "encoder.subsampling_channels")
    n_mel, stages = _u32(reader, "audio.n_mel"), _u32(reader, "encoder.subsampling_factor").bit_length() - 1
    enc = {n: v for n, v in sizes.items() if n.startswith("enc.") and not n.endswith("attn_pos.weight")}
    enc_matrix = sum(el for n, (_, el, nd) in enc.items() if _is_matrix(n, nd))
    f, sub_macs = n_mel, 0
    for s in range(stages):
        f = f // 2 + 1  # (f + k - 1 + s - 1 - k) // s + 1 for k = 3, s = 2: 128 -> 65 -> 33 -> 17
        outputs = 2 ** (stages - 1 - s)
        sub_macs += outputs * f * c * (9 if s == 0 else 9 + c)
    conv_dw = sum(el for n, (_, el, _) in enc.items() if n.endswith("conv_dw.weight"))
    dec = {n: v for n, v in sizes.items() if n.startswith(("dec.", "joint."))}
    lstm = sum(el for n, (_, el, _) in dec.items() if n.startswith("dec.lstm.") and ".w_" in n)
    lstm += sizes["dec.proj.weight"][1]
    dec_bytes = sum(b for n, (b, _, _) in dec.items() if n != "dec.embd.weight")
    return FcCosts(
        n_embd=e,
        n_layer=_u32(reader, "encoder.n_layer"),
        left_context=_u32(reader, "encoder.left_context"),
        max_symbols=_u32(reader, "max_symbols_per_step"),
        enc_bytes=sum(b for b, _, _ in enc.values()),
        enc_frame_flops=2.0 * (enc_matrix + sub_macs + conv_dw),
        dec_bytes=dec_bytes,
        token_flops=2.0 * lstm,
        joint_flops=2.0 * sizes["joint.out.weight"][1],
        weight_bytes=sum(b for b, _, _ in sizes.values()),
    )
