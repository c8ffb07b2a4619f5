// graph_attention.h - causal sliding-window attention over a kv_ring, shared by encoder and decoder.
#pragma once

#include <ggml.h>

#include <cstdint>

namespace captionist {

class kv_ring;

// q: F32 [head_dim, n_head, n], k: F32 [head_dim, n_head_kv, n] (both already rotated),
// v: F32 [head_dim*n_head_kv, n]; stores k/v at positions pos0.. and attends over the ring with
// `mask` (F32 [ring.n_used(), n]). Returns F32 [head_dim*n_head, n]. GQA: query head h reads
// key/value head h / (n_head / n_head_kv).
ggml_tensor * build_ring_attention(ggml_context * ctx, ggml_cgraph * gf, const kv_ring & ring, int il,
                                   ggml_tensor * q, ggml_tensor * k, ggml_tensor * v, ggml_tensor * mask,
                                   int64_t pos0);

// NeoX-layout ("rotate half") RoPE at absolute positions `pos` (I32 [n]).
ggml_tensor * build_rope_neox(ggml_context * ctx, ggml_tensor * x, ggml_tensor * pos, int head_dim, float theta);

// RMSNorm followed by the learned scale.
ggml_tensor * build_rms_norm(ggml_context * ctx, ggml_tensor * x, ggml_tensor * weight, float eps);

} // namespace captionist
