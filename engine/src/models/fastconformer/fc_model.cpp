// fc_model.cpp - reads a `fastconformer_rnnt` GGUF (engine/GGUF.md) into an fc_model.
#include "fc_model.h"

#include "fc_stream.h"
#include "gguf_file.h"
#include "hparam_bounds.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace captionist {

namespace {

constexpr uint32_t MAX_LAYERS = 256;
constexpr uint32_t MAX_WIDTH = 1u << 16;
constexpr uint32_t MAX_VOCAB = 1u << 20;
constexpr uint32_t MAX_CONTEXT = 4096;

// Every value the engine cannot run is refused here, naming its key, before anything is allocated
// (ranges: engine/GGUF.md).
void read_hparams(const hparam_reader & r, fc_hparams & hp) {
    hp.sample_rate = hparam_u32_in(r, "fastconformer.audio.sample_rate", 16000, 16000);
    hp.n_fft = hparam_u32_in(r, "fastconformer.audio.n_fft", 16, 8192);
    hp.win_length = hparam_u32_in(r, "fastconformer.audio.win_length", 2, hp.n_fft);
    hparam_require((hp.n_fft - hp.win_length) % 2 == 0, "fastconformer.audio.win_length", hp.win_length,
                   "n_fft - win_length must be even (the window is centred)");
    hp.hop_length = hparam_u32_in(r, "fastconformer.audio.hop_length", 1, hp.n_fft);
    hp.n_mel = hparam_u32_in(r, "fastconformer.audio.n_mel", 1, 1024);
    hp.preemphasis = hparam_f32_in(r, "fastconformer.audio.preemphasis", 0.0f, 0.999f);
    hp.log_guard = hparam_f32_in(r, "fastconformer.audio.log_guard", 1e-20f, 1.0f);

    hp.n_embd = hparam_u32_in(r, "fastconformer.encoder.n_embd", 2, MAX_WIDTH);
    hparam_require(hp.n_embd % 2 == 0, "fastconformer.encoder.n_embd", hp.n_embd, "must be even (sin/cos position pairs)");
    hp.n_layer = hparam_u32_in(r, "fastconformer.encoder.n_layer", 1, MAX_LAYERS);
    hp.n_head = hparam_u32_in(r, "fastconformer.encoder.n_head", 1, hp.n_embd);
    hparam_require(hp.n_embd % hp.n_head == 0, "fastconformer.encoder.n_head", hp.n_head, "must divide n_embd");
    hparam_require(hp.head_dim() % 2 == 0 || hp.n_head == 1, "fastconformer.encoder.n_head", hp.n_head,
                   "n_embd / n_head must be even");
    hp.n_ff = hparam_u32_in(r, "fastconformer.encoder.n_ff", 1, 4 * MAX_WIDTH);
    hp.conv_kernel = hparam_u32_in(r, "fastconformer.encoder.conv_kernel", 1, 255);
    hparam_require(hp.conv_kernel % 2 == 1, "fastconformer.encoder.conv_kernel", hp.conv_kernel, "must be odd");
    const std::string norm = r.str("fastconformer.encoder.conv_norm");
    if (norm == "layer_norm") {
        hp.conv_norm = fc_conv_norm::FC_CONV_NORM_LAYER;
    } else if (norm == "batch_norm") {
        hp.conv_norm = fc_conv_norm::FC_CONV_NORM_BATCH;
    } else {
        throw std::runtime_error("model key 'fastconformer.encoder.conv_norm' = '" + norm +
                                 "' is not layer_norm or batch_norm");
    }
    hp.norm_eps = hparam_f32_in(r, "fastconformer.encoder.norm_eps", 1e-12f, 0.1f);
    hp.xscale = hparam_f32_in(r, "fastconformer.encoder.xscale", 1e-3f, 1e3f);
    hp.sub_factor = hparam_u32_in(r, "fastconformer.encoder.subsampling_factor", 2, 16);
    hparam_require((hp.sub_factor & (hp.sub_factor - 1)) == 0, "fastconformer.encoder.subsampling_factor",
                   hp.sub_factor, "must be 2, 4, 8 or 16");
    hp.sub_channels = hparam_u32_in(r, "fastconformer.encoder.subsampling_channels", 1, 4096);
    hp.sub_kernel = hparam_u32_in(r, "fastconformer.encoder.subsampling_kernel", 3, 3);
    hp.sub_stride = hparam_u32_in(r, "fastconformer.encoder.subsampling_stride", 2, 2);
    hparam_require(hp.sub_freq_out() >= 1, "fastconformer.audio.n_mel", hp.n_mel, "no mel bins left after subsampling");
    hp.left_context = hparam_u32_in(r, "fastconformer.encoder.left_context", 0, MAX_CONTEXT);
    hp.lookaheads = r.u32_array("fastconformer.encoder.lookaheads");
    hparam_require(!hp.lookaheads.empty() && hp.lookaheads.size() <= 16, "fastconformer.encoder.lookaheads",
                   (double) hp.lookaheads.size(), "must list 1 to 16 right contexts");
    for (uint32_t r0 : hp.lookaheads) {
        hparam_require(r0 <= 64, "fastconformer.encoder.lookaheads", r0, "a right context is outside [0, 64]");
    }

    hp.dec_n_embd = hparam_u32_in(r, "fastconformer.decoder.n_embd", 1, MAX_WIDTH);
    hp.dec_n_layer = hparam_u32_in(r, "fastconformer.decoder.n_layer", 1, 16);
    hp.joint_n_embd = hparam_u32_in(r, "fastconformer.joint.n_embd", 1, MAX_WIDTH);
    const std::string act = r.str("fastconformer.joint.activation");
    if (act == "relu") {
        hp.joint_act = fc_activation::FC_ACTIVATION_RELU;
    } else if (act == "tanh") {
        hp.joint_act = fc_activation::FC_ACTIVATION_TANH;
    } else if (act == "sigmoid") {
        hp.joint_act = fc_activation::FC_ACTIVATION_SIGMOID;
    } else {
        throw std::runtime_error("model key 'fastconformer.joint.activation' = '" + act +
                                 "' is not relu, tanh or sigmoid");
    }
    hp.n_vocab = hparam_u32_in(r, "fastconformer.n_vocab", 2, MAX_VOCAB);
    hp.blank_id = hparam_u32_in(r, "fastconformer.blank_id", 0, hp.n_vocab - 1);
    hp.max_symbols = hparam_u32_in(r, "fastconformer.max_symbols_per_step", 1, 100);

    if (r.has("fastconformer.prompt.n_prompts")) {
        hp.n_prompts = hparam_u32_in(r, "fastconformer.prompt.n_prompts", 1, 4096);
        hp.prompt_n_ff = hparam_u32_in(r, "fastconformer.prompt.n_ff", 1, 4 * MAX_WIDTH);
        hp.prompt_default = hparam_u32_in(r, "fastconformer.prompt.default_id", 0, hp.n_prompts - 1);
        hp.prompt_names = r.str_array("fastconformer.prompt.names");
        hp.prompt_ids = r.u32_array("fastconformer.prompt.ids");
        hparam_require(!hp.prompt_names.empty() && hp.prompt_names.size() == hp.prompt_ids.size(),
                       "fastconformer.prompt.names", (double) hp.prompt_names.size(),
                       "names and ids must be non-empty lists of the same length");
        for (uint32_t id : hp.prompt_ids) {
            hparam_require(id < hp.n_prompts, "fastconformer.prompt.ids", id, "a prompt id is not below n_prompts");
        }
    }
}

void bind_weights(fc_model & m) {
    const fc_hparams & hp = m.hp;
    fc_weights & w = m.w;
    tensor_binder b(m.ctx_w);
    const int64_t E = hp.n_embd, FF = hp.n_ff, C = hp.sub_channels, K = hp.sub_kernel;
    const int64_t H = hp.dec_n_embd, J = hp.joint_n_embd, V = hp.n_vocab;

    b.get("audio.mel_filters", {hp.n_mel, hp.n_fft / 2 + 1}, true);
    b.get("audio.window", {hp.win_length}, true);
    w.sub.resize(hp.sub_stages());
    for (uint32_t s = 0; s < hp.sub_stages(); ++s) {
        const std::string p = "enc.sub." + std::to_string(s) + ".";
        fc_sub_stage & st = w.sub[s];
        if (s == 0) {
            st.dw_w = b.get(p + "weight", {K, K, 1, C}, true);
            st.dw_b = b.get(p + "bias", {C}, true);
        } else {
            st.dw_w = b.get(p + "dw.weight", {K, K, 1, C}, true);
            st.dw_b = b.get(p + "dw.bias", {C}, true);
            st.pw_w = b.get(p + "pw.weight", {C, C}, true);
            st.pw_b = b.get(p + "pw.bias", {C}, true);
        }
    }
    w.sub_out_w = b.matrix("enc.sub.out.weight", {C * hp.sub_freq_out(), E});
    w.sub_out_b = b.get("enc.sub.out.bias", {E}, true);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "enc.blk." + std::to_string(il) + ".";
        fc_layer & l = w.layers[il];
        l.ffn1_norm_w = b.get(p + "ffn1_norm.weight", {E}, true);
        l.ffn1_norm_b = b.get(p + "ffn1_norm.bias", {E}, true);
        l.ffn1_up_w = b.matrix(p + "ffn1_up.weight", {E, FF});
        l.ffn1_up_b = b.get(p + "ffn1_up.bias", {FF}, true);
        l.ffn1_down_w = b.matrix(p + "ffn1_down.weight", {FF, E});
        l.ffn1_down_b = b.get(p + "ffn1_down.bias", {E}, true);
        l.attn_norm_w = b.get(p + "attn_norm.weight", {E}, true);
        l.attn_norm_b = b.get(p + "attn_norm.bias", {E}, true);
        l.wq = b.matrix(p + "attn_q.weight", {E, E});
        l.bq = b.get(p + "attn_q.bias", {E}, true);
        l.wk = b.matrix(p + "attn_k.weight", {E, E});
        l.bk = b.get(p + "attn_k.bias", {E}, true);
        l.wv = b.matrix(p + "attn_v.weight", {E, E});
        l.bv = b.get(p + "attn_v.bias", {E}, true);
        l.wo = b.matrix(p + "attn_out.weight", {E, E});
        l.bo = b.get(p + "attn_out.bias", {E}, true);
        l.wpos = b.matrix(p + "attn_pos.weight", {E, E});
        l.pos_bias_u = b.get(p + "attn_pos_bias_u", {hp.head_dim(), hp.n_head}, true);
        l.pos_bias_v = b.get(p + "attn_pos_bias_v", {hp.head_dim(), hp.n_head}, true);
        l.conv_norm_w = b.get(p + "conv_norm.weight", {E}, true);
        l.conv_norm_b = b.get(p + "conv_norm.bias", {E}, true);
        l.conv_pw1_w = b.matrix(p + "conv_pw1.weight", {E, 2 * E});
        l.conv_pw1_b = b.get(p + "conv_pw1.bias", {2 * E}, true);
        l.conv_dw_w = b.get(p + "conv_dw.weight", {hp.conv_kernel, E}, true);
        l.conv_dw_b = b.get(p + "conv_dw.bias", {E}, true);
        l.conv_dw_norm_w = b.get(p + "conv_dw_norm.weight", {E}, true);
        l.conv_dw_norm_b = b.get(p + "conv_dw_norm.bias", {E}, true);
        l.conv_pw2_w = b.matrix(p + "conv_pw2.weight", {E, E});
        l.conv_pw2_b = b.get(p + "conv_pw2.bias", {E}, true);
        l.ffn2_norm_w = b.get(p + "ffn2_norm.weight", {E}, true);
        l.ffn2_norm_b = b.get(p + "ffn2_norm.bias", {E}, true);
        l.ffn2_up_w = b.matrix(p + "ffn2_up.weight", {E, FF});
        l.ffn2_up_b = b.get(p + "ffn2_up.bias", {FF}, true);
        l.ffn2_down_w = b.matrix(p + "ffn2_down.weight", {FF, E});
        l.ffn2_down_b = b.get(p + "ffn2_down.bias", {E}, true);
        l.out_norm_w = b.get(p + "out_norm.weight", {E}, true);
        l.out_norm_b = b.get(p + "out_norm.bias", {E}, true);
    }
    if (hp.n_prompts > 0) {
        w.prompt_fc1_w = b.matrix("prompt.fc1.weight", {E, hp.prompt_n_ff});
        w.prompt_fc1_lang = b.get("prompt.fc1_lang.weight", {hp.prompt_n_ff, hp.n_prompts}, true);
        w.prompt_fc1_b = b.get("prompt.fc1.bias", {hp.prompt_n_ff}, true);
        w.prompt_fc2_w = b.matrix("prompt.fc2.weight", {hp.prompt_n_ff, E});
        w.prompt_fc2_b = b.get("prompt.fc2.bias", {E}, true);
    }
    w.enc_proj_w = b.matrix("enc.proj.weight", {E, J});
    w.enc_proj_b = b.get("enc.proj.bias", {J}, true);
    w.dec_embd = b.get("dec.embd.weight", {H, V});
    w.lstm.resize(hp.dec_n_layer);
    for (uint32_t il = 0; il < hp.dec_n_layer; ++il) {
        const std::string p = "dec.lstm." + std::to_string(il) + ".";
        fc_lstm_layer & l = w.lstm[il];
        l.w_ih = b.matrix(p + "w_ih", {H, 4 * H});
        l.w_hh = b.matrix(p + "w_hh", {H, 4 * H});
        l.b_ih = b.get(p + "b_ih", {4 * H}, true);
        l.b_hh = b.get(p + "b_hh", {4 * H}, true);
    }
    w.dec_proj_w = b.matrix("dec.proj.weight", {H, J});
    w.dec_proj_b = b.get("dec.proj.bias", {J}, true);
    w.joint_out_w = b.matrix("joint.out.weight", {J, V});
    w.joint_out_b = b.get("joint.out.bias", {V}, true);
    b.check_all_used("FastConformer RNN-T model");
    m.matrices = b.matrices();
}

void fill_info(fc_model & m, const std::string & variant, const std::string & name) {
    const fc_hparams & hp = m.hp;
    model_info & info = m.info_;
    info.architecture = model_architecture::MODEL_ARCHITECTURE_FASTCONFORMER_RNNT;
    info.variant = variant;
    info.name = name;
    info.sample_rate = (int) hp.sample_rate;
    info.latencies_ms.clear();
    for (uint32_t r0 : hp.lookaheads) info.latencies_ms.push_back(m.latency_ms_of(r0));
    std::sort(info.latencies_ms.begin(), info.latencies_ms.end());
    info.latencies_ms.erase(std::unique(info.latencies_ms.begin(), info.latencies_ms.end()), info.latencies_ms.end());
    info.default_latency_ms = m.latency_ms_of(hp.lookaheads[0]);
    info.languages.clear();
    info.default_language.clear();
    for (size_t i = 0; i < hp.prompt_names.size(); ++i) {
        info.languages.push_back(hp.prompt_names[i]);
        if (hp.prompt_ids[i] == hp.prompt_default && info.default_language.empty()) {
            info.default_language = hp.prompt_names[i];
        }
    }
    if (!info.languages.empty() && info.default_language.empty()) info.default_language = info.languages[0];
    info.punctuation = variant != "parakeet_eou";
    info.end_of_utterance = m.voc.eou_id >= 0;
    info.n_vocab = (int) hp.n_vocab;
    std::map<std::string, int64_t> & d = info.dims;
    d["token_ms"] = hp.frame_ms();
    d["blank_id"] = hp.blank_id;
    d["eou_id"] = m.voc.eou_id;
    d["eob_id"] = m.voc.eob_id;
    d["encoder.n_embd"] = hp.n_embd;
    d["encoder.n_layer"] = hp.n_layer;
    d["encoder.n_head"] = hp.n_head;
    d["encoder.n_ff"] = hp.n_ff;
    d["encoder.conv_kernel"] = hp.conv_kernel;
    d["encoder.left_context"] = hp.left_context;
    d["encoder.subsampling_factor"] = hp.sub_factor;
    d["encoder.subsampling_channels"] = hp.sub_channels;
    d["decoder.n_embd"] = hp.dec_n_embd;
    d["decoder.n_layer"] = hp.dec_n_layer;
    d["joint.n_embd"] = hp.joint_n_embd;
    if (hp.n_prompts > 0) d["prompt.n_prompts"] = hp.n_prompts;
}

} // namespace

uint32_t fc_hparams::sub_stages() const {
    uint32_t n = 0;
    for (uint32_t f = sub_factor; f > 1; f /= 2) ++n;
    return n;
}

int64_t fc_hparams::sub_stage_length(int64_t len) const {
    return (len + (int64_t) (sub_kernel - 1) + (int64_t) (sub_stride - 1) - (int64_t) sub_kernel) / sub_stride + 1;
}

uint32_t fc_hparams::sub_freq_out() const {
    int64_t f = n_mel;
    for (uint32_t s = 0; s < sub_stages(); ++s) f = sub_stage_length(f);
    return (uint32_t) f;
}

uint32_t fc_model::lookahead_for(int latency_ms) const {
    if (latency_ms == 0) return hp.lookaheads[0];
    for (uint32_t r0 : hp.lookaheads) {
        if (latency_ms_of(r0) == latency_ms) return r0;
    }
    std::string allowed;
    for (int l : info_.latencies_ms) allowed += (allowed.empty() ? "" : ", ") + std::to_string(l);
    throw std::invalid_argument("latency " + std::to_string(latency_ms) + " ms is not supported by this model (" +
                                allowed + " ms)");
}

int32_t fc_model::prompt_for(const std::string & language) const {
    if (hp.n_prompts == 0) {
        if (!language.empty()) {
            throw std::invalid_argument("this model has no language choice (got '" + language + "')");
        }
        return -1;
    }
    if (language.empty()) return (int32_t) hp.prompt_default;
    for (size_t i = 0; i < hp.prompt_names.size(); ++i) {
        if (hp.prompt_names[i] == language) return (int32_t) hp.prompt_ids[i];
    }
    throw std::invalid_argument("unknown language '" + language + "' for this model");
}

std::unique_ptr<stream> fc_model::new_stream(const stream_options & opts) const {
    return std::make_unique<fc_stream>(std::static_pointer_cast<const fc_model>(shared_from_this()), opts);
}

namespace {

std::string read_variant(const hparam_reader & r) {
    const std::string variant = r.str("fastconformer.variant");
    if (variant != "nemotron_asr_streaming" && variant != "nemotron3_5_asr" && variant != "parakeet_eou") {
        throw std::runtime_error("unknown FastConformer variant '" + variant + "'");
    }
    return variant;
}

} // namespace

void fc_metadata_check(const hparam_reader & r) {
    read_variant(r);
    fc_hparams hp;
    read_hparams(r, hp);
    fc_vocab voc;
    voc.load(r.context(), hp.n_vocab, hp.blank_id);
}

std::shared_ptr<const model> fc_model_load(gguf_file & f, const model_load_options & opts) {
    auto m = std::make_shared<fc_model>();
    hparam_reader r(f.gguf);
    const std::string name = r.has("general.name") ? r.str("general.name") : "";
    const std::string variant = read_variant(r);
    read_hparams(r, m->hp);
    hparam_check_layers(f.gguf, "fastconformer.encoder.n_layer", m->hp.n_layer, "enc.blk.", "attn_norm.weight");
    hparam_check_layers(f.gguf, "fastconformer.decoder.n_layer", m->hp.dec_n_layer, "dec.lstm.", "w_ih");
    m->voc.load(f.gguf, m->hp.n_vocab, m->hp.blank_id);
    m->ctx_w = f.release_tensors();
    bind_weights(*m); // every shape is checked before anything is allocated
    weights_load(*m, f, opts);
    m->kv_type = m->w.layers[0].wk->type == GGML_TYPE_F32 ? GGML_TYPE_F32 : GGML_TYPE_F16;
    m->info_.kv_cache_type = ggml_type_name(m->kv_type); // relative-position attention: no flash kernel takes its bias
    m->mel_filters = tensor_to_host(ggml_get_tensor(m->ctx_w, "audio.mel_filters"));
    m->window = tensor_to_host(ggml_get_tensor(m->ctx_w, "audio.window"));
    fill_info(*m, variant, name);
    return m;
}

} // namespace captionist
