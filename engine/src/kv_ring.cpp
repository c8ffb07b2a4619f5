#include "kv_ring.h"

#include "graph_copy.h"

#include "graph_runner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace captionist {

bool kv_ring::add_row_copy(ggml_backend_buffer_type_t buft) {
    if (value_rows_ || has_row_copy()) return has_row_copy();
    auto mem = std::make_unique<persistent_tensors>(n_layer_);
    std::vector<ggml_tensor *> rows((size_t) n_layer_);
    for (int il = 0; il < n_layer_; ++il) rows[(size_t) il] = mem->add(type_, k_[il]->ne[0], allocated_, "v_rows");
    try {
        mem->alloc(buft);
    } catch (const std::runtime_error &) {
        return false;
    }
    rows_mem_ = std::move(mem);
    vr_ = std::move(rows);
    return true;
}

void kv_ring::fill_row_copy(ggml_context * ctx, ggml_cgraph * gf) const {
    for (int il = 0; il < n_layer_; ++il) {
        // v_ is [allocated, row]: its transpose is [row, allocated], the row copy's shape
        ggml_build_forward_expand(gf, copy_into_view(ctx, ggml_transpose(ctx, v_[il]), vr_[(size_t) il]));
    }
}

kv_ring::tensors kv_ring::alloc_tensors(ggml_backend_buffer_type_t buft, int slots) const {
    tensors t;
    auto mem = std::make_unique<persistent_tensors>(2 * n_layer_);
    const int64_t row = (int64_t) head_dim_ * n_head_kv_;
    for (int il = 0; il < n_layer_; ++il) {
        t.k.push_back(mem->add(type_, row, slots, "k_cache"));
        t.v.push_back(value_rows_ ? mem->add(type_, row, slots, "v_cache") : mem->add(type_, slots, row, "v_cache"));
    }
    try {
        mem->alloc(buft);
    } catch (const std::runtime_error &) {
        return tensors();
    }
    t.mem = std::move(mem);
    t.slots = slots;
    return t;
}

void kv_ring::init(ggml_backend_buffer_type_t buft, ggml_type type, int n_layer, int n_head_kv, int head_dim,
                   int window, int capacity, bool value_rows, int allocated) {
    value_rows_ = value_rows;
    type_ = type;
    n_layer_ = n_layer;
    n_head_kv_ = n_head_kv;
    head_dim_ = head_dim;
    window_ = window;
    capacity_ = capacity;
    allocated_ = allocated > 0 ? std::min(allocated, capacity) : capacity;
    tensors t = alloc_tensors(buft, allocated_);
    if (!t.mem) throw std::runtime_error("not enough memory for the KV cache");
    mem_ = std::move(t.mem);
    k_ = std::move(t.k);
    v_ = std::move(t.v);
    clear();
}

bool kv_ring::fits(int64_t pos0, int n) const {
    return allocated_ == capacity_ || pos0 + n <= allocated_;
}

bool kv_ring::begin_grow(ggml_backend_buffer_type_t buft, int slots, int step) {
    if (has_row_copy() || grown_from_.mem) throw std::logic_error("kv_ring::begin_grow: not with a row copy, nor twice");
    if (next_pos_ > allocated_) throw std::logic_error("kv_ring::begin_grow: the ring has wrapped");
    const int want = std::min(capacity_, std::max({slots, 2 * allocated_, (slots + step - 1) / step * step}));
    if (want <= allocated_) return true;
    tensors t = alloc_tensors(buft, want);
    if (!t.mem) return false;
    grown_from_.mem = std::move(mem_);
    grown_from_.k = std::move(k_);
    grown_from_.v = std::move(v_);
    grown_from_.slots = allocated_;
    mem_ = std::move(t.mem);
    k_ = std::move(t.k);
    v_ = std::move(t.v);
    allocated_ = want;
    generation_ += 1;
    return true;
}

void kv_ring::copy_grown(ggml_context * ctx, ggml_cgraph * gf) const {
    const int n = grown_from_.slots;
    for (int il = 0; il < n_layer_; ++il) {
        ggml_tensor * ok = grown_from_.k[(size_t) il];
        ggml_tensor * ov = grown_from_.v[(size_t) il];
        // keys and value rows: the first n rows; value columns: the first n entries of each row
        ggml_tensor * kd = ggml_view_2d(ctx, k_[il], ok->ne[0], n, k_[il]->nb[1], 0);
        ggml_build_forward_expand(gf, ggml_cpy(ctx, ok, kd));
        ggml_tensor * vd = value_rows_ ? ggml_view_2d(ctx, v_[il], ov->ne[0], n, v_[il]->nb[1], 0)
                                       : ggml_view_2d(ctx, v_[il], n, ov->ne[1], v_[il]->nb[1], 0);
        ggml_build_forward_expand(gf, copy_into_view(ctx, ov, vd));
    }
}

void kv_ring::finish_grow() {
    grown_from_ = tensors();
}

void kv_ring::clear() {
    if (next_pos_ > 0 && mem_) mem_->clear();
    if (next_pos_ > 0 && rows_mem_) rows_mem_->clear();
    next_pos_ = 0;
    slot_pos_.assign(capacity_, -1);
}

size_t kv_ring::bytes() const {
    return (mem_ ? mem_->bytes() : 0) + (rows_mem_ ? rows_mem_->bytes() : 0);
}

void kv_ring::claim(int64_t pos0, int n) {
    if (pos0 != next_pos_ || n <= 0 || n > capacity_ - window_ + 1) {
        throw std::logic_error("kv_ring::claim: batch does not follow the previous one or is too large");
    }
    if (!fits(pos0, n)) throw std::logic_error("kv_ring::claim: the ring must grow first");
    for (int i = 0; i < n; ++i) slot_pos_[(size_t) ((pos0 + i) % capacity_)] = pos0 + i;
    next_pos_ = pos0 + n;
}

void kv_ring::rewind(int64_t pos) {
    if (pos > next_pos_ || pos < 0) throw std::logic_error("kv_ring::rewind: position not claimed");
    for (int64_t p = pos; p < next_pos_; ++p) slot_pos_[(size_t) (p % capacity_)] = -1;
    next_pos_ = pos;
}

int kv_ring::n_used() const {
    return (int) std::min<int64_t>(next_pos_, capacity_);
}

int kv_ring::padded_n_kv(int step) const {
    const int n = std::max(1, n_used());
    return std::min(allocated_, (n + step - 1) / step * step);
}

void kv_ring::fill_mask(int64_t pos0, int n_q, int n_kv, ggml_fp16_t * out) const {
    if (n_kv < n_used() || n_kv > capacity_) throw std::logic_error("kv_ring::fill_mask: n_kv out of range");
    const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f);
    const ggml_fp16_t neg_inf = ggml_fp32_to_fp16(-std::numeric_limits<float>::infinity());
    for (int iq = 0; iq < n_q; ++iq) {
        const int64_t q = pos0 + iq;
        ggml_fp16_t * row = out + (size_t) iq * n_kv;
        for (int s = 0; s < n_kv; ++s) {
            const int64_t k = slot_pos_[s];
            row[s] = (k >= 0 && k <= q && k > q - window_) ? zero : neg_inf;
        }
    }
}

void kv_ring::store(ggml_context * ctx, ggml_cgraph * gf, int il, ggml_tensor * k_cur, ggml_tensor * v_cur,
                    int64_t pos0, std::vector<ggml_tensor *> * writes) const {
    const int64_t n = k_cur->ne[1];
    const int64_t row = k_cur->ne[0];
    int64_t done = 0;
    while (done < n) {
        const int64_t slot = (pos0 + done) % capacity_;
        const int64_t cnt = std::min<int64_t>(n - done, capacity_ - slot);
        ggml_tensor * ks = ggml_view_2d(ctx, k_cur, row, cnt, k_cur->nb[1], done * k_cur->nb[1]);
        ggml_tensor * kd = ggml_view_2d(ctx, k_[il], row, cnt, k_[il]->nb[1], slot * k_[il]->nb[1]);
        ggml_tensor * kw = ggml_cpy(ctx, ks, kd);
        ggml_build_forward_expand(gf, kw);
        ggml_tensor * vs = ggml_view_2d(ctx, v_cur, row, cnt, v_cur->nb[1], done * v_cur->nb[1]);
        ggml_tensor * vd = nullptr;
        ggml_tensor * vw = nullptr;
        if (value_rows_) {
            vd = ggml_view_2d(ctx, v_[il], row, cnt, v_[il]->nb[1], slot * v_[il]->nb[1]);
            vw = ggml_cpy(ctx, vs, vd);
        } else {
            vd = ggml_view_2d(ctx, v_[il], cnt, row, v_[il]->nb[1], slot * ggml_element_size(v_[il]));
            vw = copy_into_view(ctx, ggml_transpose(ctx, vs), vd); // see graph_copy.h
        }
        ggml_build_forward_expand(gf, vw);
        // the copy's result is a view of the destination too: both are re-pointed when moved
        if (writes) writes->insert(writes->end(), {kd, kw, vd, vw});
        if (has_row_copy()) {
            ggml_tensor * rd = ggml_view_2d(ctx, vr_[il], row, cnt, vr_[il]->nb[1], slot * vr_[il]->nb[1]);
            ggml_tensor * rw = ggml_cpy(ctx, vs, rd);
            ggml_build_forward_expand(gf, rw);
            if (writes) writes->insert(writes->end(), {rd, rw});
        }
        done += cnt;
    }
}

bool kv_ring::move_writes(const std::vector<ggml_tensor *> & writes, int64_t pos0, int n) const {
    const int64_t slot = pos0 % capacity_;
    const size_t per_layer = (size_t) writes_per_layer();
    // a graph built before the row copy was added does not write it: it must be rebuilt
    if (slot + n > capacity_ || writes.size() != per_layer * (size_t) n_layer_) return false;
    for (size_t i = 0; i < writes.size(); i += per_layer) { // one write of n positions per layer, not a wrapped pair
        if (writes[i]->ne[1] != n) return false;
    }
    for (size_t i = 0; i < writes.size(); ++i) {
        ggml_tensor * t = writes[i];
        ggml_tensor * root = t->view_src;
        const size_t j = i % per_layer; // 0-1 key, 2-3 value, 4-5 the value's row copy
        const bool transposed_value = (j == 2 || j == 3) && !value_rows_;
        move_view(t, (size_t) slot * (transposed_value ? ggml_element_size(root) : root->nb[1]));
    }
    return true;
}

kv_ring::shape kv_ring::slot_shape(bool value, int n) const {
    const int64_t row = (int64_t) head_dim_ * n_head_kv_;
    return value && !value_rows_ ? shape{n, row} : shape{row, n};
}

ggml_tensor * kv_ring::slot_view(ggml_context * ctx, int il, bool value, int64_t pos0, int n) const {
    const int64_t slot = pos0 % capacity_;
    if (n <= 0 || slot + n > capacity_) throw std::logic_error("kv_ring: the slots of a saved range must not wrap");
    ggml_tensor * t = value ? v_[il] : k_[il];
    const shape s = slot_shape(value, n);
    const bool transposed = value && !value_rows_;
    return ggml_view_2d(ctx, t, s.ne0, s.ne1, t->nb[1], (size_t) slot * (transposed ? ggml_element_size(t) : t->nb[1]));
}

void kv_ring::save_slots(ggml_context * ctx, ggml_cgraph * gf, int64_t pos0, const std::vector<ggml_tensor *> & k,
                         const std::vector<ggml_tensor *> & v) const {
    const int n = (int) k.at(0)->ne[1];
    for (int il = 0; il < n_layer_; ++il) {
        ggml_build_forward_expand(gf, ggml_cpy(ctx, slot_view(ctx, il, false, pos0, n), k[(size_t) il]));
        ggml_build_forward_expand(gf, ggml_cpy(ctx, slot_view(ctx, il, true, pos0, n), v[(size_t) il]));
    }
}

void kv_ring::restore_slots(ggml_context * ctx, ggml_cgraph * gf, int64_t pos0, const std::vector<ggml_tensor *> & k,
                            const std::vector<ggml_tensor *> & v) const {
    const int n = (int) k.at(0)->ne[1];
    for (int64_t p = pos0; p < pos0 + n; ++p) {
        if (slot_pos_[(size_t) (p % capacity_)] != p) {
            throw std::logic_error("kv_ring::restore_slots: claim() the positions first");
        }
    }
    for (int il = 0; il < n_layer_; ++il) {
        ggml_build_forward_expand(gf, copy_into_view(ctx, k[(size_t) il], slot_view(ctx, il, false, pos0, n)));
        ggml_build_forward_expand(gf, copy_into_view(ctx, v[(size_t) il], slot_view(ctx, il, true, pos0, n)));
        if (has_row_copy()) { // the saved values are columns ([n, row]): transposed into rows
            ggml_tensor * r = vr_[(size_t) il];
            ggml_tensor * rows = ggml_view_2d(ctx, r, r->ne[0], n, r->nb[1], (size_t) (pos0 % capacity_) * r->nb[1]);
            ggml_build_forward_expand(gf, copy_into_view(ctx, ggml_transpose(ctx, v[(size_t) il]), rows));
        }
    }
}

ggml_tensor * kv_ring::keys(ggml_context * ctx, int il, int n_kv) const {
    ggml_tensor * k = k_[il];
    ggml_tensor * v3 = ggml_view_3d(ctx, k, head_dim_, n_head_kv_, n_kv, ggml_row_size(k->type, head_dim_), k->nb[1], 0);
    return ggml_permute(ctx, v3, 0, 2, 1, 3);
}

ggml_tensor * kv_ring::value_rows_copy(ggml_context * ctx, int il, int n_kv) const {
    if (!has_row_copy()) throw std::logic_error("kv_ring: no row copy of the values");
    ggml_tensor * v = vr_[(size_t) il];
    ggml_tensor * v3 = ggml_view_3d(ctx, v, head_dim_, n_head_kv_, n_kv, ggml_row_size(v->type, head_dim_), v->nb[1], 0);
    return ggml_permute(ctx, v3, 0, 2, 1, 3);
}

ggml_tensor * kv_ring::values(ggml_context * ctx, int il, int n_kv) const {
    ggml_tensor * v = v_[il];
    if (value_rows_) {
        ggml_tensor * v3 = ggml_view_3d(ctx, v, head_dim_, n_head_kv_, n_kv, ggml_row_size(v->type, head_dim_), v->nb[1], 0);
        return ggml_permute(ctx, v3, 0, 2, 1, 3);
    }
    return ggml_view_3d(ctx, v, n_kv, head_dim_, n_head_kv_, v->nb[1], v->nb[1] * head_dim_, 0);
}

} // namespace captionist
