// fc_state.h - one FastConformer stream's persistent device tensors.
//
// Per encoder layer: the attention keys and values of the last frames (a mirrored ring: frame p
// sits in slot p % cap and again in slot p % cap + cap, so any window of up to cap consecutive
// frames is one contiguous view, in time order, as the relative-position term needs), the
// depthwise conv's last kernel-1 inputs, and the projected relative-position table of the
// stream's lookahead. For the decoder: the LSTM state and the current prediction output.
#pragma once

#include <ggml-backend.h>
#include <ggml.h>

#include <cstdint>
#include <vector>

namespace captionist {

struct fc_model;

struct fc_geometry {
    int chunk = 1;       // frames per attention chunk (lookahead + 1)
    int left_chunks = 0; // chunks of left context a query sees
    int max_cache = 0;   // left_chunks * chunk: cached frames a chunk attends to
    int max_batch = 1;   // frames per encoder graph (a whole number of chunks)
    int cap = 1;         // ring slots: max_cache + max_batch
    int n_rel = 1;       // relative offsets in the table: max_cache + 2*max_batch - 1
    int rel_top = 0;     // largest offset in the table (its column 0); offsets decrease along the table

    static fc_geometry make(int lookahead, int left_context);
};

class fc_state {
public:
    fc_state() = default;
    fc_state(const fc_state &) = delete;
    fc_state & operator=(const fc_state &) = delete;
    ~fc_state();

    // Allocates everything for `g` on `buft` (reallocates if the geometry changed) and zeroes it.
    void init(const fc_model & m, ggml_backend_buffer_type_t buft, const fc_geometry & g);
    void clear(); // zero caches and decoder state (keeps the allocation and the position tables)
    size_t bytes() const;

    fc_geometry geo;
    std::vector<ggml_tensor *> k;     // [E, 2*cap]          per layer, column per slot
    std::vector<ggml_tensor *> v;     // [2*cap, E]          per layer, transposed: column per slot
    std::vector<ggml_tensor *> conv;  // F32 [kernel-1, E]   per layer, time-major
    std::vector<ggml_tensor *> pos;   // F32 [E, n_rel]      per layer: attn_pos · pe(rel_top - i)
    ggml_tensor * lstm_h = nullptr;   // F32 [H, n_layer]
    ggml_tensor * lstm_c = nullptr;   // F32 [H, n_layer]
    ggml_tensor * pred = nullptr;     // F32 [J]             dec.proj(LSTM output) of the last token

private:
    ggml_context * ctx_ = nullptr;
    ggml_backend_buffer_t buf_ = nullptr;
};

} // namespace captionist
