// voxtral_decoder.h - the text decoder for n consecutive positions, and its delay conditioning.
//
// Every position p gets embed(token_p) + audio_embed[p] (additive fusion). Per layer:
//   h += attn(rms(h));  x = rms2(h) * ada_scale[layer];  h += mlp(x)
// where ada_scale = 1 + W2 gelu(W1 t(d)) depends only on the delay d (built by build_ada_graph).
// Only the last position's logits are produced (tied head = token embedding).
#pragma once

#include <ggml.h>

#include <cstdint>
#include <vector>

namespace captionist {

struct voxtral_model;
class kv_ring;

struct decoder_graph {
    ggml_tensor * ids = nullptr;    // in  I32 [n]
    ggml_tensor * audio = nullptr;  // in  F32 [dec_n_embd, n]
    ggml_tensor * pos = nullptr;    // in  I32 [n]
    ggml_tensor * mask = nullptr;   // in  F32 [n_kv, n]
    ggml_tensor * ada = nullptr;    // in  F32 [dec_n_embd, n_layer]
    ggml_tensor * logits = nullptr; // out F32 [n_vocab]  (last position)
};

// `ring.claim(pos0, n)` must have been called before building.
decoder_graph build_decoder_graph(ggml_context * ctx, ggml_cgraph * gf, const voxtral_model & m, const kv_ring & ring, int n,
                                  int64_t pos0);

struct ada_graph {
    ggml_tensor * t_cond = nullptr; // in  F32 [dec_n_embd]  [cos(d f), sin(d f)]
    ggml_tensor * scales = nullptr; // out F32 [dec_n_embd, n_layer]
};

ada_graph build_ada_graph(ggml_context * ctx, ggml_cgraph * gf, const voxtral_model & m);

// The time conditioning vector for `num_delay_tokens`: cos first, then sin (F32 as the reference).
std::vector<float> delay_time_embedding(const voxtral_model & m, int num_delay_tokens);

} // namespace captionist
