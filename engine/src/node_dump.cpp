#include "node_dump.h"

#include <ggml-backend.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace captionist {

namespace {

void put_u16_string(std::FILE * f, const char * s) {
    const size_t n = std::strlen(s);
    const uint16_t len = (uint16_t) (n < 65535 ? n : 65535);
    std::fwrite(&len, sizeof len, 1, f);
    std::fwrite(s, 1, len, f);
}

// type, shape and strides (the strides decide which kernel a backend picks for a copy)
void put_layout(std::FILE * f, const ggml_tensor * t) {
    const int32_t type = (int32_t) t->type;
    std::fwrite(&type, sizeof type, 1, f);
    std::fwrite(t->ne, sizeof(int64_t), 4, f);
    const int64_t nb[4] = {(int64_t) t->nb[0], (int64_t) t->nb[1], (int64_t) t->nb[2], (int64_t) t->nb[3]};
    std::fwrite(nb, sizeof(int64_t), 4, f);
}

bool is_view(const ggml_tensor * t) {
    return t->op == GGML_OP_VIEW || t->op == GGML_OP_RESHAPE || t->op == GGML_OP_PERMUTE ||
           t->op == GGML_OP_TRANSPOSE || t->op == GGML_OP_NONE;
}

const ggml_tensor * base(const ggml_tensor * t) {
    while (t->view_src) t = t->view_src;
    return t;
}

} // namespace

node_dump * node_dump::from_env() {
    static node_dump * dump = [] () -> node_dump * {
        const char * path = std::getenv("CAPTIONIST_DUMP_NODES");
        if (!path || !*path) return nullptr;
        std::FILE * f = std::fopen(path, "wb");
        if (!f) return nullptr; // a development aid: no file, no dump
        const char * n = std::getenv("CAPTIONIST_DUMP_COMPUTES");
        const long long max = n && *n ? std::atoll(n) : 4;
        return new node_dump(f, max > 0 ? max : 4); // lives as long as the process
    }();
    return dump;
}

bool node_dump::begin_compute() {
    std::lock_guard<std::mutex> lock(mu_);
    if (compute_ + 1 >= max_computes_) return false;
    ++compute_;
    node_ = 0;
    index_.clear();
    written_.clear();
    return true;
}

bool node_dump::eval(ggml_tensor * t, bool ask, void * self) {
    if (is_view(t)) return ask ? false : true;
    if (ask) return true; // observe every computed node
    static_cast<node_dump *>(self)->write(t);
    return true;
}

void node_dump::write(const ggml_tensor * t) {
    // the output as F32 in ggml's element order; a strided view (a copy into cache slots) is read
    // over its span and gathered
    std::vector<float> values;
    uint8_t has = 0;
    const size_t es = ggml_type_size(t->type);
    if (t->data && t->buffer && ggml_blck_size(t->type) == 1 &&
        (t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16 || t->type == GGML_TYPE_I32)) {
        std::vector<uint8_t> raw(ggml_nbytes(t));
        ggml_backend_tensor_get(t, raw.data(), 0, raw.size());
        values.reserve((size_t) ggml_nelements(t));
        for (int64_t i3 = 0; i3 < t->ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < t->ne[2]; ++i2)
                for (int64_t i1 = 0; i1 < t->ne[1]; ++i1)
                    for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
                        const uint8_t * p = raw.data() + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
                        float v = 0.0f;
                        if (t->type == GGML_TYPE_F32) std::memcpy(&v, p, es);
                        else if (t->type == GGML_TYPE_F16) v = ggml_fp16_to_fp32(*(const ggml_fp16_t *) p);
                        else v = (float) *(const int32_t *) p;
                        values.push_back(v);
                    }
        has = 1;
    }
    std::lock_guard<std::mutex> lock(mu_);
    const uint32_t compute = (uint32_t) compute_, node = node_++;
    std::fwrite("CNDR", 1, 4, f_);
    std::fwrite(&compute, sizeof compute, 1, f_);
    std::fwrite(&node, sizeof node, 1, f_);
    put_u16_string(f_, ggml_op_desc(t));
    put_u16_string(f_, t->name);
    uint8_t n_src = 0;
    while (n_src < GGML_MAX_SRC && t->src[n_src]) ++n_src;
    std::fwrite(&n_src, 1, 1, f_);
    for (uint8_t i = 0; i < n_src; ++i) {
        const ggml_tensor * s = t->src[i];
        while (is_view(s) && s->view_src) s = s->view_src; // the node a view reads
        int32_t at = -1;
        if (const auto it = index_.find(s); it != index_.end()) {
            at = (int32_t) it->second;
        } else if (const auto w = written_.find(base(s)); w != written_.end()) {
            at = (int32_t) w->second; // e.g. a cache view read after this compute's write into it
        }
        std::fwrite(&at, sizeof at, 1, f_);
        put_u16_string(f_, t->src[i]->name);
        put_layout(f_, t->src[i]);
    }
    index_[t] = node;
    if (t->view_src) written_[base(t)] = node; // a copy into a view of a cache or state tensor
    put_layout(f_, t);
    std::fwrite(&has, 1, 1, f_);
    const uint64_t n = values.size();
    std::fwrite(&n, sizeof n, 1, f_);
    if (n) std::fwrite(values.data(), sizeof(float), n, f_);
    std::fflush(f_);
}

} // namespace captionist
