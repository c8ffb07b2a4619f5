// kv_ring.h - a sliding-window key/value cache stored as a ring of slots.
//
// Position p lives in slot p % capacity. With capacity >= window - 1 + (largest batch), writing a
// batch never overwrites a key that a query of the same batch can still see, so memory and
// per-token cost stay constant however long the stream runs. RoPE is applied before caching
// (absolute positions), so the order of slots does not matter; the mask hides empty slots and
// positions outside each query's window (query q sees keys k with q - window < k <= q).
//
// Attention may run over more slots than are filled (a view of n_kv >= n_used() slots, masked), so a
// graph built for n_kv serves every step until the ring fills past it; `padded_n_kv()` rounds up.
//
// A ring may start with fewer slots allocated than its capacity and grow before its first wrap
// (slot p holds position p until then, so growing keeps every slot where it is): a short stream or
// a file then holds what it uses, not the whole window. Growing replaces the tensors (generation()
// counts it), so graphs built on the old ones must be rebuilt.
// Values are stored transposed (a column per slot, for mul_mat attention) or as rows like the keys
// (what ggml_flash_attn_ext reads). A ring of columns can also keep a row copy of its values
// (add_row_copy), written alongside from then on, so that large batches can be read with flash
// attention while single steps keep the products.
#pragma once

#include "persistent_tensors.h"

#include <ggml-backend.h>
#include <ggml.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace captionist {

class kv_ring {
public:
    kv_ring() = default;
    kv_ring(const kv_ring &) = delete;
    kv_ring & operator=(const kv_ring &) = delete;

    // Allocates n_layer K and V tensors on `buft` for `capacity` slots, of which `allocated` (0: all;
    // else at most capacity) now. Throws on allocation failure.
    void init(ggml_backend_buffer_type_t buft, ggml_type type, int n_layer, int n_head_kv, int head_dim,
              int window, int capacity, bool value_rows = false, int allocated = 0);

    // Growing (rings without a row copy): fits() says whether positions pos0..pos0+n-1 have their
    // slots allocated. begin_grow() allocates tensors for at least `slots` slots (rounded up to
    // `step`, at most capacity()) next to the old ones, false when there is no memory (nothing
    // changed); copy_grown() adds the copy of the old contents to a graph, which must be computed
    // before finish_grow() frees the old tensors.
    bool fits(int64_t pos0, int n) const;
    int allocated() const { return allocated_; }
    bool begin_grow(ggml_backend_buffer_type_t buft, int slots, int step);
    void copy_grown(ggml_context * ctx, ggml_cgraph * gf) const;
    void finish_grow();
    uint64_t generation() const { return generation_; }
    // Forget every position (keeps the allocation; used slots are zeroed so that masked-out slots
    // never hold a non-finite value from an earlier stream).
    void clear();

    // Host bookkeeping for a batch of `n` positions starting at `pos0` (must equal next_pos()).
    void claim(int64_t pos0, int n);
    int64_t next_pos() const { return next_pos_; }
    // Drops positions >= pos (a rejected draft): their slots read as empty until written again.
    // Only positions claimed by the last batch may be dropped.
    void rewind(int64_t pos);
    int n_used() const; // slots holding a position
    // n_used() rounded up to a multiple of `step`, at most capacity().
    int padded_n_kv(int step) const;
    int capacity() const { return capacity_; }
    int window() const { return window_; }
    bool value_rows() const { return value_rows_; }

    // Adds the row copy of the values (a ring of columns only; false, and no copy, when there is no
    // memory for it). Every store() writes it from then on; fill_row_copy() brings it up to date
    // with what the ring already holds, once, before it is read.
    bool add_row_copy(ggml_backend_buffer_type_t buft);
    bool has_row_copy() const { return !vr_.empty(); }
    void fill_row_copy(ggml_context * ctx, ggml_cgraph * gf) const;
    ggml_type type() const { return type_; }

    // Mask [n_q][n_kv] (n_kv >= n_used()) for queries at pos0..pos0+n_q-1: 0 where visible, -inf
    // elsewhere (F16, as ggml's attention kernels take it).
    void fill_mask(int64_t pos0, int n_q, int n_kv, ggml_fp16_t * out) const;

    // Graph pieces for layer `il`:
    // store `k_cur`/`v_cur` (F32 [head_dim*n_head_kv, n]) for positions pos0.. into their slots.
    // `writes`, when given, receives the destination views, which move_writes() can re-point.
    void store(ggml_context * ctx, ggml_cgraph * gf, int il, ggml_tensor * k_cur, ggml_tensor * v_cur,
               int64_t pos0, std::vector<ggml_tensor *> * writes = nullptr) const;
    // Re-points the views store() wrote for a batch (one that did not wrap) to the slots of the
    // batch of `n` at `pos0`; false when either batch wraps (then the graph must be rebuilt).
    bool move_writes(const std::vector<ggml_tensor *> & writes, int64_t pos0, int n) const;
    // Copies of the slots of positions pos0..pos0+n-1 (which must not wrap), one key and one value
    // tensor per layer in the cache's own type and layout (slot_shape()): save_slots() copies them
    // out, restore_slots() back in after claim(pos0, n), bit for bit.
    struct shape {
        int64_t ne0, ne1;
    };
    shape slot_shape(bool value, int n) const;
    void save_slots(ggml_context * ctx, ggml_cgraph * gf, int64_t pos0, const std::vector<ggml_tensor *> & k,
                    const std::vector<ggml_tensor *> & v) const;
    void restore_slots(ggml_context * ctx, ggml_cgraph * gf, int64_t pos0, const std::vector<ggml_tensor *> & k,
                       const std::vector<ggml_tensor *> & v) const;
    int n_layer() const { return n_layer_; }

    ggml_tensor * keys(ggml_context * ctx, int il, int n_kv) const;   // [head_dim, n_kv, n_head_kv]
    // value_rows(): [head_dim, n_kv, n_head_kv]; else [n_kv, head_dim, n_head_kv]
    ggml_tensor * values(ggml_context * ctx, int il, int n_kv) const;
    // The row copy's values: [head_dim, n_kv, n_head_kv] (has_row_copy()).
    ggml_tensor * value_rows_copy(ggml_context * ctx, int il, int n_kv) const;

    size_t bytes() const;

private:
    // the slots of positions pos0.. of one layer's keys or values, shaped as slot_shape()
    ggml_tensor * slot_view(ggml_context * ctx, int il, bool value, int64_t pos0, int n) const;

    // Key and value tensors of `slots` slots per layer, allocated zeroed on `buft`.
    struct tensors {
        std::unique_ptr<persistent_tensors> mem;
        std::vector<ggml_tensor *> k, v;
        int slots = 0;
    };
    // nullptr mem when the memory is not there
    tensors alloc_tensors(ggml_backend_buffer_type_t buft, int slots) const;

    int n_layer_ = 0, n_head_kv_ = 0, head_dim_ = 0, window_ = 0, capacity_ = 0, allocated_ = 0;
    uint64_t generation_ = 0;
    tensors grown_from_; // between begin_grow() and finish_grow()
    bool value_rows_ = false;
    ggml_type type_ = GGML_TYPE_F32;
    int64_t next_pos_ = 0;
    std::vector<int64_t> slot_pos_; // absolute position held by each slot, -1 if empty
    std::unique_ptr<persistent_tensors> mem_;      // k_ and v_
    std::vector<ggml_tensor *> k_; // [head_dim*n_head_kv, allocated]  row per slot
    std::vector<ggml_tensor *> v_; // [allocated, head_dim*n_head_kv] column per slot, or like k_
    std::unique_ptr<persistent_tensors> rows_mem_; // vr_
    std::vector<ggml_tensor *> vr_; // the row copy of v_ (like k_), when added

    // Views store() adds to `writes` per layer of a batch that does not wrap: key, value, row copy.
    int writes_per_layer() const { return has_row_copy() ? 6 : 4; }
};

} // namespace captionist
