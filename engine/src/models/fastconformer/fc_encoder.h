// fc_encoder.h - FastConformer encoder graphs: the relative-position tables, and a batch of frames
// through subsampling, the conformer layers, the language prompt and the encoder projection.
//
// A batch covers encoder frames [p0, p0 + n). The subsampling recomputes its few frames of causal
// context from the mel window instead of caching per-stage activations: output frame t of a
// 3x3 stride-2 stage reads inputs 2t-2 .. 2t, so frames [p0, p0+n) need mel frames
// [8·p0 - 14, 8·(p0+n-1)] for three stages. Each stage's output is multiplied by a 0/1 mask that
// zeroes indices < 0 (the causal padding) and, after finish, indices at or past the stage's valid
// length (the reference masks those). The conformer layers attend to the n_cache frames before p0
// through fc_state's rings and store the batch's keys, values and conv inputs for the next batch.
#pragma once

#include <ggml.h>

#include <cstdint>
#include <vector>

namespace captionist {

struct fc_model;
struct fc_hparams;
class fc_state;

// Index ranges of the subsampling levels for output frames [t0, t0 + n): level 0 is the mel input,
// level k the output of stage k (the last level is [t0, t0 + n)).
struct fc_sub_range {
    int64_t lo = 0;
    int64_t count = 0;
};
std::vector<fc_sub_range> fc_sub_ranges(const fc_hparams & hp, int64_t t0, int64_t n);

struct fc_pos_graph {
    ggml_tensor * pe = nullptr; // in F32 [E, n_rel]  sinusoidal pe of offsets rel_top, rel_top-1, ...
};

// Writes state.pos[il] = attn_pos_l · pe for every layer.
fc_pos_graph build_fc_pos_graph(ggml_context * ctx, ggml_cgraph * gf, const fc_model & m, const fc_state & state);

// The sinusoidal relative-position embedding columns for the table of `state` (host, F32 [n_rel][E]).
std::vector<float> fc_pos_embedding(const fc_model & m, int rel_top, int n_rel);

// A view into a layer's key/value ring whose offset follows the batch position p0: the batch's
// write slots (one per mirror) or the attention window. Recorded so that a kept graph can be
// moved to the next batch by re-pointing these views (fc_move_ring_views) instead of rebuilt.
enum class fc_ring_role { FC_RING_K_WRITE, FC_RING_V_WRITE, FC_RING_K_WINDOW, FC_RING_V_WINDOW };
struct fc_ring_view {
    ggml_tensor * t = nullptr;
    fc_ring_role role = fc_ring_role::FC_RING_K_WRITE;
    int mirror = 0; // writes: 0 or 1 (slot or slot + cap)
};

struct fc_encoder_graph {
    ggml_tensor * mel = nullptr;              // in  F32 [n_mel + 3, n_in]  freq-padded mel window, frame per row
    std::vector<ggml_tensor *> sub_masks;     // in  F32 [1, 1, count_k]   per stage: 1 valid, 0 masked
    ggml_tensor * attn_mask = nullptr;        // in  F32 [n_cache + n, n]  0 visible, -inf hidden
    ggml_tensor * enc_in = nullptr;           // out F32 [E, n]  subsampling output times xscale
    ggml_tensor * enc_out = nullptr;          // out F32 [E, n]  last conformer layer
    ggml_tensor * joint_enc = nullptr;        // out F32 [J, n]  encoder projection (the joint's input)
    std::vector<fc_ring_view> ring_views;     // every view whose offset depends on p0
    bool movable = false;                     // the batch writes one run of slots (no wrap): movable
};

// `prompt` is the language slot (-1: the model has none). `capture` keeps enc_in / enc_out readable.
fc_encoder_graph build_fc_encoder_graph(ggml_context * ctx, ggml_cgraph * gf, const fc_model & m, const fc_state & state,
                                        int64_t p0, int n, int n_cache, int prompt, bool capture);

// Re-points a movable graph built for (p0', n, n_cache) at batch position p0 (same n and n_cache,
// and p0 .. p0 + n - 1 again in one run of slots). Returns false if the batch would wrap the ring.
bool fc_move_ring_views(const fc_encoder_graph & g, const fc_state & state, int64_t p0, int n, int n_cache);

} // namespace captionist
