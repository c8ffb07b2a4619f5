// graph_attention.h - causal sliding-window attention over a kv_ring, shared by encoder and decoder.
#pragma once

#include <ggml-backend.h>
#include <ggml.h>

#include <cstdint>
#include <vector>

namespace captionist {

class kv_ring;

// q: F32 [head_dim, n_head, n], k: F32 [head_dim, n_head_kv, n] (both already rotated),
// v: F32 [head_dim*n_head_kv, n]; stores k/v at positions pos0.. and attends over the first n_kv
// slots of the ring with `mask` (F16 [n_kv, n], n_kv >= ring.n_used()). Returns F32
// [head_dim*n_head, n]. GQA: query head h reads key/value head h / (n_head / n_head_kv). A ring
// that stores value rows is read with ggml_flash_attn_ext (F32 precision), otherwise with
// products and a softmax. `writes` as kv_ring::store.
ggml_tensor * build_ring_attention(ggml_context * ctx, ggml_cgraph * gf, const kv_ring & ring, int il,
                                   ggml_tensor * q, ggml_tensor * k, ggml_tensor * v, ggml_tensor * mask,
                                   int64_t pos0, std::vector<ggml_tensor *> * writes = nullptr);

// How a model attends on `dev`: flash attention where the backend runs ggml_flash_attn_ext for
// these shapes and is not the CPU (ggml's CPU kernel rounds the queries to the cache type and
// changes the summation order; the mul_mat path keeps the CPU golden-exact), and the cache type:
// `preferred` (F32 for F32 models, F16 otherwise) unless flash attention cannot read it.
// CAPTIONIST_FLASH_ATTN=0/1 and CAPTIONIST_KV_TYPE=f16/f32 override the choice.
struct attention_choice {
    bool flash = false;
    ggml_type kv_type = GGML_TYPE_F16;
};
attention_choice choose_attention(ggml_backend_dev_t dev, int head_dim, int n_head, int n_head_kv, ggml_type preferred);

// NeoX-layout ("rotate half") RoPE at absolute positions `pos` (I32 [n]).
ggml_tensor * build_rope_neox(ggml_context * ctx, ggml_tensor * x, ggml_tensor * pos, int head_dim, float theta);

// RMSNorm followed by the learned scale.
ggml_tensor * build_rms_norm(ggml_context * ctx, ggml_tensor * x, ggml_tensor * weight, float eps);

} // namespace captionist
