// model_base.h - what every architecture's model shares: its info, and its weights on one device.
//
// A per-architecture model (models/<family>/) derives from model_base, binds its tensors from the
// weights context and implements new_stream(). Weights are loaded once (gguf_file.h) and are
// read-only afterwards; any number of streams on any threads share them.
#pragma once

#include <captionist/engine.h>

#include <ggml-backend.h>
#include <ggml.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace captionist {

struct column_kernel_set;

struct model_base : public model {
    model_info info_;

    ggml_backend_dev_t device = nullptr;   // where the weights live and graphs run
    std::string backend_name;              // "CPU", "CUDA0", "Metal", ...
    int n_threads = 1;
    bool auto_threads = false;             // n_threads was 0: each new stream re-applies default_n_threads()
    ggml_context * ctx_w = nullptr;        // tensor metadata of all weights (no data)
    std::vector<ggml_backend_buffer_t> bufs_w; // the weights' data: on `device`, mapped, or repacked
    std::shared_ptr<const void> mapping;   // keeps the mapped file alive while bufs_w point into it
    std::vector<std::shared_ptr<const void>> repack_mappings; // mapped repack caches weights point into
    std::set<const ggml_tensor *> matrices; // weights used only as the first operand of products
    size_t weight_bytes = 0;
    const column_kernel_set * column_kernels = nullptr; // build_weight_product's CPU kernels, if any

    // Product twins (request_product_twin in gguf_file.h): a weight that other ops also read by row
    // gets a second, repacked copy for its products where ggml's CPU backend has that layout.
    struct twin_request {
        ggml_tensor * source;
        ggml_tensor ** slot; // set by weights_load: the twin, or `source` where there is none
    };
    std::vector<twin_request> twin_requests;
    ggml_context * ctx_twins = nullptr; // the twins' metadata

    model_base() = default;
    ~model_base() override;

    const model_info & info() const override { return info_; }
};

} // namespace captionist
