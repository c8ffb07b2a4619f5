// voxtral_model.cpp - reads a `voxtral_realtime` GGUF (engine/GGUF.md) into a voxtral_model.
#include "voxtral_model.h"

#include "gguf_file.h"
#include "voxtral_stream.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace captionist {

namespace {

constexpr int TOKEN_MS = 80;
constexpr int MAX_DELAY_TOKENS = 30; // 2400 ms

void read_hparams(const hparam_reader & r, model_hparams & hp) {
    hp.sample_rate = r.u32("voxtral.audio.sample_rate");
    hp.n_fft = r.u32("voxtral.audio.n_fft");
    hp.hop_length = r.u32("voxtral.audio.hop_length");
    hp.n_mel = r.u32("voxtral.audio.n_mel");
    hp.global_log_mel_max = r.f32("voxtral.audio.global_log_mel_max");
    hp.mel_frames_per_token = r.u32("voxtral.audio.mel_frames_per_token");
    hp.downsample_factor = r.u32("voxtral.audio.downsample_factor");
    hp.n_left_pad_tokens = r.u32("voxtral.audio.n_left_pad_tokens");
    hp.n_right_pad_extra_tokens = r.u32("voxtral.audio.n_right_pad_extra_tokens");
    hp.default_num_delay_tokens = r.u32("voxtral.default_num_delay_tokens");
    hp.time_embedding_theta = r.f32("voxtral.time_embedding_theta");

    hp.enc_n_embd = r.u32("voxtral.encoder.n_embd");
    hp.enc_n_layer = r.u32("voxtral.encoder.n_layer");
    hp.enc_n_head = r.u32("voxtral.encoder.n_head");
    hp.enc_head_dim = r.u32("voxtral.encoder.head_dim");
    hp.enc_n_ff = r.u32("voxtral.encoder.n_ff");
    hp.enc_rms_eps = r.f32("voxtral.encoder.rms_eps");
    hp.enc_rope_theta = r.f32("voxtral.encoder.rope_theta");
    hp.enc_sliding_window = r.u32("voxtral.encoder.sliding_window");

    hp.dec_n_embd = r.u32("voxtral.decoder.n_embd");
    hp.dec_n_layer = r.u32("voxtral.decoder.n_layer");
    hp.dec_n_head = r.u32("voxtral.decoder.n_head");
    hp.dec_n_head_kv = r.u32("voxtral.decoder.n_head_kv");
    hp.dec_head_dim = r.u32("voxtral.decoder.head_dim");
    hp.dec_n_ff = r.u32("voxtral.decoder.n_ff");
    hp.dec_rms_eps = r.f32("voxtral.decoder.rms_eps");
    hp.dec_rope_theta = r.f32("voxtral.decoder.rope_theta");
    hp.dec_sliding_window = r.u32("voxtral.decoder.sliding_window");
    hp.dec_max_position = r.u32("voxtral.decoder.max_position");
    hp.dec_n_vocab = r.u32("voxtral.decoder.n_vocab");
    hp.dec_ada_dim = r.u32("voxtral.decoder.ada_dim");

    auto need = [](bool ok, const char * what) {
        if (!ok) throw std::runtime_error(std::string("model hyper-parameters are inconsistent: ") + what);
    };
    need(hp.sample_rate == 16000, "sample_rate must be 16000");
    need(hp.n_fft >= 2 && hp.hop_length > 0 && hp.n_mel > 0, "audio frontend sizes must be positive");
    need(hp.mel_frames_per_token == 2 * hp.downsample_factor, "mel_frames_per_token must be 2 * downsample_factor");
    need(hp.enc_n_embd && hp.enc_n_layer && hp.enc_n_head && hp.enc_head_dim && hp.enc_n_ff, "encoder sizes");
    need(hp.enc_head_dim % 2 == 0 && hp.dec_head_dim % 2 == 0, "head_dim must be even");
    need(hp.enc_sliding_window > 0 && hp.dec_sliding_window > 0, "sliding windows must be positive");
    // the KV rings hold a whole window: refuse sizes that could not be allocated anyway
    need(hp.enc_sliding_window <= (1u << 16), "encoder sliding_window above 65536 is not supported");
    need(hp.dec_sliding_window <= (1u << 17), "decoder sliding_window above 131072 is not supported");
    need(hp.dec_max_position >= 1 + hp.n_left_pad_tokens + 30 + 16, "max_position is too small for the prompt");
    need(hp.dec_n_embd && hp.dec_n_layer && hp.dec_n_head && hp.dec_n_head_kv && hp.dec_head_dim, "decoder sizes");
    need(hp.dec_n_head % hp.dec_n_head_kv == 0, "n_head must be a multiple of n_head_kv");
    need(hp.dec_n_embd % 2 == 0, "decoder n_embd must be even");
    need(hp.dec_n_vocab > 0 && hp.dec_ada_dim > 0 && hp.dec_max_position > 0, "vocab/ada/max_position");
    need(hp.default_num_delay_tokens >= 1, "default delay must be at least one token");
}

void bind_weights(voxtral_model & m) {
    const model_hparams & hp = m.hp;
    model_weights & w = m.w;
    tensor_binder b(m.ctx_w);
    const int64_t E = hp.enc_n_embd, EQ = (int64_t) hp.enc_n_head * hp.enc_head_dim, EF = hp.enc_n_ff;
    const int64_t D = hp.dec_n_embd, DQ = (int64_t) hp.dec_n_head * hp.dec_head_dim;
    const int64_t DKV = (int64_t) hp.dec_n_head_kv * hp.dec_head_dim, DF = hp.dec_n_ff;

    b.get("audio.mel_filters", {hp.n_mel, hp.n_fft / 2 + 1}, true);
    b.get("audio.window", {hp.n_fft}, true);
    w.conv1_w = b.get("enc.conv1.weight", {3, hp.n_mel, E});
    w.conv1_b = b.get("enc.conv1.bias", {E}, true);
    w.conv2_w = b.get("enc.conv2.weight", {3, E, E});
    w.conv2_b = b.get("enc.conv2.bias", {E}, true);
    for (ggml_tensor * t : {w.conv1_w, w.conv2_w}) {
        if (t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16 && t->type != GGML_TYPE_BF16) {
            throw std::runtime_error(std::string("conv weights must be F32, F16 or BF16, found ") +
                                     ggml_type_name(t->type));
        }
    }
    w.enc.resize(hp.enc_n_layer);
    for (uint32_t i = 0; i < hp.enc_n_layer; ++i) {
        const std::string p = "enc.blk." + std::to_string(i) + ".";
        encoder_layer & l = w.enc[i];
        l.attn_norm = b.get(p + "attn_norm.weight", {E}, true);
        l.wq = b.get(p + "attn_q.weight", {E, EQ});
        l.bq = b.get(p + "attn_q.bias", {EQ}, true);
        l.wk = b.get(p + "attn_k.weight", {E, EQ});
        l.wv = b.get(p + "attn_v.weight", {E, EQ});
        l.bv = b.get(p + "attn_v.bias", {EQ}, true);
        l.wo = b.get(p + "attn_out.weight", {EQ, E});
        l.bo = b.get(p + "attn_out.bias", {E}, true);
        l.ffn_norm = b.get(p + "ffn_norm.weight", {E}, true);
        l.w_gate = b.get(p + "ffn_gate.weight", {E, EF});
        l.w_up = b.get(p + "ffn_up.weight", {E, EF});
        l.w_down = b.get(p + "ffn_down.weight", {EF, E});
        l.b_down = b.get(p + "ffn_down.bias", {E}, true);
    }
    w.enc_norm = b.get("enc.norm.weight", {E}, true);
    w.proj_1 = b.get("proj.linear_1.weight", {E * hp.downsample_factor, D});
    w.proj_2 = b.get("proj.linear_2.weight", {D, D});
    w.token_embd = b.get("dec.token_embd.weight", {D, hp.dec_n_vocab});
    w.dec.resize(hp.dec_n_layer);
    for (uint32_t i = 0; i < hp.dec_n_layer; ++i) {
        const std::string p = "dec.blk." + std::to_string(i) + ".";
        decoder_layer & l = w.dec[i];
        l.attn_norm = b.get(p + "attn_norm.weight", {D}, true);
        l.wq = b.get(p + "attn_q.weight", {D, DQ});
        l.wk = b.get(p + "attn_k.weight", {D, DKV});
        l.wv = b.get(p + "attn_v.weight", {D, DKV});
        l.wo = b.get(p + "attn_out.weight", {DQ, D});
        l.ffn_norm = b.get(p + "ffn_norm.weight", {D}, true);
        l.ada_1 = b.get(p + "ada_1.weight", {D, hp.dec_ada_dim}, true);
        l.ada_2 = b.get(p + "ada_2.weight", {hp.dec_ada_dim, D}, true);
        l.w_gate = b.get(p + "ffn_gate.weight", {D, DF});
        l.w_up = b.get(p + "ffn_up.weight", {D, DF});
        l.w_down = b.get(p + "ffn_down.weight", {DF, D});
    }
    w.dec_norm = b.get("dec.norm.weight", {D}, true);

    b.check_all_used("Voxtral Realtime model");
}

void fill_info(voxtral_model & m) {
    const model_hparams & hp = m.hp;
    model_info & info = m.info_;
    info.architecture = model_architecture::MODEL_ARCHITECTURE_VOXTRAL_REALTIME;
    info.variant = "voxtral_realtime";
    info.name = m.name;
    info.sample_rate = (int) hp.sample_rate;
    info.latencies_ms.clear();
    for (int d = 1; d <= 15; ++d) info.latencies_ms.push_back(d * TOKEN_MS);
    info.latencies_ms.push_back(MAX_DELAY_TOKENS * TOKEN_MS);
    info.default_latency_ms = (int) hp.default_num_delay_tokens * TOKEN_MS;
    info.languages.clear(); // Voxtral recognises the language itself
    info.default_language.clear();
    info.punctuation = true;
    info.end_of_utterance = true;
    info.n_vocab = (int) hp.dec_n_vocab;
    std::map<std::string, int64_t> & d = info.dims;
    d["default_delay_tokens"] = hp.default_num_delay_tokens;
    d["default_delay_ms"] = (int64_t) hp.default_num_delay_tokens * TOKEN_MS;
    d["n_left_pad_tokens"] = hp.n_left_pad_tokens;
    d["n_special"] = m.voc.n_special;
    d["bos_id"] = m.voc.bos_id;
    d["eos_id"] = m.voc.eos_id;
    d["streaming_pad_id"] = m.voc.streaming_pad_id;
    d["streaming_word_id"] = m.voc.streaming_word_id;
    d["token_ms"] = TOKEN_MS;
    d["encoder.n_embd"] = hp.enc_n_embd;
    d["encoder.n_layer"] = hp.enc_n_layer;
    d["encoder.n_head"] = hp.enc_n_head;
    d["encoder.head_dim"] = hp.enc_head_dim;
    d["encoder.n_ff"] = hp.enc_n_ff;
    d["encoder.sliding_window"] = hp.enc_sliding_window;
    d["decoder.n_embd"] = hp.dec_n_embd;
    d["decoder.n_layer"] = hp.dec_n_layer;
    d["decoder.n_head"] = hp.dec_n_head;
    d["decoder.n_head_kv"] = hp.dec_n_head_kv;
    d["decoder.head_dim"] = hp.dec_head_dim;
    d["decoder.n_ff"] = hp.dec_n_ff;
    d["decoder.sliding_window"] = hp.dec_sliding_window;
    d["decoder.max_position"] = hp.dec_max_position;
    d["decoder.n_vocab"] = hp.dec_n_vocab;
}

} // namespace

int voxtral_model::delay_tokens_for(int latency_ms) const {
    if (latency_ms == 0) return (int) hp.default_num_delay_tokens;
    for (int l : info_.latencies_ms) {
        if (l == latency_ms) return latency_ms / TOKEN_MS;
    }
    throw std::invalid_argument("latency " + std::to_string(latency_ms) +
                                " ms is not supported by this model (80..1200 ms in steps of 80, or 2400)");
}

std::unique_ptr<stream> voxtral_model::new_stream(const stream_options & opts) const {
    return std::make_unique<voxtral_stream>(std::static_pointer_cast<const voxtral_model>(shared_from_this()),
                                            opts);
}

std::shared_ptr<const model> voxtral_model_load(gguf_file & f, const model_load_options & opts) {
    auto m = std::make_shared<voxtral_model>();
    hparam_reader r(f.gguf);
    m->name = r.has("general.name") ? r.str("general.name") : "";
    read_hparams(r, m->hp);
    m->voc.load(f.gguf, m->hp.dec_n_vocab);
    m->ctx_w = f.release_tensors();
    bind_weights(*m); // every shape is checked before anything is allocated
    weights_load(*m, f, opts);
    m->kv_type = m->w.token_embd->type == GGML_TYPE_F32 ? GGML_TYPE_F32 : GGML_TYPE_F16;
    m->mel_filters = tensor_to_host(ggml_get_tensor(m->ctx_w, "audio.mel_filters"));
    m->window = tensor_to_host(ggml_get_tensor(m->ctx_w, "audio.window"));
    fill_info(*m);
    return m;
}

} // namespace captionist
