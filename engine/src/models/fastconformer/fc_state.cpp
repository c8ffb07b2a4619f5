#include "fc_state.h"

#include "fc_model.h"

#include <ggml-alloc.h>

#include <algorithm>
#include <stdexcept>

namespace captionist {

namespace {

constexpr int TARGET_BATCH_FRAMES = 32; // frames per encoder graph when audio is waiting (2.56 s)

} // namespace

fc_geometry fc_geometry::make(int lookahead, int left_context) {
    fc_geometry g;
    g.chunk = lookahead + 1;
    g.left_chunks = left_context / g.chunk;
    g.max_cache = g.left_chunks * g.chunk;
    g.max_batch = g.chunk * std::max(1, TARGET_BATCH_FRAMES / g.chunk);
    g.cap = g.max_cache + g.max_batch;
    g.n_rel = g.max_cache + 2 * g.max_batch - 1;
    g.rel_top = g.max_cache + g.max_batch - 1;
    return g;
}

fc_state::~fc_state() {
    if (buf_) ggml_backend_buffer_free(buf_);
    if (ctx_) ggml_free(ctx_);
}

void fc_state::init(const fc_model & m, ggml_backend_buffer_type_t buft, const fc_geometry & g) {
    if (buf_) ggml_backend_buffer_free(buf_);
    if (ctx_) ggml_free(ctx_);
    buf_ = nullptr;
    geo = g;
    const fc_hparams & hp = m.hp;
    const int n_layer = (int) hp.n_layer;
    ggml_init_params p = {/*mem_size =*/ggml_tensor_overhead() * (size_t) (4 * n_layer + 8), nullptr, true};
    ctx_ = ggml_init(p);
    if (!ctx_) throw std::runtime_error("out of memory creating the stream state context");
    const int64_t E = hp.n_embd;
    k.resize(n_layer);
    v.resize(n_layer);
    conv.resize(n_layer);
    pos.resize(n_layer);
    for (int il = 0; il < n_layer; ++il) {
        k[il] = ggml_new_tensor_2d(ctx_, m.kv_type, E, 2 * (int64_t) g.cap);
        v[il] = ggml_new_tensor_2d(ctx_, m.kv_type, 2 * (int64_t) g.cap, E);
        conv[il] = ggml_new_tensor_2d(ctx_, GGML_TYPE_F32, std::max<int64_t>(1, hp.conv_kernel - 1), E);
        pos[il] = ggml_new_tensor_2d(ctx_, GGML_TYPE_F32, E, g.n_rel);
    }
    lstm_h = ggml_new_tensor_2d(ctx_, GGML_TYPE_F32, hp.dec_n_embd, hp.dec_n_layer);
    lstm_c = ggml_new_tensor_2d(ctx_, GGML_TYPE_F32, hp.dec_n_embd, hp.dec_n_layer);
    pred = ggml_new_tensor_1d(ctx_, GGML_TYPE_F32, hp.joint_n_embd);
    buf_ = ggml_backend_alloc_ctx_tensors_from_buft(ctx_, buft);
    if (!buf_) throw std::runtime_error("not enough memory for the stream's caches");
    clear();
}

void fc_state::clear() {
    // zero everything but the position tables (they depend only on the geometry)
    for (ggml_tensor * t = ggml_get_first_tensor(ctx_); t; t = ggml_get_next_tensor(ctx_, t)) {
        if (std::find(pos.begin(), pos.end(), t) != pos.end()) continue;
        std::vector<uint8_t> zeros(ggml_nbytes(t), 0);
        ggml_backend_tensor_set(t, zeros.data(), 0, zeros.size());
    }
}

size_t fc_state::bytes() const {
    return buf_ ? ggml_backend_buffer_get_size(buf_) : 0;
}

} // namespace captionist
