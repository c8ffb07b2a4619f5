// voxtral_silence.h - the silent start every Voxtral stream shares, computed once per model.
//
// A stream begins with n_left_pad_tokens of digital silence before the first real sample. The
// encoder is causal, so the audio tokens whose mel frames all end before the first real sample
// (silent_tokens(): 31 of the 32 with the published hyper-parameters) come out the same for every
// stream, and so do the decoder's first positions, which read only those tokens, [BOS] and
// [STREAMING_PAD] under the delay's conditioning. Every stream computes them as batches of their
// own (the encoder's first batch and the prompt's first part stop there), so the first stream of
// a model saves what they left in its caches and later streams, and re-anchors, copy it back
// instead of recomputing it: about 2 s per start for the full Q4_K model on two CPU cores
// (bench/bench_stream_start.py), and the same bits as computing it (the copies are exact, the
// batches the same).
//
// The copies live on the model's device next to the weights: the encoder's, one per model (33 MB
// for the full model's F16 caches: 124 positions x 32 layers x keys and values x 2048), and the
// decoder's, one per delay for the last MAX_DECODER_PREFIXES delays (3.3 MB each). A re-anchor
// copies the decoder's part again. CAPTIONIST_NO_SILENCE_CACHE=1 turns the reuse off (each stream
// computes its own start, the same numbers); a stream that captures intermediates always does.
#pragma once

#include "persistent_tensors.h"

#include <ggml-backend.h>
#include <ggml.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace captionist {

struct model_hparams;
class kv_ring;

// Leading audio tokens that depend on the left padding alone (at most n_left_pad_tokens).
int silent_tokens(const model_hparams & hp);

// A ring's first positions, per layer, on a device (kv_ring::save_slots / restore_slots). The
// tensors are declared here and allocated by the owner (after it declares its own in `dev`).
struct saved_slots {
    saved_slots(const kv_ring & ring, int n_positions, int extra_tensors);
    persistent_tensors dev;
    std::vector<ggml_tensor *> k, v;
    int n_positions;
};

struct encoder_silence {
    encoder_silence(const kv_ring & ring, ggml_backend_buffer_type_t buft, int n_positions, int n_tokens,
                    int64_t n_embd);
    saved_slots slots;          // the encoder ring's positions 0..n_positions-1
    ggml_tensor * embeds;       // F32 [dec_n_embd, n_tokens] the silent tokens' audio embeddings
    int n_tokens;
    std::vector<float> mel_prev;   // the stream's host state after the silent tokens
    std::vector<float> conv1_prev;
};

struct decoder_silence {
    decoder_silence(const kv_ring & ring, ggml_backend_buffer_type_t buft, int n_positions, int delay);
    saved_slots slots; // the decoder ring's positions 0..n_positions-1 at this delay
    int delay;
};

// What a model keeps; safe to use from several streams on several threads.
class silence_cache {
public:
    static constexpr size_t MAX_DECODER_PREFIXES = 4;

    std::shared_ptr<const encoder_silence> encoder() const;
    std::shared_ptr<const decoder_silence> decoder(int delay) const;
    // The first one saved is kept (a second stream that computed the same start meanwhile drops its copy).
    void put(std::shared_ptr<const encoder_silence> e);
    void put(std::shared_ptr<const decoder_silence> d);

private:
    mutable std::mutex mu_;
    std::shared_ptr<const encoder_silence> enc_;
    std::vector<std::shared_ptr<const decoder_silence>> dec_; // oldest first
};

} // namespace captionist
