// voxtral_model.cpp - reads a `voxtral_realtime` GGUF (engine/GGUF.md) into a voxtral_model.
#include "voxtral_model.h"

#include "gguf_file.h"
#include "graph_attention.h"
#include "hparam_bounds.h"
#include "voxtral_stream.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace captionist {

namespace {

constexpr int TOKEN_MS = 80;
constexpr uint32_t MAX_DELAY_TOKENS = 30; // 2400 ms

constexpr uint32_t MAX_LAYERS = 256;
constexpr uint32_t MAX_WIDTH = 1u << 16;
constexpr uint32_t MAX_HEADS = 1024;
constexpr uint32_t MAX_PAD_TOKENS = 256;
constexpr float MAX_THETA = 1e10f;

// Every value the engine cannot run is refused here, naming its key (ranges: engine/GGUF.md).
void read_hparams(const hparam_reader & r, model_hparams & hp) {
    hp.sample_rate = hparam_u32_in(r, "voxtral.audio.sample_rate", 16000, 16000);
    hp.n_fft = hparam_u32_in(r, "voxtral.audio.n_fft", 16, 8192);
    hp.hop_length = hparam_u32_in(r, "voxtral.audio.hop_length", 1, hp.n_fft);
    hp.n_mel = hparam_u32_in(r, "voxtral.audio.n_mel", 1, 1024);
    hp.global_log_mel_max = hparam_f32_in(r, "voxtral.audio.global_log_mel_max", 0.0f, 20.0f);
    hp.mel_frames_per_token = hparam_u32_in(r, "voxtral.audio.mel_frames_per_token", 2, 32);
    hp.downsample_factor = hparam_u32_in(r, "voxtral.audio.downsample_factor", 1, 16);
    hparam_require(hp.mel_frames_per_token == 2 * hp.downsample_factor, "voxtral.audio.mel_frames_per_token",
                   hp.mel_frames_per_token, "must be 2 * downsample_factor (the conv stem halves the mel frames)");
    hp.n_left_pad_tokens = hparam_u32_in(r, "voxtral.audio.n_left_pad_tokens", 0, MAX_PAD_TOKENS);
    hp.n_right_pad_extra_tokens = hparam_u32_in(r, "voxtral.audio.n_right_pad_extra_tokens", 0, MAX_PAD_TOKENS);
    hp.default_num_delay_tokens = hparam_u32_in(r, "voxtral.default_num_delay_tokens", 1, MAX_DELAY_TOKENS);
    hp.time_embedding_theta = hparam_f32_in(r, "voxtral.time_embedding_theta", 1.0f, MAX_THETA);

    hp.enc_n_embd = hparam_u32_in(r, "voxtral.encoder.n_embd", 1, MAX_WIDTH);
    hp.enc_n_layer = hparam_u32_in(r, "voxtral.encoder.n_layer", 1, MAX_LAYERS);
    hp.enc_n_head = hparam_u32_in(r, "voxtral.encoder.n_head", 1, MAX_HEADS);
    hp.enc_head_dim = hparam_u32_in(r, "voxtral.encoder.head_dim", 2, 1024);
    hparam_require(hp.enc_head_dim % 2 == 0, "voxtral.encoder.head_dim", hp.enc_head_dim, "must be even (RoPE pairs)");
    hp.enc_n_ff = hparam_u32_in(r, "voxtral.encoder.n_ff", 1, 4 * MAX_WIDTH);
    hp.enc_rms_eps = hparam_f32_in(r, "voxtral.encoder.rms_eps", 1e-12f, 0.1f);
    hp.enc_rope_theta = hparam_f32_in(r, "voxtral.encoder.rope_theta", 1.0f, MAX_THETA);
    // the KV rings hold a whole window: refuse sizes that could not be allocated anyway
    hp.enc_sliding_window = hparam_u32_in(r, "voxtral.encoder.sliding_window", 1, 1u << 16);

    hp.dec_n_embd = hparam_u32_in(r, "voxtral.decoder.n_embd", 2, MAX_WIDTH);
    hparam_require(hp.dec_n_embd % 2 == 0, "voxtral.decoder.n_embd", hp.dec_n_embd,
                   "must be even (sin/cos time embedding)");
    hp.dec_n_layer = hparam_u32_in(r, "voxtral.decoder.n_layer", 1, MAX_LAYERS);
    hp.dec_n_head = hparam_u32_in(r, "voxtral.decoder.n_head", 1, MAX_HEADS);
    hp.dec_n_head_kv = hparam_u32_in(r, "voxtral.decoder.n_head_kv", 1, hp.dec_n_head);
    hparam_require(hp.dec_n_head % hp.dec_n_head_kv == 0, "voxtral.decoder.n_head_kv", hp.dec_n_head_kv,
                   "must divide n_head (" + std::to_string(hp.dec_n_head) + ")");
    hp.dec_head_dim = hparam_u32_in(r, "voxtral.decoder.head_dim", 2, 1024);
    hparam_require(hp.dec_head_dim % 2 == 0, "voxtral.decoder.head_dim", hp.dec_head_dim, "must be even (RoPE pairs)");
    hp.dec_n_ff = hparam_u32_in(r, "voxtral.decoder.n_ff", 1, 4 * MAX_WIDTH);
    hp.dec_rms_eps = hparam_f32_in(r, "voxtral.decoder.rms_eps", 1e-12f, 0.1f);
    hp.dec_rope_theta = hparam_f32_in(r, "voxtral.decoder.rope_theta", 1.0f, MAX_THETA);
    hp.dec_sliding_window = hparam_u32_in(r, "voxtral.decoder.sliding_window", 1, 1u << 17);
    // the prompt (BOS, left pad, the longest delay) and 16 tokens of speech must fit before a re-anchor
    hp.dec_max_position = hparam_u32_in(r, "voxtral.decoder.max_position",
                                        1 + hp.n_left_pad_tokens + MAX_DELAY_TOKENS + 16, 1u << 24);
    hp.dec_n_vocab = hparam_u32_in(r, "voxtral.decoder.n_vocab", 2, 1u << 20);
    hp.dec_ada_dim = hparam_u32_in(r, "voxtral.decoder.ada_dim", 1, 4096);
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
        l.wq = b.matrix(p + "attn_q.weight", {E, EQ});
        l.bq = b.get(p + "attn_q.bias", {EQ}, true);
        l.wk = b.matrix(p + "attn_k.weight", {E, EQ});
        l.wv = b.matrix(p + "attn_v.weight", {E, EQ});
        l.bv = b.get(p + "attn_v.bias", {EQ}, true);
        l.wo = b.matrix(p + "attn_out.weight", {EQ, E});
        l.bo = b.get(p + "attn_out.bias", {E}, true);
        l.ffn_norm = b.get(p + "ffn_norm.weight", {E}, true);
        l.w_gate = b.matrix(p + "ffn_gate.weight", {E, EF});
        l.w_up = b.matrix(p + "ffn_up.weight", {E, EF});
        l.w_down = b.matrix(p + "ffn_down.weight", {EF, E});
        l.b_down = b.get(p + "ffn_down.bias", {E}, true);
    }
    w.enc_norm = b.get("enc.norm.weight", {E}, true);
    w.proj_1 = b.matrix("proj.linear_1.weight", {E * hp.downsample_factor, D});
    w.proj_2 = b.matrix("proj.linear_2.weight", {D, D});
    w.token_embd = b.get("dec.token_embd.weight", {D, hp.dec_n_vocab});
    w.dec.resize(hp.dec_n_layer);
    for (uint32_t i = 0; i < hp.dec_n_layer; ++i) {
        const std::string p = "dec.blk." + std::to_string(i) + ".";
        decoder_layer & l = w.dec[i];
        l.attn_norm = b.get(p + "attn_norm.weight", {D}, true);
        l.wq = b.matrix(p + "attn_q.weight", {D, DQ});
        l.wk = b.matrix(p + "attn_k.weight", {D, DKV});
        l.wv = b.matrix(p + "attn_v.weight", {D, DKV});
        l.wo = b.matrix(p + "attn_out.weight", {DQ, D});
        l.ffn_norm = b.get(p + "ffn_norm.weight", {D}, true);
        l.ada_1 = b.get(p + "ada_1.weight", {D, hp.dec_ada_dim}, true);
        l.ada_2 = b.get(p + "ada_2.weight", {hp.dec_ada_dim, D}, true);
        l.w_gate = b.matrix(p + "ffn_gate.weight", {D, DF});
        l.w_up = b.matrix(p + "ffn_up.weight", {D, DF});
        l.w_down = b.matrix(p + "ffn_down.weight", {DF, D});
    }
    w.dec_norm = b.get("dec.norm.weight", {D}, true);

    b.check_all_used("Voxtral Realtime model");
    m.matrices = b.matrices();
    // the head is tied to the embedding: its products may get a repacked twin (weights_load)
    request_product_twin(m, w.token_embd, &w.head);
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
    info.latencies_ms.push_back((int) MAX_DELAY_TOKENS * TOKEN_MS);
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

void voxtral_metadata_check(const hparam_reader & r) {
    model_hparams hp;
    read_hparams(r, hp);
    tekken_vocab voc;
    voc.load(r.context(), hp.dec_n_vocab);
}

std::shared_ptr<const model> voxtral_model_load(gguf_file & f, const model_load_options & opts) {
    auto m = std::make_shared<voxtral_model>();
    hparam_reader r(f.gguf);
    m->name = r.has("general.name") ? r.str("general.name") : "";
    read_hparams(r, m->hp);
    hparam_check_layers(f.gguf, "voxtral.encoder.n_layer", m->hp.enc_n_layer, "enc.blk.", "attn_norm.weight");
    hparam_check_layers(f.gguf, "voxtral.decoder.n_layer", m->hp.dec_n_layer, "dec.blk.", "attn_norm.weight");
    m->voc.load(f.gguf, m->hp.dec_n_vocab);
    m->ctx_w = f.release_tensors();
    bind_weights(*m); // every shape is checked before anything is allocated
    weights_load(*m, f, opts);
    const attention_choice ac = choose_attention(m->device, (int) m->hp.dec_head_dim, (int) m->hp.dec_n_head,
                                                 (int) m->hp.dec_n_head_kv,
                                                 m->w.token_embd->type == GGML_TYPE_F32 ? GGML_TYPE_F32 : GGML_TYPE_F16);
    m->kv_type = ac.kv_type;
    m->flash_attn = ac.flash;
    const model_hparams & hp = m->hp;
    m->encoder_batch_flash = !ac.flash && choose_attention(m->device, (int) hp.enc_head_dim, (int) hp.enc_n_head,
                                                           (int) hp.enc_n_head, ac.kv_type)
                                              .batch_flash;
    m->info_.batch_flash_attention = m->encoder_batch_flash;
    m->info_.flash_attention = ac.flash;
    m->info_.kv_cache_type = ggml_type_name(ac.kv_type);
    m->mel_filters = tensor_to_host(ggml_get_tensor(m->ctx_w, "audio.mel_filters"));
    m->window = tensor_to_host(ggml_get_tensor(m->ctx_w, "audio.window"));
    fill_info(*m);
    return m;
}

} // namespace captionist
