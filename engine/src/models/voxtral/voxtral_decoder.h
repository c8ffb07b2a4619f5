// voxtral_decoder.h - the text decoder for n consecutive positions, and its delay conditioning.
//
// Every position p gets embed(token_p) + audio_embed[p] (additive fusion). Per layer:
//   h += attn(rms(h));  x = rms2(h) * ada_scale[layer];  h += mlp(x)
// where ada_scale = 1 + W2 gelu(W1 t(d)) depends only on the delay d (built by build_ada_graph).
// The last position's logits are produced (tied head = token embedding), or every position's for
// verifying a draft, and their argmax.
// The ada scales and the audio embeddings are the stream's device tensors (decoder_state): a step
// uploads only token ids, row indices, positions and the mask.
#pragma once

#include <ggml.h>

#include <cstdint>
#include <vector>

namespace captionist {

struct voxtral_model;
class kv_ring;

struct decoder_state {
    ggml_tensor * ada = nullptr;          // F32 [dec_n_embd, n_layer]
    ggml_tensor * audio_embeds = nullptr; // F32 [dec_n_embd, n_slots]  rows picked by audio_rows
};

struct decoder_graph {
    ggml_tensor * ids = nullptr;        // in  I32 [n]
    ggml_tensor * audio_rows = nullptr; // in  I32 [n]  slot of each position's audio embedding
    ggml_tensor * pos = nullptr;        // in  I32 [n]
    ggml_tensor * mask = nullptr;       // in  F16 [n_kv, n]  (a view of `mask_src` when given)
    ggml_tensor * logits = nullptr;     // out F32 [n_vocab, 1 or n]  (last position, or all)
    ggml_tensor * token = nullptr;      // out I32 [1 or n]  argmax of logits (ggml: the last of equal maxima)
    std::vector<ggml_tensor *> writes;  // the cache writes (kv_ring::move_writes)
};

// `ring.claim(pos0, n)` must have been called before building; attention covers n_kv >= n_used
// slots. `mask_src`, when given, is a persistent F16 tensor of at least n_kv x n the mask is a view
// of (set by the caller, possibly in parts); otherwise the mask is a graph input.
decoder_graph build_decoder_graph(ggml_context * ctx, ggml_cgraph * gf, const voxtral_model & m, const kv_ring & ring,
                                  const decoder_state & st, int n, int64_t pos0, int n_kv, ggml_tensor * mask_src = nullptr,
                                  bool all_positions = false);

struct ada_graph {
    ggml_tensor * t_cond = nullptr; // in  F32 [dec_n_embd]  [cos(d f), sin(d f)]
};

// Computes the scales into `out` (F32 [dec_n_embd, n_layer], a persistent tensor).
ada_graph build_ada_graph(ggml_context * ctx, ggml_cgraph * gf, const voxtral_model & m, ggml_tensor * out);

// The time conditioning vector for `num_delay_tokens`: cos first, then sin (F32 as the reference).
std::vector<float> delay_time_embedding(const voxtral_model & m, int num_delay_tokens);

} // namespace captionist
