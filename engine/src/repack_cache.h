// repack_cache.h - ggml's repacked weight layout kept in a file, so that a model whose CPU products
// use it opens by mapping that file instead of re-laying out its matrices on every load.
//
// ggml's CPU backend multiplies some types (Q4_0, Q4_K and IQ4_NL on x86; more on Arm) fastest in an
// interleaved layout, which it builds inside ggml_backend_tensor_set: CPU work, into fresh memory
// that the OS must fault in (about 1.2 s for the 2.5 GB of a 4B Q4_K model on 2 cores, of which
// 0.75 s is only the page faults). A cache file holds that layout byte for byte for one model file,
// ggml build and CPU backend:
//
//   "CAPTRPK1", then the header's length (u64, little-endian), then the header: text lines naming the
//   format, ggml's version and commit, the buffer type, the CPU backend's features, the model file's
//   absolute path, size and modification time, and for every tensor its name, type, shape, offset
//   and size; then each tensor's bytes at a 4096-aligned offset. The file's size ends the last one.
//
// A cache is used only when its header is exactly the one this load would write and its size is
// right; the caller then also repacks one tensor afresh and compares it with its cached copy, which
// catches a layout ggml changed without changing its version. Other damage inside the data (a flipped
// bit) is not detected, as it is not in the model file itself.
//
// Files are written whole under a temporary name and renamed into place, so a reader sees either
// the old file or the new one; a write that fails (disk full, folder not writable) removes its
// temporary file and leaves the model loaded as it was.
//
// A cache is named after its model file's path and the layout, not after the ggml build, so a new
// build rewrites it in place; what could stay for ever is swept (sweep()) on every load that names
// the folder: the caches of model files that are gone, and those left by a process that died while
// writing one.
#pragma once

#include "mapped_file.h"

#include <ggml-backend.h>
#include <ggml.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace captionist {

class repack_cache {
public:
    // The cache in folder `dir` for the tensors of `model_path` that buffer type `buft` holds,
    // `tensors` in the order they are placed. Throws std::runtime_error if the model file cannot be
    // looked at (it has just been opened, so only when it vanished).
    repack_cache(const std::string & dir, const std::string & model_path, ggml_backend_buffer_type_t buft,
                 const std::vector<ggml_tensor *> & tensors);

    // The file-name prefix every cache of `model_path` starts with (its folder not included), so
    // that deleting a model can delete its caches.
    static std::string file_prefix(const std::string & model_path);

    const std::string & path() const { return path_; }
    size_t size() const { return size_; }
    size_t offset(size_t i) const { return offsets_[i]; }

    // The cache mapped, when it is there and its header and size are this load's; else nullptr.
    std::shared_ptr<mapped_file> open() const;

    // Writes the tensors' current bytes (host memory: the repacked buffer) as the cache file.
    // Throws std::runtime_error saying why it could not.
    void write() const;

    // Removes from folder `dir` the files no load can use again, and returns their paths:
    //   - a cache whose model file is gone while the model's folder is still there (a folder that is
    //     not there may be a drive that is not plugged in);
    //   - a file named as a cache that is not one (a cache only ever appears whole, by a rename);
    //   - a temporary file of a write not touched for STALE_TEMP_S (its process died).
    // A file that cannot be removed (Windows: another process maps it) stays. Never throws.
    static std::vector<std::string> sweep(const std::string & dir);

    static constexpr int64_t STALE_TEMP_S = 3600;

private:
    std::string dir_, path_, header_;
    std::vector<ggml_tensor *> tensors_;
    std::vector<size_t> offsets_;
    size_t size_ = 0;
};

} // namespace captionist
