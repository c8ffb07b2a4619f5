#include "quantize.h"

#include <captionist/engine.h>

#include <ggml.h>
#include <gguf.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace captionist {

namespace {

struct quant_plan {
    ggml_type base;
    bool mixed; // *_M: a few sensitive tensors at Q6_K
};

quant_plan parse_type(const std::string & name) {
    if (name == "Q8_0") return {GGML_TYPE_Q8_0, false};
    if (name == "Q5_K") return {GGML_TYPE_Q5_K, false};
    if (name == "Q4_K") return {GGML_TYPE_Q4_K, false};
    if (name == "Q6_K") return {GGML_TYPE_Q6_K, false};
    if (name == "F16") return {GGML_TYPE_F16, false};
    if (name == "Q4_K_M") return {GGML_TYPE_Q4_K, true};
    if (name == "Q5_K_M") return {GGML_TYPE_Q5_K, true};
    throw std::invalid_argument("unknown quantization type '" + name +
                                "' (use Q8_0, Q5_K, Q4_K, Q6_K, F16, Q4_K_M or Q5_K_M)");
}

// llama.cpp's rule for which layers get more bits in *_M mixes.
bool use_more_bits(int i, int n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

// Layer index of "enc.blk.N.*" / "dec.blk.N.*", -1 for other tensors.
int layer_of(const std::string & name) {
    const size_t p = name.find(".blk.");
    return p == std::string::npos ? -1 : std::atoi(name.c_str() + p + 5);
}

bool ends_with(const std::string & s, const std::string & tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Voxtral: the linear layers and the token embedding. The conv stem and the ada-norm stay as they
// are (small, and the conv kernels feed im2col in F32).
bool voxtral_is_matrix_to_quantize(const std::string & name) {
    if (name.rfind("audio.", 0) == 0) return false;
    if (name.find("conv") != std::string::npos) return false;
    if (name.find("ada_") != std::string::npos) return false;
    return ends_with(name, ".weight");
}

// FastConformer: every linear layer (feed-forward, attention, pointwise convs, projections, LSTM,
// joint, embedding). The subsampling convolutions, the depthwise kernels, the language table and the
// frontend stay F32 (engine/GGUF.md): they are small and the engine reads them as F32.
bool fastconformer_is_matrix_to_quantize(const std::string & name) {
    if (name.rfind("audio.", 0) == 0) return false;
    if (name.rfind("enc.sub.", 0) == 0) return name == "enc.sub.out.weight";
    if (ends_with(name, ".conv_dw.weight") || name == "prompt.fc1_lang.weight") return false;
    return ends_with(name, ".weight") || ends_with(name, ".w_ih") || ends_with(name, ".w_hh");
}

bool is_matrix_to_quantize(model_architecture arch, const std::string & name, const ggml_tensor * t) {
    if (ggml_n_dims(t) < 2) return false;
    return arch == model_architecture::MODEL_ARCHITECTURE_VOXTRAL_REALTIME ? voxtral_is_matrix_to_quantize(name)
                                                                          : fastconformer_is_matrix_to_quantize(name);
}

ggml_type fit_type(ggml_type want, int64_t row) {
    for (ggml_type t : {want, GGML_TYPE_Q8_0, GGML_TYPE_F16}) {
        if (row % ggml_blck_size(t) == 0) return t;
    }
    return GGML_TYPE_F32;
}

ggml_type choose_type(model_architecture arch, const std::string & name, const ggml_tensor * t, const quant_plan & plan,
                      int64_t enc_layers, int64_t dec_layers) {
    if (!is_matrix_to_quantize(arch, name, t)) return t->type;
    ggml_type want = plan.base;
    if (plan.mixed) {
        const int il = layer_of(name);
        const int n = (int) (name.rfind("enc.", 0) == 0 ? enc_layers : dec_layers);
        const bool down = name.find("ffn_down.weight") != std::string::npos ||
                          name.find("ffn1_down.weight") != std::string::npos ||
                          name.find("ffn2_down.weight") != std::string::npos;
        if (name == "dec.token_embd.weight" || name.find("attn_v.weight") != std::string::npos) {
            want = GGML_TYPE_Q6_K;
        } else if (down && il >= 0 && use_more_bits(il, n)) {
            want = GGML_TYPE_Q6_K;
        }
    }
    return fit_type(want, t->ne[0]);
}

void to_f32(const ggml_tensor * t, const void * src, float * dst, int64_t n) {
    if (t->type == GGML_TYPE_F32) {
        std::copy((const float *) src, (const float *) src + n, dst);
        return;
    }
    const ggml_type_traits * tr = ggml_get_type_traits(t->type);
    if (!tr->to_float) throw std::runtime_error(std::string("cannot read tensors of type ") + ggml_type_name(t->type));
    tr->to_float(src, dst, n);
}

struct file_remover {
    std::string path;
    bool armed = true;
    ~file_remover() {
        if (armed) std::remove(path.c_str());
    }
};

} // namespace

void quantize_model(const std::string & src, const std::string & dst, const std::string & type_name, int n_threads,
                    const std::function<void(size_t, size_t)> & progress) {
    const quant_plan plan = parse_type(type_name);
    if (n_threads <= 0) n_threads = cpu_physical_cores();
    model_load_options probe_opts;
    probe_opts.backend = "cpu";
    // Validates the whole file (architecture, tensors, shapes, truncation) before writing anything.
    std::shared_ptr<const model> m = model_load(src, probe_opts);

    ggml_context * meta = nullptr;
    gguf_init_params params = {true, &meta};
    gguf_context * in = gguf_init_from_file(src.c_str(), params);
    if (!in) throw std::runtime_error("'" + src + "' is not a readable GGUF file");
    std::unique_ptr<gguf_context, void (*)(gguf_context *)> in_guard(in, gguf_free);
    std::unique_ptr<ggml_context, void (*)(ggml_context *)> meta_guard(meta, ggml_free);

    gguf_context * out = gguf_init_empty();
    std::unique_ptr<gguf_context, void (*)(gguf_context *)> out_guard(out, gguf_free);
    gguf_set_kv(out, in);
    const model_architecture arch = m->info().architecture;
    const std::string prefix =
        arch == model_architecture::MODEL_ARCHITECTURE_VOXTRAL_REALTIME ? "voxtral" : "fastconformer";
    gguf_set_val_str(out, (prefix + ".quantization").c_str(), type_name.c_str());
    const auto dim = [&m](const char * key) {
        const auto it = m->info().dims.find(key);
        return it == m->info().dims.end() ? (int64_t) 0 : it->second;
    };
    const int64_t enc_layers = dim("encoder.n_layer"), dec_layers = dim("decoder.n_layer");

    const int64_t n_tensors = gguf_get_n_tensors(in);
    std::vector<ggml_type> types(n_tensors);
    size_t total_bytes = 0;
    for (int64_t i = 0; i < n_tensors; ++i) {
        ggml_tensor * t = ggml_get_tensor(meta, gguf_get_tensor_name(in, i));
        types[i] = choose_type(arch, ggml_get_name(t), t, plan, enc_layers, dec_layers);
        gguf_add_tensor(out, t);
        gguf_set_tensor_type(out, ggml_get_name(t), types[i]);
        total_bytes += ggml_nbytes(t);
    }

    const std::string tmp = dst + ".partial";
    file_remover guard{tmp};
    std::ofstream fo(tmp, std::ios::binary | std::ios::trunc);
    std::ifstream fi(src, std::ios::binary);
    if (!fo) throw std::runtime_error("cannot write '" + tmp + "'");
    std::vector<char> meta_bytes(gguf_get_meta_size(out));
    gguf_get_meta_data(out, meta_bytes.data());
    fo.write(meta_bytes.data(), (std::streamsize) meta_bytes.size());

    const size_t align = gguf_get_alignment(out);
    const size_t data_in = gguf_get_data_offset(in);
    size_t done_bytes = 0;
    std::vector<char> raw, qbuf;
    std::vector<float> f32;
    for (int64_t i = 0; i < n_tensors; ++i) {
        ggml_tensor * t = ggml_get_tensor(meta, gguf_get_tensor_name(in, i));
        const int64_t row = t->ne[0], nrows = ggml_nrows(t);
        const size_t in_row = ggml_row_size(t->type, row), out_row = ggml_row_size(types[i], row);
        fi.seekg((std::streamoff) (data_in + gguf_get_tensor_offset(in, i)));
        const int64_t chunk = std::max<int64_t>(1, (int64_t) (64u << 20) / (int64_t) (row * sizeof(float)));
        size_t written = 0;
        for (int64_t r0 = 0; r0 < nrows; r0 += chunk) {
            const int64_t nr = std::min(chunk, nrows - r0);
            raw.resize(in_row * nr);
            fi.read(raw.data(), (std::streamsize) raw.size());
            if (!fi) throw std::runtime_error("'" + src + "' is truncated");
            if (types[i] == t->type) {
                fo.write(raw.data(), (std::streamsize) raw.size());
            } else {
                f32.resize((size_t) (row * nr));
                to_f32(t, raw.data(), f32.data(), row * nr);
                qbuf.resize(out_row * nr);
                if (types[i] == GGML_TYPE_F32) {
                    std::copy((const char *) f32.data(), (const char *) f32.data() + qbuf.size(), qbuf.data());
                } else {
                    const int nt = (int) std::min<int64_t>(n_threads, nr);
                    std::vector<std::thread> pool;
                    for (int k = 0; k < nt; ++k) {
                        const int64_t a = nr * k / nt, b = nr * (k + 1) / nt;
                        pool.emplace_back([&, a, b] {
                            ggml_quantize_chunk(types[i], f32.data() + a * row, qbuf.data() + a * out_row, 0, b - a,
                                                row, nullptr);
                        });
                    }
                    for (auto & th : pool) th.join();
                }
                fo.write(qbuf.data(), (std::streamsize) qbuf.size());
            }
            written += (types[i] == t->type ? in_row : out_row) * nr;
            done_bytes += in_row * nr;
            if (progress) progress(done_bytes, total_bytes);
        }
        const size_t pad = GGML_PAD(written, align) - written;
        static const char zeros[64] = {0};
        for (size_t left = pad; left > 0;) {
            const size_t w = std::min(left, sizeof(zeros));
            fo.write(zeros, (std::streamsize) w);
            left -= w;
        }
        if (!fo) throw std::runtime_error("writing '" + tmp + "' failed (disk full?)");
    }
    fo.close();
    if (!fo) throw std::runtime_error("writing '" + tmp + "' failed (disk full?)");
    if (std::rename(tmp.c_str(), dst.c_str()) != 0) {
        throw std::runtime_error("cannot rename '" + tmp + "' to '" + dst + "'");
    }
    guard.armed = false;
}

} // namespace captionist
