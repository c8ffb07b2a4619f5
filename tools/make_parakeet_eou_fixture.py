"""Make the golden Parakeet-EOU fixtures under tests/data/fastconformer from NVIDIA NeMo itself.

Dev-only: needs the NeMo venv (nemo_toolkit[asr]==3.0.0, torch 2.13.0+cpu), never the test run.
Deterministic (fixed seeds, one torch thread, a normalised tar). Run from the repo root:

    /work/nemoenv/bin/python tools/make_parakeet_eou_fixture.py

Per variant (`parakeet_eou_tiny`: left context 70 like the real model; `parakeet_eou_tiny_ctx`:
left context 14, shorter than every clip) it builds a random `EncDecRNNTBPEEOUModel` with the
structure of `nvidia/parakeet_realtime_eou_120m-v1` but tiny widths, calibrates a few weights so
that greedy RNN-T decoding emits words on speech, `<EOU>` once per pause and nothing on silence,
saves it with `save_to` (the real `.nemo` layout), reloads it with `restore_from` and writes
expected.json (offline ids, NeMo cache-aware streaming ids) and, for the first variant,
intermediates_speech_short.npz. The README next to the outputs says what every file holds.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf
import torch

ROOT = Path(__file__).resolve().parent.parent
AUDIO = ROOT / "tests" / "data" / "audio"
OUT = ROOT / "tests" / "data" / "fastconformer"
SR = 16000
CLIPS = ["speech_short", "speech_mid", "speech_long", "silence", "noise", "speech_pause"]
N_BPE = 126  # SentencePiece pieces before <EOU>/<EOB> are appended: ids 126, 127; blank 128
MAX_SYMBOLS = 10  # decoding.greedy.max_symbols of the real model
EMIT_TARGET = 0.35  # wanted share of speech-clip frames with at least one token
SILENCE_DB, SPEECH_DB = -12.5, -10.5  # mean log-mel below / above: frame labels for the silence score

VARIANTS: dict[str, dict] = {
    "parakeet_eou_tiny": dict(seed=20240601, d_model=64, n_layers=3, n_heads=4, channels=16,
                              pred_hidden=48, joint_hidden=56, att_context=[70, 1], intermediates=True),
    "parakeet_eou_tiny_ctx": dict(seed=20240604, d_model=48, n_layers=2, n_heads=2, channels=16,
                                  pred_hidden=40, joint_hidden=48, att_context=[14, 1], intermediates=False),
}  # fmt: skip

# Lower-case, punctuation-free like the real model's targets.
CORPUS = "\n".join(
    [
        "the quick brown fox jumps over the lazy dog",
        "captions appear on the screen while people are talking quietly and without delay",
        "live captioning turns speech into text as it happens",
        "the model listens to short slices of audio and every eighty milliseconds it decides "
        "whether a new word has started",
        "when the speaker pauses nothing is written and when the speaker continues the text grows again",
        "she sells sea shells by the sea shore and the shells she sells are surely sea shells",
        "a journey of a thousand miles begins with a single step",
        "please call me back when you have a moment to talk about the meeting tomorrow",
        "the weather today is cold and windy with a chance of rain in the evening",
        "numbers like seven twelve and forty two are spoken as words",
        "could you repeat that i did not quite hear what you said",
        "thank you very much for listening and have a wonderful day",
    ]
)


def build_tokenizer(tok_dir: Path) -> None:
    """A SentencePiece BPE model with `<EOU>`/`<EOB>` appended as the last two USER_DEFINED pieces.

    That is how NeMo's EOU recipe (scripts/asr_eou/tokenizers/add_special_tokens_to_sentencepiece.py)
    extends the 1024-piece tokenizer of the real model; its dataset refuses any other placement.
    Writes the three files NeMo registers: tokenizer.model, tokenizer.vocab, vocab.txt.
    """
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb

    corpus = tok_dir / "corpus.txt"
    corpus.write_text(CORPUS + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.Train(
        input=str(corpus), model_prefix=str(tok_dir / "tokenizer"), vocab_size=N_BPE, model_type="bpe",
        character_coverage=1.0, bos_id=-1, eos_id=-1, hard_vocab_limit=False, num_threads=1,
        shuffle_input_sentence=False, remove_extra_whitespaces=False, normalization_rule_name="identity",
        minloglevel=2,
    )  # fmt: skip
    proto = pb.ModelProto()
    proto.ParseFromString((tok_dir / "tokenizer.model").read_bytes())
    assert len(proto.pieces) == N_BPE, len(proto.pieces)
    proto.trainer_spec.input[:] = ["corpus.txt"]  # the trainer records its (temporary) paths
    proto.trainer_spec.model_prefix = "tokenizer"
    for name in ("<EOU>", "<EOB>"):
        piece = proto.pieces.add()
        piece.piece, piece.score, piece.type = name, 0.0, pb.ModelProto.SentencePiece.USER_DEFINED
    (tok_dir / "tokenizer.model").write_bytes(proto.SerializeToString())
    (tok_dir / "tokenizer.vocab").write_text(
        "".join(f"{p.piece}\t{p.score:g}\n" for p in proto.pieces), encoding="utf-8"
    )
    # vocab.txt as NeMo's create_spt_model writes it: special/user pieces skipped, '▁x' -> 'x', 'x' -> '##x'.
    normal = [p.piece for p in proto.pieces if p.type == pb.ModelProto.SentencePiece.NORMAL]
    words = [p[1:] if p.startswith("▁") and len(p) > 1 else p if p == "▁" else f"##{p}" for p in normal]
    (tok_dir / "vocab.txt").write_text("".join(f"{w}\n" for w in words), encoding="utf-8")


def model_config(spec: dict, tok_dir: Path):
    """The real model's config structure (see the README for what is verified) at tiny widths."""
    from omegaconf import OmegaConf

    return OmegaConf.create({
        "sample_rate": SR, "compute_eval_loss": False, "log_prediction": True, "skip_nan_grad": False,
        "model_defaults": {"enc_hidden": spec["d_model"], "pred_hidden": spec["pred_hidden"],
                           "joint_hidden": spec["joint_hidden"]},
        "tokenizer": {"dir": None, "type": "bpe", "model_path": str(tok_dir / "tokenizer.model"),
                      "vocab_path": str(tok_dir / "vocab.txt"),
                      "spe_tokenizer_vocab": str(tok_dir / "tokenizer.vocab")},
        "preprocessor": {
            "_target_": "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor",
            "sample_rate": SR, "normalize": "NA", "window_size": 0.025, "window_stride": 0.01,
            "window": "hann", "features": 128, "n_fft": 512, "frame_splicing": 1, "dither": 1e-5,
            "pad_to": 0},
        "spec_augment": {"_target_": "nemo.collections.asr.modules.SpectrogramAugmentation",
                         "freq_masks": 2, "time_masks": 10, "freq_width": 27, "time_width": 0.05},
        "encoder": {
            "_target_": "nemo.collections.asr.modules.ConformerEncoder", "feat_in": 128, "feat_out": -1,
            "n_layers": spec["n_layers"], "d_model": spec["d_model"], "use_bias": True,
            "subsampling": "dw_striding", "subsampling_factor": 8,
            "subsampling_conv_channels": spec["channels"], "causal_downsampling": True,
            "ff_expansion_factor": 4, "self_attention_model": "rel_pos", "n_heads": spec["n_heads"],
            "att_context_size": spec["att_context"], "att_context_style": "chunked_limited",
            "att_context_probs": None, "xscaling": True, "untie_biases": True, "pos_emb_max_len": 5000,
            "conv_kernel_size": 9, "conv_norm_type": "layer_norm", "conv_context_size": "causal",
            "dropout": 0.1, "dropout_pre_encoder": 0.1, "dropout_emb": 0.0, "dropout_att": 0.1,
            "stochastic_depth_drop_prob": 0.0, "stochastic_depth_mode": "linear",
            "stochastic_depth_start_layer": 1},
        "decoder": {"_target_": "nemo.collections.asr.modules.RNNTDecoder", "normalization_mode": None,
                    "random_state_sampling": False, "blank_as_pad": True,
                    "prednet": {"pred_hidden": spec["pred_hidden"], "pred_rnn_layers": 1, "t_max": None,
                                "dropout": 0.2}},
        "joint": {"_target_": "nemo.collections.asr.modules.RNNTJoint", "log_softmax": None,
                  "preserve_memory": False, "fuse_loss_wer": True, "fused_batch_size": 4,
                  "jointnet": {"joint_hidden": spec["joint_hidden"], "activation": "relu", "dropout": 0.2}},
        "decoding": {"strategy": "greedy_batch", "greedy": {"max_symbols": MAX_SYMBOLS}},
        "loss": {"loss_name": "default",
                 "warprnnt_numba_kwargs": {"fastemit_lambda": 5e-3, "clamp": -1.0}},
    })  # fmt: skip


def randomize(model, seed: int) -> None:
    """Every parameter random (none left at a trivial init), fan-in scaled; the blank embedding row
    stays zero as NeMo's padding row is in every trained checkpoint."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith(
                (
                    "norm_feed_forward1.weight",
                    "norm_feed_forward2.weight",
                    "norm_self_att.weight",
                    "norm_conv.weight",
                    "norm_out.weight",
                    "conv.batch_norm.weight",
                )
            ):
                p.copy_(0.6 + 0.8 * torch.rand(p.shape, generator=gen))
            elif name.endswith(("pos_bias_u", "pos_bias_v")):
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias") or "bias_" in name.rsplit(".", 1)[-1]:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif name == "decoder.prediction.embed.weight":
                p.copy_(torch.randn(p.shape, generator=gen))
                p[-1] = 0.0
            else:
                fan_in = p[0].numel()
                bound = (3.0 / fan_in) ** 0.5
                p.copy_((2 * torch.rand(p.shape, generator=gen) - 1) * bound)


def load_clip(name: str) -> np.ndarray:
    if name == "speech_pause":
        return sf.read(OUT / "parakeet_eou_tiny" / "speech_pause.wav", dtype="float32")[0]
    return sf.read(AUDIO / f"{name}.wav", dtype="float32")[0]


def write_speech_pause() -> None:
    """speech_short + 1 s of digital zeros + speech_short (PCM_16, the exact samples of the pieces),
    beside each model (the tests look for a clip there before tests/data/audio)."""
    x = sf.read(AUDIO / "speech_short.wav", dtype="int16")[0]
    y = np.concatenate([x, np.zeros(SR, np.int16), x])
    for name in VARIANTS:
        (OUT / name).mkdir(parents=True, exist_ok=True)
        sf.write(OUT / name / "speech_pause.wav", y, SR, subtype="PCM_16")


@torch.no_grad()
def features(model, x: np.ndarray) -> tuple[torch.Tensor, int]:
    """Preprocessor output [1, 128, T_mel] and its valid length (T_mel − 1: the last frame is masked)."""
    f, n = model.preprocessor(input_signal=torch.from_numpy(x)[None], length=torch.tensor([len(x)]))
    return f, int(n)


@torch.no_grad()
def encode(model, x: np.ndarray) -> torch.Tensor:
    """Offline encoder output [T_enc, d_model] (the chunked-limited mask of att_context_size)."""
    f, n = features(model, x)
    enc, enc_len = model.encoder(audio_signal=f, length=torch.tensor([n]))
    return enc[0, :, : int(enc_len)].T.contiguous()


@torch.no_grad()
def greedy(model, enc: torch.Tensor) -> dict:
    """Frame-synchronous greedy RNN-T, written out with NeMo's own decoder/joint modules.

    The same rule as NeMo's label-looping `greedy_batch`: start from predict(blank) with a zero state;
    at frame t emit argmax tokens until blank or `max_symbols` emissions, feeding each one back.
    Also gives what NeMo does not: the top-1/top-2 raw-logit margin of every decision.
    """
    joint, dec = model.joint, model.decoder
    blank = joint.num_classes_with_blank - 1
    f = joint.project_encoder(enc[None])[0]
    out, state = dec.predict(torch.tensor([[blank]]), state=None, add_sos=False, batch_size=1)
    g = joint.project_prednet(out)[0, 0]
    ids, frames, margins, per_frame, min_all = [], [], [], [], float("inf")
    for t in range(f.shape[0]):
        n = 0
        while True:
            logits = joint.joint_net(f[t] + g)
            top = torch.topk(logits, 2).values
            min_all = min(min_all, float(top[0] - top[1]))
            k = int(torch.argmax(logits))
            if k == blank:
                break
            ids.append(k)
            frames.append(t)
            margins.append(float(top[0] - top[1]))
            out, state = dec.predict(torch.tensor([[k]]), state=state, add_sos=False, batch_size=1)
            g = joint.project_prednet(out)[0, 0]
            n += 1
            if n >= MAX_SYMBOLS:
                break
        per_frame.append(n)
    return dict(ids=ids, frames=frames, margins=margins, per_frame=per_frame, min_margin=min_all)


# Calibration (the README explains it). Joint hidden units: [0, N_SIL) a small relu classifier of
# silence frames fitted on the encoder output; N_SIL and N_SIL + 1: "the last token was a word" and
# "... was <EOU>" (from LSTM unit 0); then MEM units that pass on which token slots were emitted
# recently (LSTM units 1..MEM); the rest stay random. Logits: blank += BLANK_SIL * silence;
# <EOU> − blank = EOU_GAP * (silence + 2 word − 2 eou − 2.5); a word's logit −= REPEAT * its slot's
# recency. The blank bias is bisected to EMIT_TARGET, then moved within ±0.1 to the value with the
# widest smallest top-1/top-2 margin.
N_SIL, MEM = 8, 12
BLANK_SIL, EOU_GAP, REPEAT = 12.0, 12.0, 4.0
GATE_BIAS, FLAG_IN, MEM_IN, MEM_FORGET, MEM_GAIN = 8.0, 4.0, 3.0, 2.0, 3.0
ENC_SCALE, PRED_SCALE, OUT_SCALE = 3.0, 2.0, 3.0


def frame_labels(model, x: np.ndarray) -> np.ndarray:
    """Per encoder frame: 1 silence, 0 speech, -1 in between, from the mean log-mel of its 8 frames."""
    f, n = features(model, x)
    level = f[0, :, :n].mean(0).numpy()
    t_enc = encode(model, x).shape[0]
    e = np.array([level[max(0, 8 * t - 7) : min(8 * t, n - 1) + 1].mean() for t in range(t_enc)])
    return np.where(e < SILENCE_DB, 1, np.where(e > SPEECH_DB, 0, -1))


def fit_silence(
    model, clips: dict[str, np.ndarray], seed: int
) -> tuple[torch.nn.Linear, torch.nn.Linear, float]:
    """relu(N_SIL) -> 1 regression of the frame labels (MSE, Adam, fixed seed); returns layers and its R²."""
    xs, ys = [], []
    for name in ["speech_short", "speech_mid", "speech_long", "silence", "speech_pause"]:
        keep = frame_labels(model, clips[name])
        xs.append(encode(model, clips[name])[torch.from_numpy(keep >= 0)])
        ys.append(torch.from_numpy(keep[keep >= 0]).float())
    x, y = torch.cat(xs), torch.cat(ys)
    torch.manual_seed(seed)
    hidden, head = torch.nn.Linear(x.shape[1], N_SIL), torch.nn.Linear(N_SIL, 1)
    opt = torch.optim.Adam([*hidden.parameters(), *head.parameters()], lr=1e-2)
    with torch.enable_grad():
        for _ in range(2000):
            loss = ((head(torch.relu(hidden(x)))[:, 0] - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return hidden, head, float(1 - loss / y.var())


@torch.no_grad()
def calibrate(model, clips: dict[str, np.ndarray], seed: int) -> dict:
    """Set the engineered weights, then the blank bias by bisection; returns a summary for the README."""
    dec, joint = model.decoder, model.joint
    hidden, head, r2 = fit_silence(model, clips, seed)
    h = dec.pred_hidden
    eou, blank = model.eou_token, joint.num_classes_with_blank - 1
    slot = torch.nn.functional.one_hot(torch.arange(blank) % MEM, MEM).float()  # [blank, MEM]

    embed = dec.prediction["embed"].weight  # dim 0: +1 word, −1 <EOU>; dims 1..MEM: the token's slot
    embed[:blank, 0], embed[eou, 0] = 1.0, -1.0
    embed[:blank, 1 : MEM + 1] = slot
    embed[eou, 1 : MEM + 1] = 0.0
    # LSTM unit 0: input/output gates open, forget shut, no recurrence -> h0 = ±flag after word/<EOU>.
    # Units 1..MEM: forget gate sigmoid(MEM_FORGET) -> c_j decays per token, + tanh(MEM_IN) on its slot.
    lstm = dec.prediction["dec_rnn"].lstm
    for unit in range(MEM + 1):
        forget = -GATE_BIAS if unit == 0 else MEM_FORGET
        for gate, bias in ((0, GATE_BIAS), (1, forget), (2, 0.0), (3, GATE_BIAS)):
            row = gate * h + unit
            lstm.weight_ih_l0[row], lstm.weight_hh_l0[row] = 0.0, 0.0
            lstm.bias_ih_l0[row], lstm.bias_hh_l0[row] = bias, 0.0
        lstm.weight_ih_l0[2 * h + unit, unit] = FLAG_IN if unit == 0 else MEM_IN
    flag = float(torch.sigmoid(torch.tensor(GATE_BIAS)) * torch.tanh(torch.tanh(torch.tensor(FLAG_IN))))

    sil, word, said, mem = slice(0, N_SIL), N_SIL, N_SIL + 1, slice(N_SIL + 2, N_SIL + 2 + MEM)
    rand = slice(N_SIL + 2 + MEM, None)
    joint.enc.weight[rand] *= ENC_SCALE
    joint.pred.weight[rand] *= PRED_SCALE
    joint.enc.weight[: rand.start], joint.enc.bias[: rand.start] = 0.0, 0.0
    joint.pred.weight[: rand.start], joint.pred.bias[: rand.start] = 0.0, 0.0
    joint.enc.weight[sil], joint.enc.bias[sil] = hidden.weight, hidden.bias
    joint.pred.weight[word, 0], joint.pred.weight[said, 0] = 1.0 / flag, -1.0 / flag
    joint.pred.weight[mem, 1 : MEM + 1] = MEM_GAIN * torch.eye(MEM)

    out = joint.joint_net[-1]
    out.weight[:, rand] *= OUT_SCALE
    out.weight[:, : rand.start] = 0.0
    out.weight[:blank, mem] = -REPEAT * slot
    out.weight[blank, sil] = BLANK_SIL * head.weight[0]
    out.weight[eou] = out.weight[blank]
    out.weight[eou, sil] += EOU_GAP * head.weight[0]
    out.weight[eou, word], out.weight[eou, said], out.weight[eou, mem] = 2 * EOU_GAP, -2 * EOU_GAP, 0.0
    sil_bias = float(head.bias[0])

    def set_blank(b: float) -> None:
        out.bias[blank] = b + BLANK_SIL * sil_bias
        out.bias[eou] = out.bias[blank] + EOU_GAP * (sil_bias - 2.5)

    encs = [encode(model, clips[n]) for n in ["speech_short", "speech_mid", "speech_long"]]

    def emit_share(b: float) -> float:
        set_blank(b)
        runs = [greedy(model, e)["per_frame"] for e in encs]
        return sum(sum(1 for n in r if n) for r in runs) / sum(len(r) for r in runs)

    lo, hi = -20.0, 20.0
    for _ in range(24):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if emit_share(mid) > EMIT_TARGET else (lo, mid)
    every = [encode(model, x) for x in clips.values()]

    def min_margin(b: float) -> float:
        set_blank(b)
        return min(greedy(model, e)["min_margin"] for e in every)

    b0 = round(0.5 * (lo + hi), 3)
    b = max((b0 + 0.01 * k for k in range(-10, 11)), key=lambda b: (min_margin(b), -abs(b - b0)))
    share = emit_share(b)
    assert 0.2 <= share <= 0.5, share
    return dict(
        silence_fit_r2=round(r2, 4),
        min_margin=round(min_margin(b), 6),
        blank_bias=round(float(out.bias[blank]), 4),
        eou_bias=round(float(out.bias[eou]), 4),
        emit_share_speech=round(share, 4),
    )


def save_nemo(model, path: Path) -> None:
    """`model.save_to`, then the same tar made byte-reproducible: NeMo names artifacts
    `<uuid4 hex>_<file>`; here the 32 hex digits are the file's MD5 instead (config paths follow),
    and every member gets mtime 0, uid/gid 0, no owner names, sorted order, NeMo's `./` prefix."""
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.nemo"
        model.save_to(str(raw))
        with tarfile.open(raw) as tar:
            files = {
                m.name.removeprefix("./"): tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()
            }
    config = files.pop("model_config.yaml").decode("utf-8")
    for name in [n for n in files if n != "model_weights.ckpt"]:
        data = files.pop(name)
        stable = f"{hashlib.md5(data).hexdigest()}_{name.split('_', 1)[1]}"
        config = config.replace(name, stable)
        files[stable] = data
    files["model_config.yaml"] = config.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo(".")
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)
        for name in sorted(files):
            info = tarfile.TarInfo(f"./{name}")
            info.size, info.mode = len(files[name]), 0o644
            tar.addfile(info, io.BytesIO(files[name]))


def detokenize(model, ids: list[int]) -> str:
    """GGUF.md's rule: '▁' -> space, control/user-defined/unknown pieces add nothing, no leading space."""
    sp = model.tokenizer.tokenizer
    text = "".join(
        "" if sp.is_control(i) or sp.is_unknown(i) or sp.id_to_piece(i) in ("<EOU>", "<EOB>")
        else sp.id_to_piece(i).replace("\u2581", " ")
        for i in ids
    )  # fmt: skip
    return text[1:] if text.startswith(" ") else text


@torch.no_grad()
def offline_case(model, name: str, x: np.ndarray) -> dict:
    """Offline ids three ways (NeMo decoding, model.transcribe, the written-out loop), asserted equal."""
    heard = model.transcribe([x], return_hypotheses=True, verbose=False)[0]
    model.eval()  # NeMo 3.0.0's transcribe leaves the submodules in training mode (dropout on)
    f, n = features(model, x)
    enc, enc_len = model.encoder(audio_signal=f, length=torch.tensor([n]))
    hyp = model.decoding.rnnt_decoder_predictions_tensor(
        encoder_output=enc, encoded_lengths=enc_len, return_hypotheses=True
    )[0]
    ours = greedy(model, enc[0, :, : int(enc_len)].T)
    assert hyp.y_sequence.tolist() == ours["ids"] == heard.y_sequence.tolist(), name
    assert hyp.timestamp["timestep"] == ours["frames"], name
    per_frame = ours["per_frame"]
    return dict(
        clip=name, n_samples=len(x), n_mel_frames=f.shape[-1], mel_length=n, n_enc_frames=int(enc_len),
        token_ids=ours["ids"], token_frames=ours["frames"], text=detokenize(model, ours["ids"]),
        text_nemo=hyp.text, n_eou=ours["ids"].count(model.eou_token),
        n_eob=ours["ids"].count(model.eob_token), n_emitting_frames=sum(1 for k in per_frame if k),
        n_frames_at_max_symbols=per_frame.count(MAX_SYMBOLS),
        margins=[round(m, 6) for m in ours["margins"]], min_margin_all_steps=round(ours["min_margin"], 6),
    )  # fmt: skip


@torch.no_grad()
def stream_nemo(model, x: np.ndarray) -> tuple[list[int], torch.Tensor, int]:
    """NeMo's own cache-aware streaming, as examples/asr/asr_cache_aware_streaming does it:
    CacheAwareStreamingAudioBuffer chunks, conformer_stream_step with the caches and the previous
    hypotheses carried, no pre-encode drop on the first chunk. Needs a decoding config without
    alignments/timestamps (the caller switches it). Returns ids, encoder frames, chunk count."""
    from nemo.collections.asr.parts.utils.streaming_utils import CacheAwareStreamingAudioBuffer

    buf = CacheAwareStreamingAudioBuffer(model, online_normalization=False, pad_and_drop_preencoded=False)
    buf.append_audio(x)
    cache = model.encoder.get_initial_cache_state(batch_size=1)
    hyps, frames, steps = None, [], 0
    for step, (chunk, length) in enumerate(buf):
        drop = 0 if step == 0 else model.encoder.streaming_cfg.drop_extra_pre_encoded
        last = buf.is_buffer_empty()
        enc = model.encoder.cache_aware_stream_step(
            processed_signal=chunk,
            processed_signal_length=length,
            cache_last_channel=cache[0],
            cache_last_time=cache[1],
            cache_last_channel_len=cache[2],
            keep_all_outputs=last,
            drop_extra_pre_encoded=drop,
        )
        frames.append(enc[0][0, :, : int(enc[1])].T)
        out = model.conformer_stream_step(
            processed_signal=chunk,
            processed_signal_length=length,
            cache_last_channel=cache[0],
            cache_last_time=cache[1],
            cache_last_channel_len=cache[2],
            keep_all_outputs=last,
            previous_hypotheses=hyps,
            drop_extra_pre_encoded=drop,
            return_transcription=True,
        )
        cache, hyps, steps = out[2:5], out[5], step + 1
    return hyps[0].y_sequence.tolist(), torch.cat(frames), steps


@torch.no_grad()
def stream_exact(model, x: np.ndarray) -> torch.Tensor:
    """The same cache-aware steps on feature slices cut by hand, with the valid length L (not the
    buffer's L + 1) and a last chunk of any size: the streamed encoder output [T_enc, d]."""
    cfg = model.encoder.streaming_cfg
    f, n = features(model, x)
    f = f[:, :, :n]
    cache = model.encoder.get_initial_cache_state(batch_size=1)
    first, size, keep = (
        cfg.chunk_size[0],
        cfg.chunk_size[1],
        cfg.pre_encode_cache_size[1],
    )  # 9, 16, 9 mel frames
    starts = [0] + list(range(first, n, size))
    frames = []
    for i, start in enumerate(starts):
        lo, hi = (0, first) if i == 0 else (start - keep, min(start + size, n))
        chunk = f[:, :, lo:hi]
        enc, enc_len, *cache = model.encoder.cache_aware_stream_step(
            processed_signal=chunk,
            processed_signal_length=torch.tensor([chunk.shape[-1]]),
            cache_last_channel=cache[0],
            cache_last_time=cache[1],
            cache_last_channel_len=cache[2],
            keep_all_outputs=i == len(starts) - 1,
            drop_extra_pre_encoded=0 if i == 0 else None,
        )
        frames.append(enc[0, :, : int(enc_len)].T)
    return torch.cat(frames)


def stream_case(model, name: str, x: np.ndarray, case: dict) -> dict:
    offline = encode(model, x)
    ids, frames, steps = stream_nemo(model, x)
    assert greedy(model, frames)["ids"] == ids, name  # the carried decoder state = decoding the concatenation
    common = min(len(frames), len(offline))
    diff = (frames[:common] - offline[:common]).abs().amax(1)
    exact = stream_exact(model, x)
    exact_ids = greedy(model, exact)["ids"]
    return dict(
        nemo_buffer=dict(token_ids=ids, equals_offline=ids == case["token_ids"], n_chunks=steps,
                         n_enc_frames=len(frames), max_abs_diff=float(diff.max()),
                         frames_differing=[int(t) for t in torch.nonzero(diff > 1e-4)[:, 0]]),
        valid_length=dict(token_ids_equal_offline=exact_ids == case["token_ids"], n_enc_frames=len(exact),
                          max_abs_diff=float((exact - offline).abs().max()) if len(exact) == len(offline)
                          else None),
    )  # fmt: skip


@torch.no_grad()
def intermediates(model, x: np.ndarray) -> dict[str, np.ndarray]:
    """Offline tensors of one clip, time first, float32 (the README lists them)."""
    f, n = features(model, x)
    seen: dict[str, torch.Tensor] = {}
    hooks = [model.encoder.pre_encode.register_forward_hook(lambda m, i, o: seen.__setitem__("sub", o[0]))]
    for k, layer in enumerate(model.encoder.layers):
        hooks.append(layer.register_forward_hook(lambda m, i, o, k=k: seen.__setitem__(f"layer{k}", o)))
    enc, enc_len = model.encoder(audio_signal=f, length=torch.tensor([n]))
    for hook in hooks:
        hook.remove()
    joint, blank = model.joint, model.joint.num_classes_with_blank - 1
    t = int(enc_len)  # NeMo's tensors carry one padding frame more when L is odd; keep the valid ones
    enc = enc[0, :, :t].T
    dec_out, _ = model.decoder.predict(torch.tensor([[blank]]), state=None, add_sos=False, batch_size=1)
    g = joint.project_prednet(dec_out)[0, 0]
    f_enc = joint.project_encoder(enc[None])[0]
    arrays = dict(
        features=f[0].T, subsampling_out=seen["sub"][0][:t],
        layer_out=torch.stack([seen[f"layer{k}"][0, :t] for k in range(len(model.encoder.layers))]),
        encoder_out=enc, joint_enc=f_enc, decoder_out_start=dec_out[0, 0], decoder_proj_start=g,
        first_joint_logits=joint.joint_net(f_enc[0] + g),
    )  # fmt: skip
    return {k: v.contiguous().numpy().astype(np.float32) for k, v in arrays.items()}


def versions() -> dict[str, str]:
    import nemo
    import sentencepiece

    return {
        "nemo_toolkit": nemo.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "sentencepiece": sentencepiece.__version__,
        "python": sys.version.split()[0],
    }


def make_variant(name: str, spec: dict, clips: dict[str, np.ndarray]) -> None:
    from nemo.collections.asr.models.asr_eou_models import EncDecRNNTBPEEOUModel
    from omegaconf import open_dict

    out_dir = OUT / name
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        build_tokenizer(Path(tmp))
        built = EncDecRNNTBPEEOUModel(model_config(spec, Path(tmp))).eval()
        randomize(built, spec["seed"])
        summary = calibrate(built, clips, spec["seed"])
        save_nemo(built, out_dir / "model.nemo")
    model = EncDecRNNTBPEEOUModel.restore_from(str(out_dir / "model.nemo"), map_location="cpu").eval()
    for clip in CLIPS:  # the restored file computes exactly what the built model did
        assert torch.equal(encode(model, clips[clip]), encode(built, clips[clip])), clip
        assert (
            greedy(model, encode(model, clips[clip]))["ids"]
            == greedy(built, encode(built, clips[clip]))["ids"]
        )
    cases = [offline_case(model, clip, clips[clip]) for clip in CLIPS]
    assert min(c["min_margin_all_steps"] for c in cases) > 1e-4
    decoding = model.cfg.decoding.copy()
    with open_dict(decoding):  # NeMo's streaming merge fails on the second chunk with timestamps on
        decoding.preserve_alignments, decoding.compute_timestamps = False, False
    model.change_decoding_strategy(decoding, verbose=False)
    for case in cases:
        case["stream"] = stream_case(model, case["clip"], clips[case["clip"]], case)
    enc, tok, n_vocab = model.encoder, model.tokenizer.tokenizer, model.joint.num_classes_with_blank
    cfg = enc.streaming_cfg
    expected = dict(
        model=name, file="model.nemo", generator="tools/make_parakeet_eou_fixture.py", versions=versions(),
        seed=spec["seed"], target=model.cfg.target,
        dims=dict(d_model=spec["d_model"], n_layers=spec["n_layers"], n_heads=spec["n_heads"],
                  subsampling_channels=spec["channels"], ff=4 * spec["d_model"], conv_kernel=9,
                  pred_hidden=spec["pred_hidden"], joint_hidden=spec["joint_hidden"], n_mel=128),
        att_context_size=spec["att_context"], max_symbols=MAX_SYMBOLS,
        vocab=dict(n_vocab=n_vocab, blank_id=n_vocab - 1,
                   eou_id=model.eou_token, eob_id=model.eob_token, n_pieces=tok.get_piece_size(),
                   pieces=[tok.id_to_piece(i) for i in range(tok.get_piece_size())]),
        streaming_cfg=dict(chunk_size=cfg.chunk_size, shift_size=cfg.shift_size,
                           pre_encode_cache_size=cfg.pre_encode_cache_size,
                           drop_extra_pre_encoded=cfg.drop_extra_pre_encoded,
                           last_channel_cache_size=cfg.last_channel_cache_size,
                           valid_out_len=cfg.valid_out_len,
                           cache_drop_size=cfg.cache_drop_size, conv_cache=enc.conv_context_size[0]),
        calibration=summary,
        clip_dir={c: f"fastconformer/{name}" if c == "speech_pause" else "audio" for c in CLIPS},
        cases=cases,
    )  # fmt: skip
    (out_dir / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n", "utf-8")
    if spec["intermediates"]:
        np.savez(out_dir / "intermediates_speech_short.npz", **intermediates(model, clips["speech_short"]))
    print(
        name,
        summary,
        [
            (c["clip"], len(c["token_ids"]), c["n_eou"], c["stream"]["nemo_buffer"]["equals_offline"])
            for c in cases
        ],
    )


def main() -> None:
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    logging.disable(logging.WARNING)
    write_speech_pause()
    clips = {clip: load_clip(clip) for clip in CLIPS}
    for name, spec in VARIANTS.items():
        make_variant(name, spec, clips)


if __name__ == "__main__":
    main()
