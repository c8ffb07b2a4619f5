// model_loader.cpp - reads a Captionist GGUF (engine/GGUF.md) into a backend buffer.
#include "model.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <gguf.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace captionist {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return (char) std::tolower(c); });
    return s;
}

// ggml prints through this. Every failure reaches the caller as an exception with its own
// message, so ggml's lines are shown only when CAPTIONIST_GGML_LOG is set (for debugging).
void log_callback(ggml_log_level level, const char * text, void *) {
    static const bool enabled = std::getenv("CAPTIONIST_GGML_LOG") != nullptr;
    if (enabled && level != GGML_LOG_LEVEL_DEBUG) {
        fputs(text, stderr);
    }
}

void backend_init_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        ggml_log_set(log_callback, nullptr);
        ggml_backend_load_all();
    });
}

struct gguf_guard {
    gguf_context * ctx = nullptr;
    ~gguf_guard() {
        if (ctx) gguf_free(ctx);
    }
};

class hparam_reader {
public:
    explicit hparam_reader(const gguf_context * ctx) : ctx_(ctx) {}

    uint32_t u32(const char * key) const {
        const int64_t id = find(key);
        if (gguf_get_kv_type(ctx_, id) != GGUF_TYPE_UINT32) {
            throw std::runtime_error(std::string("model key '") + key + "' must be a u32");
        }
        return gguf_get_val_u32(ctx_, id);
    }
    float f32(const char * key) const {
        const int64_t id = find(key);
        if (gguf_get_kv_type(ctx_, id) != GGUF_TYPE_FLOAT32) {
            throw std::runtime_error(std::string("model key '") + key + "' must be a f32");
        }
        return gguf_get_val_f32(ctx_, id);
    }
    std::string str(const char * key) const {
        const int64_t id = find(key);
        if (gguf_get_kv_type(ctx_, id) != GGUF_TYPE_STRING) {
            throw std::runtime_error(std::string("model key '") + key + "' must be a string");
        }
        return gguf_get_val_str(ctx_, id);
    }
    bool has(const char * key) const { return gguf_find_key(ctx_, key) >= 0; }

private:
    int64_t find(const char * key) const {
        const int64_t id = gguf_find_key(ctx_, key);
        if (id < 0) {
            throw std::runtime_error(std::string("model file is missing the key '") + key + "'");
        }
        return id;
    }
    const gguf_context * ctx_;
};

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

class tensor_binder {
public:
    tensor_binder(ggml_context * ctx) : ctx_(ctx) {}

    // Looks up `name`, checks its shape (ggml order) and, if `f32_only`, its type.
    ggml_tensor * get(const std::string & name, std::vector<int64_t> shape, bool f32_only = false) {
        ggml_tensor * t = ggml_get_tensor(ctx_, name.c_str());
        if (!t) {
            throw std::runtime_error("model file is missing the tensor '" + name + "'");
        }
        bool ok = ggml_n_dims(t) <= (int) shape.size();
        for (size_t i = 0; ok && i < 4; ++i) {
            const int64_t want = i < shape.size() ? shape[i] : 1;
            ok = t->ne[i] == want;
        }
        if (!ok) {
            std::string want = "[", got = "[";
            for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
            for (int i = 0; i < ggml_n_dims(t); ++i) got += (i ? ", " : "") + std::to_string(t->ne[i]);
            throw std::runtime_error("tensor '" + name + "' has shape " + got + "] but the hyper-parameters need " +
                                     want + "]");
        }
        if (f32_only && t->type != GGML_TYPE_F32) {
            throw std::runtime_error("tensor '" + name + "' must be F32, found " + ggml_type_name(t->type));
        }
        used_.insert(name);
        return t;
    }
    size_t n_used() const { return used_.size(); }

private:
    ggml_context * ctx_;
    std::set<std::string> used_;
};

void bind_weights(model & m) {
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

    int64_t n_total = 0;
    for (ggml_tensor * t = ggml_get_first_tensor(m.ctx_w); t; t = ggml_get_next_tensor(m.ctx_w, t)) ++n_total;
    if ((size_t) n_total != b.n_used()) {
        throw std::runtime_error("model file has " + std::to_string(n_total - (int64_t) b.n_used()) +
                                 " unexpected tensors (not a Voxtral Realtime model of these dimensions?)");
    }
}

ggml_backend_dev_t pick_device(const std::string & want) {
    const std::string w = lower(want);
    std::string available;
    ggml_backend_dev_t cpu = nullptr, gpu = nullptr, named = nullptr;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        const std::string name = ggml_backend_dev_name(d);
        available += (available.empty() ? "" : ", ") + name;
        const auto type = ggml_backend_dev_type(d);
        if (type == GGML_BACKEND_DEVICE_TYPE_CPU && !cpu) cpu = d;
        if ((type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU) && !gpu) gpu = d;
        if (!named && (w == "metal" || w == "cuda") && lower(name).rfind(w, 0) == 0) named = d;
    }
    if (w == "auto") {
        if (gpu) return gpu;
        if (cpu) return cpu;
    } else if (w == "cpu") {
        if (cpu) return cpu;
    } else if (w == "metal" || w == "cuda") {
        if (named) return named;
        throw std::runtime_error("backend '" + want + "' is not available in this ggml build (available: " +
                                 available + ")");
    } else {
        throw std::runtime_error("unknown backend '" + want + "' (use auto, cpu, metal or cuda)");
    }
    throw std::runtime_error("no usable ggml device found (available: " + available + ")");
}

void read_tensor_data(model & m, const gguf_context * g, const std::string & path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        throw std::runtime_error("cannot open model file '" + path + "'");
    }
    const size_t data_offset = gguf_get_data_offset(g);
    std::vector<char> staging;
    const bool host = ggml_backend_buffer_is_host(m.buf_w);
    for (ggml_tensor * t = ggml_get_first_tensor(m.ctx_w); t; t = ggml_get_next_tensor(m.ctx_w, t)) {
        const int64_t tid = gguf_find_tensor(g, ggml_get_name(t));
        const size_t offs = data_offset + gguf_get_tensor_offset(g, tid);
        const size_t nbytes = ggml_nbytes(t);
        f.seekg((std::streamoff) offs);
        if (host) {
            f.read((char *) t->data, (std::streamsize) nbytes);
        } else {
            staging.resize(nbytes);
            f.read(staging.data(), (std::streamsize) nbytes);
            if (f) ggml_backend_tensor_set(t, staging.data(), 0, nbytes);
        }
        if (!f) {
            throw std::runtime_error("model file '" + path + "' is truncated (tensor '" + ggml_get_name(t) + "')");
        }
    }
}

} // namespace

model::~model() {
    if (buf_w) ggml_backend_buffer_free(buf_w);
    if (ctx_w) ggml_free(ctx_w);
}

int cpu_physical_cores() {
#if defined(__APPLE__)
    int n = 0;
    size_t len = sizeof(n);
    if (sysctlbyname("hw.perflevel0.physicalcpu", &n, &len, nullptr, 0) == 0 && n > 0) return n;
    if (sysctlbyname("hw.physicalcpu", &n, &len, nullptr, 0) == 0 && n > 0) return n;
#elif defined(__linux__)
    std::ifstream f("/proc/cpuinfo");
    std::set<std::string> cores;
    std::string line, phys;
    while (std::getline(f, line)) {
        if (line.rfind("physical id", 0) == 0) phys = line.substr(line.find(':') + 1);
        if (line.rfind("core id", 0) == 0) cores.insert(phys + "/" + line.substr(line.find(':') + 1));
    }
    if (!cores.empty()) return (int) cores.size();
#endif
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? (int) n : 1;
}

std::shared_ptr<const model> model_load(const std::string & path, const model_load_options & opts) {
    backend_init_once();
    {
        std::ifstream probe(path, std::ios::binary);
        if (!probe) {
            throw std::runtime_error("cannot open model file '" + path + "'");
        }
        char magic[4] = {0, 0, 0, 0};
        probe.read(magic, 4);
        if (!probe || std::string(magic, 4) != "GGUF") {
            throw std::runtime_error("'" + path + "' is not a GGUF model file");
        }
    }
    auto m = std::make_shared<model>();
    m->path = path;

    gguf_guard g;
    gguf_init_params params = {/*no_alloc =*/true, /*ctx =*/&m->ctx_w};
    g.ctx = gguf_init_from_file(path.c_str(), params);
    if (!g.ctx) {
        throw std::runtime_error("'" + path + "' is not a readable GGUF file (corrupt or truncated header)");
    }
    {
        std::ifstream f(path, std::ios::binary | std::ios::ate);
        const uint64_t file_size = (uint64_t) f.tellg();
        const uint64_t data_offset = gguf_get_data_offset(g.ctx);
        for (int64_t i = 0; i < gguf_get_n_tensors(g.ctx); ++i) {
            const uint64_t end = data_offset + gguf_get_tensor_offset(g.ctx, i) + gguf_get_tensor_size(g.ctx, i);
            if (end > file_size) {
                throw std::runtime_error("model file '" + path + "' is truncated: tensor '" +
                                         gguf_get_tensor_name(g.ctx, i) + "' ends at byte " + std::to_string(end) +
                                         " but the file has " + std::to_string(file_size));
            }
        }
    }
    hparam_reader r(g.ctx);
    const std::string arch = r.has("general.architecture") ? r.str("general.architecture") : "";
    if (arch != "voxtral_realtime") {
        throw std::runtime_error("'" + path + "' holds architecture '" + arch +
                                 "', but Captionist needs a 'voxtral_realtime' model");
    }
    m->name = r.has("general.name") ? r.str("general.name") : "";
    read_hparams(r, m->hp);
    m->voc.load(g.ctx, m->hp.dec_n_vocab);
    bind_weights(*m);

    m->device = pick_device(opts.backend);
    m->backend_name = ggml_backend_dev_name(m->device);
    m->n_threads = opts.n_threads > 0 ? opts.n_threads : cpu_physical_cores();
    m->kv_type = m->w.token_embd->type == GGML_TYPE_F32 ? GGML_TYPE_F32 : GGML_TYPE_F16;

    m->buf_w = ggml_backend_alloc_ctx_tensors_from_buft(m->ctx_w, ggml_backend_dev_buffer_type(m->device));
    if (!m->buf_w) {
        throw std::runtime_error("not enough memory on " + m->backend_name + " for the model weights");
    }
    ggml_backend_buffer_set_usage(m->buf_w, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    m->weight_bytes = ggml_backend_buffer_get_size(m->buf_w);
    read_tensor_data(*m, g.ctx, path);

    ggml_tensor * fb = ggml_get_tensor(m->ctx_w, "audio.mel_filters");
    ggml_tensor * win = ggml_get_tensor(m->ctx_w, "audio.window");
    m->mel_filters.resize(ggml_nelements(fb));
    m->window.resize(ggml_nelements(win));
    ggml_backend_tensor_get(fb, m->mel_filters.data(), 0, ggml_nbytes(fb));
    ggml_backend_tensor_get(win, m->window.data(), 0, ggml_nbytes(win));
    return m;
}

} // namespace captionist
