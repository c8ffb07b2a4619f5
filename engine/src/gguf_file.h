// gguf_file.h - shared loading machinery: open and validate a GGUF, read its keys, bind and load tensors.
//
// Every architecture's loader uses these pieces the same way:
//   gguf_file f(path);                       // magic, header, truncation; tensor metadata in f.ctx_w
//   hparam_reader r(f.gguf);  r.u32("...")   // typed keys with one-line errors
//   tensor_binder b(f.ctx_w); b.get(name, shape)  ... b.check_all_used(what)
//   m.ctx_w = f.release_tensors(); bind...;   // shapes checked before any allocation
//   weights_load(m, f, opts);                // pick the device, allocate, read the data
#pragma once

#include "model_base.h"

#include <gguf.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace captionist {

// ggml's log goes through this: silent unless CAPTIONIST_GGML_LOG is set. Loads backends once.
void backend_init_once();

class gguf_file {
public:
    // Throws std::runtime_error: missing file, not a regular file, not a GGUF, corrupt header, tensor
    // data past the end.
    explicit gguf_file(const std::string & path);
    ~gguf_file();
    gguf_file(const gguf_file &) = delete;
    gguf_file & operator=(const gguf_file &) = delete;

    // Hands the tensor metadata context to a model (the file keeps the GGUF keys).
    ggml_context * release_tensors();

    std::string path;
    gguf_context * gguf = nullptr;
    ggml_context * ctx_w = nullptr;
};

class hparam_reader {
public:
    explicit hparam_reader(const gguf_context * ctx) : ctx_(ctx) {}

    uint32_t u32(const char * key) const;
    int32_t i32(const char * key) const;
    float f32(const char * key) const; // must also be finite
    std::string str(const char * key) const;
    std::vector<uint32_t> u32_array(const char * key) const;
    std::vector<uint8_t> u8_array(const char * key) const;
    std::vector<std::string> str_array(const char * key) const;
    bool has(const char * key) const { return gguf_find_key(ctx_, key) >= 0; }
    const gguf_context * context() const { return ctx_; }

private:
    int64_t find(const char * key, gguf_type type) const;
    int64_t find_array(const char * key, gguf_type elem) const;
    const gguf_context * ctx_;
};

class tensor_binder {
public:
    explicit tensor_binder(ggml_context * ctx) : ctx_(ctx) {}

    // Looks up `name`, checks its shape (ggml order) and, if `f32_only`, its type.
    ggml_tensor * get(const std::string & name, std::vector<int64_t> shape, bool f32_only = false);
    // get() for a weight matrix the model uses only as the first operand of ggml_mul_mat: the CPU
    // backend may then store it re-laid out for its faster kernels (no other op could read it).
    ggml_tensor * matrix(const std::string & name, std::vector<int64_t> shape);
    const std::set<const ggml_tensor *> & matrices() const { return matrices_; }
    // Throws if the file holds tensors no get() asked for (`what` names the expected model).
    void check_all_used(const std::string & what) const;

private:
    ggml_context * ctx_;
    std::set<std::string> used_;
    std::set<const ggml_tensor *> matrices_;
};

// The most compute threads a model accepts (model_load_options::n_threads).
constexpr int MAX_THREADS = 256;

// With m.ctx_w = f.release_tensors() bound and checked (and m.matrices from the binder): checks
// opts.n_threads (0 or 1..MAX_THREADS, else std::invalid_argument), picks the device for
// `opts.backend` and places every tensor:
//   - matrices the CPU backend's extra buffer types take (ggml's repacked Q4_0/Q4_K/IQ4_NL layouts)
//     are read into those buffers;
//   - where the device can use host memory (CPU, Metal) and opts.use_mmap, the rest point into the
//     mapped file (no copy, opened in milliseconds);
//   - otherwise they are read into a buffer on the device.
// Repacked matrices are read on up to m.n_threads threads (ggml re-lays them out one tensor at a
// time). With opts.repack_cache_dir (and mapping), ggml's CPU_REPACK matrices come from their
// repack cache (repack_cache.h) when it is this load's, else are repacked and the cache written.
// Fills m.device, backend_name, n_threads, bufs_w, mapping, repack_mappings, weight_bytes and the
// info_ fields.
void weights_load(model_base & m, const gguf_file & f, const model_load_options & opts);

// Asks weights_load (call it before) for a product twin of `source`: a weight that the model also
// reads by row, such as a token embedding tied to the output head. ggml cannot read rows of a
// repacked tensor, so `source` itself stays plain (mapped); where the CPU backend repacks its type,
// weights_load adds a repacked copy read from the same bytes and sets *slot to it, for the products.
// Elsewhere (GPUs, F16/Q8_0 on x86, CAPTIONIST_NO_REPACK) *slot is `source`. The twin costs its
// size in memory, but the products no longer touch the mapped copy's pages.
void request_product_twin(model_base & m, ggml_tensor * source, ggml_tensor ** slot);

// Copies an F32 tensor's data to the host.
std::vector<float> tensor_to_host(const ggml_tensor * t);

} // namespace captionist
