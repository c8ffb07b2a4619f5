// voxtral_encoder.h - the audio side for a batch of k tokens: conv stem, then encoder -> projector.
//
// Conv graph input: 8k new log-mel frames (+ the 2 previous frames the causal conv1 needs) and the
// previous conv1 output frame (the causal stride-2 conv2 needs one); output: 4k encoder input
// frames. Encoder graph: those frames -> 4k encoder frames -> k audio embeddings. The encoder
// attends through `ring` (its sliding-window KV cache), so running the whole clip in one batch or in
// many small ones computes the same thing. A stream builds both into one graph (the conv stem's
// frames feed the encoder on the device).
#pragma once

#include <ggml.h>

#include <cstdint>
#include <vector>

namespace captionist {

struct voxtral_model;
class kv_ring;

struct conv_graph {
    ggml_tensor * mel_in = nullptr;     // in  F32 [2 + 8k, n_mel]   time-major columns
    ggml_tensor * conv1_prev = nullptr; // in  F32 [1, enc_n_embd]    last conv1 frame of the previous batch
    ggml_tensor * conv1_last = nullptr; // out F32 [1, enc_n_embd]
    ggml_tensor * frames = nullptr;     // out F32 [enc_n_embd, 4k]   conv stem output (encoder input)
};

// The causal conv stem for k tokens (8k new mel frames).
conv_graph build_conv_graph(ggml_context * ctx, ggml_cgraph * gf, const voxtral_model & m, int n_tokens);

struct encoder_graph {
    ggml_tensor * frames = nullptr;  // in  F32 [enc_n_embd, 4k]   (or the conv stem's output)
    ggml_tensor * pos = nullptr;     // in  I32 [4k]               absolute encoder frame positions
    ggml_tensor * mask = nullptr;    // in  F16 [n_kv, 4k]
    ggml_tensor * enc_out = nullptr; // out F32 [enc_n_embd, 4k]   encoder output after its final norm
    ggml_tensor * embeds = nullptr;  // out F32 [dec_n_embd, k]    projector output
    std::vector<ggml_tensor *> writes; // the cache writes (kv_ring::move_writes)
};

// Encoder layers + projector; `ring.claim(enc_pos0, 4k)` must have been called before building.
// Attention covers n_kv >= ring.n_used() slots. `frames` (F32 [enc_n_embd, 4k]) is the input when
// given, else an input tensor is made. `flash_rows`: attention reads the ring's row copy of the
// values with flash attention (build_ring_attention's from_row_copy).
encoder_graph build_encoder_graph(ggml_context * ctx, ggml_cgraph * gf, const voxtral_model & m, const kv_ring & ring,
                                  int n_tokens, int64_t enc_pos0, int n_kv, ggml_tensor * frames = nullptr,
                                  bool flash_rows = false);

} // namespace captionist
