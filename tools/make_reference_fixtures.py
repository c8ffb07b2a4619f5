"""Make the golden fixtures under tests/data from the `transformers` Voxtral Realtime reference.

Dev-only (needs the `reference` extra: torch==2.13.0, transformers, mistral-common; plus espeak-ng).
Deterministic: fixed seeds, single-threaded torch. Run from the repo root:

    python tools/make_reference_fixtures.py

Writes tests/data/audio/*.wav and, per tiny model, tests/data/reference/<model>/{hf,mistral}/,
expected.json (offline and streaming greedy outputs) and intermediates_speech_short_d6.npz.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_common as rc  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
DELAYS = [1, 2, 6, 10, 15, 30]
STREAM_DELAYS = [1, 6, 30]
STREAM_CLIPS = ["speech_short.wav", "speech_long.wav"]
SPEECH = ["speech_short.wav", "speech_mid.wav", "speech_long.wav"]
BOS, EOS, PAD = 1, 2, 11
N_LEFT_PAD = 32

MODELS: dict[str, dict] = {
    "tiny_wide": {
        "seed": 11,
        "audio": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, head_dim=32,
                      intermediate_size=512, sliding_window=2048),
        "text": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=64, intermediate_size=768, sliding_window=4096),
    },
    "tiny_small": {
        "seed": 22,
        "audio": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, head_dim=16,
                      intermediate_size=128, sliding_window=40),
        "text": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=16, intermediate_size=128, sliding_window=24),
    },
}  # fmt: skip


def build_model(spec: dict, vocab_size: int):
    """A randomly initialised VoxtralRealtimeForConditionalGeneration with real frontend dims."""
    from transformers import VoxtralRealtimeConfig, VoxtralRealtimeForConditionalGeneration

    audio = dict(spec["audio"], num_mel_bins=128, rope_theta=1e6, rms_norm_eps=1e-5, initializer_range=0.05)
    text = dict(spec["text"], vocab_size=vocab_size, max_position_embeddings=131072, rope_theta=1e6,
                rms_norm_eps=1e-5, initializer_range=0.05, bos_token_id=BOS, eos_token_id=EOS,
                pad_token_id=PAD)  # fmt: skip
    config = VoxtralRealtimeConfig(audio_config=audio, text_config=text, default_num_delay_tokens=6)
    torch.manual_seed(spec["seed"])
    model = VoxtralRealtimeForConditionalGeneration(config).eval()
    model.generation_config.bos_token_id = BOS
    model.generation_config.eos_token_id = EOS
    model.generation_config.pad_token_id = PAD
    return model


class Reference:
    """The reference processor (mistral-common padding + feature extractor) for one tekken file."""

    def __init__(self, tekken: Path):
        from transformers import (
            MistralCommonBackend,
            VoxtralRealtimeFeatureExtractor,
            VoxtralRealtimeProcessor,
        )

        self.tok = MistralCommonBackend(tokenizer_path=str(tekken))
        self.proc = VoxtralRealtimeProcessor(
            feature_extractor=VoxtralRealtimeFeatureExtractor(), tokenizer=self.tok
        )
        self.tekkenizer = self.tok.tokenizer.instruct_tokenizer.tokenizer

    def set_delay(self, d: int) -> None:
        self.proc.mistral_common_audio_config.transcription_delay_ms = 80 * d
        assert self.proc.num_delay_tokens == d

    def offline_inputs(self, audio: np.ndarray, d: int):
        self.set_delay(d)
        return self.proc(audio, return_tensors="pt", sampling_rate=rc.SAMPLE_RATE)

    def padded_audio(self, audio: np.ndarray, d: int) -> np.ndarray:
        """The exact padded samples the feature extractor sees offline (mistral-common's padding)."""
        from mistral_common.protocol.transcription.request import StreamingMode, TranscriptionRequest
        from mistral_common.tokens.tokenizers.audio import Audio

        self.set_delay(d)
        obj = Audio(audio_array=audio, sampling_rate=rc.SAMPLE_RATE, format="wav")
        req = TranscriptionRequest(audio=obj.to_base64("wav"), streaming=StreamingMode.OFFLINE, language=None)
        return self.tok.tokenizer.encode_transcription(req).audios[0].audio_array.astype(np.float32)

    def stream_chunks(self, audio: np.ndarray, d: int) -> tuple[dict, Iterator[torch.Tensor]]:
        """First-chunk inputs and a generator of mel chunks, chunking the offline-padded array."""
        full = self.padded_audio(audio, d)
        self.set_delay(d)
        first_n = (8 * (d + 1) - 1) * 160 + 200
        real = full[N_LEFT_PAD * 1280 :]
        first = self.proc(real[:first_n], is_streaming=True, is_first_audio_chunk=True,
                          return_tensors="pt", sampling_rate=rc.SAMPLE_RATE)  # fmt: skip
        assert first["input_features"].shape[-1] == 8 * (N_LEFT_PAD + 1 + d)

        def chunks() -> Iterator[torch.Tensor]:
            yield first["input_features"]
            frame = 8 * (N_LEFT_PAD + 1 + d)
            while frame * 160 - 200 + 1680 <= full.size:
                piece = full[frame * 160 - 200 : frame * 160 - 200 + 1680]
                feats = self.proc(
                    piece, is_streaming=True, is_first_audio_chunk=False, return_tensors="pt",
                    sampling_rate=rc.SAMPLE_RATE,
                )["input_features"]  # fmt: skip
                assert feats.shape[-1] == 8
                yield feats
                frame += 8

        return first, chunks()


def greedy(model, inputs: dict, features) -> tuple[list[int], list[float], torch.Tensor]:
    """Reference greedy generate; returns generated ids (EOS included), margins and step logits."""
    out = model.generate(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                         input_features=features, num_delay_tokens=int(inputs["num_delay_tokens"]),
                         do_sample=False, output_logits=True, return_dict_in_generate=True)  # fmt: skip
    prompt = inputs["input_ids"].shape[1]
    ids = out.sequences[0, prompt:].tolist()
    logits = torch.stack([s[0] for s in out.logits])
    top2 = logits.topk(2, dim=-1).values
    return ids, (top2[:, 0] - top2[:, 1]).tolist(), logits


def final_states(model, inputs: dict, ids: list[int]) -> torch.Tensor:
    """Teacher-forced final-norm decoder states at the positions that produced `ids`."""
    seq = torch.cat([inputs["input_ids"], torch.tensor([ids])], dim=1)[:, :-1]
    feats = inputs["input_features"][:, :, : 8 * seq.shape[1]]
    grabbed: list[torch.Tensor] = []
    hook = model.model.language_model.norm.register_forward_hook(lambda m, i, o: grabbed.append(o))
    with torch.no_grad():
        model(input_ids=seq, input_features=feats, num_delay_tokens=int(inputs["num_delay_tokens"]))
    hook.remove()
    return grabbed[0][0, inputs["input_ids"].shape[1] - 1 :]


def shape_model(model, ref: Reference, clips: dict[str, np.ndarray], vocab: int) -> None:
    """Make greedy decoding of a random model non-degenerate (see the reference-semantics note)."""
    gen = torch.Generator().manual_seed(7)
    lm = model.model.language_model
    with torch.no_grad():
        lm.norm.weight.copy_(torch.where(torch.rand(lm.norm.weight.shape, generator=gen) < 0.5, -1.0, 1.0))
        # Projector: drop the component along the mean GELU activation, then rescale.
        acts = []
        for name in SPEECH:
            mel = ref.offline_inputs(clips[name], 6)["input_features"]
            enc = model.model.audio_tower(input_features=mel).last_hidden_state
            enc = enc.reshape(1, -1, enc.shape[-1] * model.config.downsample_factor)
            acts.append(torch.nn.functional.gelu(model.model.multi_modal_projector.linear_1(enc))[0])
        m = torch.cat(acts).mean(0)
        w2 = model.model.multi_modal_projector.linear_2.weight
        w2.sub_(torch.outer(w2 @ m, m) / m.dot(m))
        w2.mul_(0.5 / (torch.cat(acts) @ w2.T).std())
    emb = lm.embed_tokens.weight
    for _ in range(2):  # project the mean final-state direction out of the embedding rows
        states = torch.cat([final_states(model, *run_free(model, ref, clips[n], 6)) for n in SPEECH])
        u = states.mean(0) / states.mean(0).norm()
        with torch.no_grad():
            emb.sub_(torch.outer(emb @ u, u))
    fit_eos(model, ref, clips, vocab)
    with torch.no_grad():  # bf16-representable weights: the Mistral copy is stored in BF16, exactly
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())


def run_free(model, ref: Reference, audio: np.ndarray, d: int) -> tuple[dict, list[int]]:
    """Greedy decode without stopping at EOS (max length = n_audio); returns inputs and ids."""
    inputs = ref.offline_inputs(audio, d)
    saved = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = None
    ids, _, _ = greedy(model, inputs, inputs["input_features"])
    model.generation_config.eos_token_id = saved
    return inputs, ids


def fit_eos(model, ref: Reference, clips: dict[str, np.ndarray], vocab: int) -> None:
    """Set the EOS row so EOS wins only where the current audio token is digital silence."""
    xs, ys = [], []
    for name, audio in clips.items():
        for d in (1, 6, 15):
            inputs, ids = run_free(model, ref, audio, d)
            h = final_states(model, inputs, ids)
            pos = torch.arange(h.shape[0]) + inputs["input_ids"].shape[1] - 1
            first_pad = N_LEFT_PAD + int(np.ceil(audio.size / 1280))
            silent = (pos > first_pad) | torch.tensor(name == "silence.wav")
            keep = silent | (pos < first_pad)
            xs.append(h[keep])
            ys.append(silent[keep].float() * 2 - 1)
    x, y = torch.cat(xs), torch.cat(ys)
    w = torch.linalg.solve(x.T @ x + 1e-2 * torch.eye(x.shape[1]), x.T @ y)
    emb = model.model.language_model.embed_tokens.weight
    with torch.no_grad():
        emb[EOS] = 0.0
        others = (x @ emb.T).max(dim=1).values
        p = x @ w
        scales = np.geomspace(0.01, 1e3, 400)
        acc = np.array([float(((s * p > others) == (y > 0)).float().mean()) for s in scales])
        ok = scales[acc == acc.max()]
        # Smallest scales that reach the best accuracy, with headroom, so the EOS row stays modest.
        scale = float(min(np.sqrt(ok[0] * ok[-1]), 4.0 * ok[0]))
        print(f"  EOS probe accuracy {acc.max():.3f} for scales {ok[0]:.3g}..{ok[-1]:.3g}; using {scale:.3g}")
        emb[EOS] = scale * w


def case(ref: Reference, clip: str, d: int, ids: list[int], margins: list[float], inputs: dict) -> dict:
    ended = bool(ids) and ids[-1] == EOS
    body = ids[:-1] if ended else ids
    return {"clip": clip, "delay_tokens": d, "token_ids": body, "ended_with_eos": ended,
            "text": ref.tekkenizer.decode(body), "margins": [round(x, 6) for x in margins],
            "n_audio_tokens": int(inputs["input_features"].shape[-1]) // 8,
            "prompt_len": int(inputs["input_ids"].shape[1])}  # fmt: skip


def save_layouts(model, out: Path, tekken: Path) -> None:
    """hf/ via save_pretrained (F32) and mistral/ (params.json, BF16 consolidated.safetensors)."""
    hf, mi = out / "hf", out / "mistral"
    model.save_pretrained(hf, safe_serialization=True)
    cfg = json.loads((hf / "config.json").read_text())
    hf_state = load_file(hf / "model.safetensors")
    mistral = {k: v.to(torch.bfloat16) for k, v in rc.hf_to_mistral(hf_state, cfg).items()}
    mi.mkdir(parents=True, exist_ok=True)
    save_file(mistral, mi / "consolidated.safetensors")
    (mi / "params.json").write_text(json.dumps(rc.mistral_params(cfg), indent=2) + "\n")
    for d in (hf, mi):
        (d / "tekken.json").write_bytes(tekken.read_bytes())
    back = rc.mistral_to_hf(
        {k: v.float() for k, v in load_file(mi / "consolidated.safetensors").items()}, cfg
    )
    want = {k.removeprefix("model."): v for k, v in hf_state.items() if k != "lm_head.weight"}
    assert back.keys() == want.keys(), sorted(set(back) ^ set(want))
    for k, v in want.items():
        assert torch.equal(back[k], v), f"layout round trip changed {k}"


def intermediates(model, ref: Reference, audio: np.ndarray, logits0: torch.Tensor, path: Path) -> None:
    inputs = ref.offline_inputs(audio, 6)
    padded = ref.padded_audio(audio, 6)
    fe = ref.proc.feature_extractor
    again = fe(padded, sampling_rate=rc.SAMPLE_RATE, return_tensors="pt")["input_features"]
    assert torch.equal(again, inputs["input_features"])
    with torch.no_grad():
        enc = model.model.audio_tower(input_features=inputs["input_features"]).last_hidden_state[0]
        embeds = model.model.get_audio_features(input_features=inputs["input_features"]).pooler_output[0]
    np.savez_compressed(path, padded_audio=padded, mel=inputs["input_features"][0].numpy(),
                        enc_out=enc.numpy(), audio_embeds=embeds.numpy(), logits0=logits0.numpy(),
                        mel_filters=fe.mel_filters.astype(np.float32),
                        window=torch.hann_window(fe.n_fft).numpy())  # fmt: skip


def make_model_fixtures(name: str, spec: dict, clips: dict[str, np.ndarray], table: list[str]) -> None:
    out = DATA / "reference" / name
    tekken = out / "tekken.json"
    tk = rc.make_tekken(tekken)
    vocab = tk["config"]["default_vocab_size"]
    ref = Reference(tekken)
    model = build_model(spec, vocab)
    print(f"[{name}] shaping")
    shape_model(model, ref, clips, vocab)
    save_layouts(model, out, tekken)
    tekken.unlink()
    cases, stream_cases = [], []
    for clip, audio in clips.items():
        for d in DELAYS:
            inputs = ref.offline_inputs(audio, d)
            ids, margins, logits = greedy(model, inputs, inputs["input_features"])
            cases.append(case(ref, clip, d, ids, margins, inputs))
            if clip == "speech_short.wav" and d == 6:
                intermediates(model, ref, audio, logits[0], out / "intermediates_speech_short_d6.npz")
    for clip in STREAM_CLIPS:
        for d in STREAM_DELAYS:
            first, chunks = ref.stream_chunks(clips[clip], d)
            ids, margins, _ = greedy(model, first, chunks)
            c = case(ref, clip, d, ids, margins, first)
            off = next(x for x in cases if x["clip"] == clip and x["delay_tokens"] == d)
            c["n_audio_tokens"] = off["n_audio_tokens"]
            c["equals_offline"] = (
                c["token_ids"] == off["token_ids"] and c["ended_with_eos"] == off["ended_with_eos"]
            )
            stream_cases.append(c)
    doc = {"model": name, "bos_id": BOS, "eos_id": EOS, "n_special": rc.N_SPECIAL, "vocab_size": vocab,
           "cases": cases, "stream_cases": stream_cases}  # fmt: skip
    (out / "expected.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    for c in cases + stream_cases:
        kind = "stream" if "equals_offline" in c else "offline"
        ids = c["token_ids"]
        table.append(f"| {name} | {kind} | {c['clip']} | {c['delay_tokens']} | {len(ids)} | "
                     f"{len(set(ids))} | {c['ended_with_eos']} | {min(c['margins']):.4f} |")  # fmt: skip


def main() -> None:
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    clips = rc.make_clips(DATA / "audio")
    table = [
        "| model | mode | clip | d | tokens | distinct | EOS | min margin |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, spec in MODELS.items():
        make_model_fixtures(name, spec, clips, table)
    (DATA / "reference" / "summary.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))


if __name__ == "__main__":
    main()
