// graph_attention.h - causal sliding-window attention over a kv_ring, shared by encoder and decoder.
#pragma once

#include <ggml-backend.h>
#include <ggml.h>

#include <cstdint>
#include <vector>

namespace captionist {

class kv_ring;
struct column_kernel_set;

// q: F32 [head_dim, n_head, n], k: F32 [head_dim, n_head_kv, n] (both already rotated),
// v: F32 [head_dim*n_head_kv, n]; stores k/v at positions pos0.. and attends over the first n_kv
// slots of the ring with `mask` (F16 [n_kv, n], n_kv >= ring.n_used()). Returns F32
// [head_dim*n_head, n]. GQA: query head h reads key/value head h / (n_head / n_head_kv). A ring
// that stores value rows is read with ggml_flash_attn_ext (F32 precision), otherwise with
// products and a softmax, or, with `from_row_copy` (the ring has one), with ggml_flash_attn_ext
// from the row copy. `writes` as kv_ring::store. `kernels`: the products of a few queries with an
// F16 cache go through our column kernels (column_products.h), as a model's weights do.
ggml_tensor * build_ring_attention(ggml_context * ctx, ggml_cgraph * gf, const kv_ring & ring, int il,
                                   ggml_tensor * q, ggml_tensor * k, ggml_tensor * v, ggml_tensor * mask,
                                   int64_t pos0, std::vector<ggml_tensor *> * writes = nullptr,
                                   bool from_row_copy = false, const column_kernel_set * kernels = nullptr);

// The fewest queries per head for which ggml's CPU flash attention (0.20.2) takes its tiled path:
// F32 queries and F32 sums throughout, 64 x 64 tiles, fully masked tiles skipped. Below it, it
// rounds the queries to the cache type and sums the values in F16, so the CPU reads smaller
// batches with products and a softmax.
constexpr int CPU_FLASH_TILE_QUERIES = 64;

// How a model attends on `dev`: flash attention where the backend runs ggml_flash_attn_ext for
// these shapes and is not the CPU (ggml's CPU kernel rounds the queries to the cache type and
// changes the summation order; the mul_mat path keeps the CPU golden-exact), and the cache type:
// `preferred` (F32 for F32 models, F16 otherwise) unless flash attention cannot read it.
// `batch_flash`: on the CPU with F16 caches, batches of at least CPU_FLASH_TILE_QUERIES queries
// may be read with flash attention from a row copy of the values (kv_ring::add_row_copy): its tiled
// kernel is F32 throughout and skips masked tiles, where the products spend their time on 64-long
// rows (offline encoder batches: -12 % of a 10 s Q4_K run on 2 cores). F32 caches (F32 models, the
// golden-exact path) never do.
// CAPTIONIST_FLASH_ATTN=0/1 and CAPTIONIST_KV_TYPE=f16/f32 override the choice (0 also turns
// batch_flash off; 1 makes every read flash attention).
struct attention_choice {
    bool flash = false;
    bool batch_flash = false;
    ggml_type kv_type = GGML_TYPE_F16;
};
attention_choice choose_attention(ggml_backend_dev_t dev, int head_dim, int n_head, int n_head_kv, ggml_type preferred);

// NeoX-layout ("rotate half") RoPE at absolute positions `pos` (I32 [n]).
ggml_tensor * build_rope_neox(ggml_context * ctx, ggml_tensor * x, ggml_tensor * pos, int head_dim, float theta);

// RMSNorm followed by the learned scale.
ggml_tensor * build_rms_norm(ggml_context * ctx, ggml_tensor * x, ggml_tensor * weight, float eps);

} // namespace captionist
