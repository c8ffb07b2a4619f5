// persistent_tensors.h - a few tensors a stream keeps on its device between graphs.
//
// State that every graph of a stream reads (the decoder's delay conditioning, the audio
// embeddings waiting for the decoder) lives here instead of being uploaded from the host per
// graph: graphs take these tensors as operands and write them with ggml_cpy.
#pragma once

#include <ggml-backend.h>
#include <ggml.h>

#include <cstddef>
#include <cstdint>

namespace captionist {

class persistent_tensors {
public:
    explicit persistent_tensors(int max_tensors);
    persistent_tensors(const persistent_tensors &) = delete;
    persistent_tensors & operator=(const persistent_tensors &) = delete;
    ~persistent_tensors();

    // Declares a 2-D tensor; all must be declared before alloc().
    ggml_tensor * add(ggml_type type, int64_t ne0, int64_t ne1, const char * name);
    // Allocates every declared tensor on `buft`, zero-filled. Throws when the memory is not there.
    void alloc(ggml_backend_buffer_type_t buft);
    // Zero-fills every tensor again (after alloc()).
    void clear();
    size_t bytes() const;

private:
    ggml_context * ctx_ = nullptr;
    ggml_backend_buffer_t buf_ = nullptr;
};

} // namespace captionist
