// quantize.h - rewrite a Captionist GGUF with quantized matrices (ggml's quantization routines).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace captionist {

// type_name: Q8_0, Q5_K, Q4_K, Q6_K, F16, Q4_K_M (Q4_K with token embedding and attn_v / some
// ffn_down at Q6_K; the recommended default) or Q5_K_M. Norms, biases, conv kernels, ada-norm and
// frontend tables keep their type; a matrix whose rows do not fit the block size falls back to
// Q8_0, then F16. Works row-chunk by row-chunk (bounded memory); writes to a temporary file and
// renames it, so a failure leaves no partial output. `progress(done_bytes, total_bytes)` may be
// empty. Throws std::runtime_error / std::invalid_argument with a clear message.
void quantize_model(const std::string & src, const std::string & dst, const std::string & type_name, int n_threads,
                    const std::function<void(size_t, size_t)> & progress);

} // namespace captionist
