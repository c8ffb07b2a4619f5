#include "persistent_tensors.h"

#include <ggml-alloc.h>

#include <stdexcept>

namespace captionist {

persistent_tensors::persistent_tensors(int max_tensors) {
    ggml_init_params p = {ggml_tensor_overhead() * (size_t) max_tensors, nullptr, /*no_alloc =*/true};
    ctx_ = ggml_init(p);
    if (!ctx_) throw std::runtime_error("out of memory creating a stream's state context");
}

persistent_tensors::~persistent_tensors() {
    if (buf_) ggml_backend_buffer_free(buf_);
    ggml_free(ctx_);
}

ggml_tensor * persistent_tensors::add(ggml_type type, int64_t ne0, int64_t ne1, const char * name) {
    if (buf_) throw std::logic_error("persistent_tensors::add after alloc");
    ggml_tensor * t = ggml_new_tensor_2d(ctx_, type, ne0, ne1);
    if (!t) throw std::logic_error("persistent_tensors: more tensors than declared");
    ggml_set_name(t, name);
    return t;
}

void persistent_tensors::alloc(ggml_backend_buffer_type_t buft) {
    buf_ = ggml_backend_alloc_ctx_tensors_from_buft(ctx_, buft);
    if (!buf_) throw std::runtime_error("not enough memory for a stream's state");
    ggml_backend_buffer_clear(buf_, 0);
}

void persistent_tensors::clear() {
    if (buf_) ggml_backend_buffer_clear(buf_, 0);
}

size_t persistent_tensors::bytes() const {
    return buf_ ? ggml_backend_buffer_get_size(buf_) : 0;
}

} // namespace captionist
