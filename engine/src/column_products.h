// column_products.h - a weight times activations, with our few-column CPU kernels where they win.
//
// Every weight product of both families goes through build_weight_product(). On the CPU, an F16
// or Q8_0 weight read in its plain layout (mapped or loaded, not repacked) times 2 (1 on Intel
// CPUs, or as CAPTIONIST_ONE_COLUMN says) to the level's most (column_kernel_set) F32 columns
// becomes a ggml custom op running column_kernels.h; everything else, and every other backend, is
// ggml_mul_mat.
#pragma once

#include "column_kernels.h"

#include <ggml-backend.h>
#include <ggml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace captionist {

// The kernels for a model on `dev`: the best level the CPU backend ggml loaded reports (so a
// forced ggml CPU variant also picks ours), or none off the CPU, off x86-64, or when
// CAPTIONIST_COLUMN_KERNELS=0. CAPTIONIST_COLUMN_KERNELS=avx2 / avx512_vnni asks for one level
// (none where the CPU lacks it).
const column_kernel_set * choose_column_kernels(ggml_backend_dev_t dev);

// The kernel levels this CPU can run, best first (avx512_vnni, avx2).
std::vector<const column_kernel_set *> column_kernel_levels();

// The fewest columns the kernels take in this process: 1 on Intel CPUs, else 2; the environment's
// CAPTIONIST_ONE_COLUMN=ours / ggml decides instead (read once).
int column_kernels_min_columns();

// Products computed through the kernels since the process started (every model and stream).
int64_t column_product_count();

struct model_base;

// Whether build_weight_product would take `kernels` for w times x (see above).
bool column_kernels_apply(const column_kernel_set * kernels, const ggml_tensor * w, const ggml_tensor * x);

// w [k, m] times x [k, n] -> F32 [m, n], as ggml_mul_mat(ctx, w, x).
ggml_tensor * build_weight_product(ggml_context * ctx, const column_kernel_set * kernels, ggml_tensor * w,
                                   ggml_tensor * x);
// The same with the model's kernels (model_base::column_kernels).
ggml_tensor * build_weight_product(ggml_context * ctx, const model_base & m, ggml_tensor * w, ggml_tensor * x);

// For tests and bench/bench_column_kernels.py: a product on the CPU backend through the kernels of
// `level` ("avx512_vnni", "avx2") or ggml_mul_mat ("ggml").
struct weight_product_job {
    std::vector<float> w; // F32 [w_batches][m][k], stored as `type` ("f16", "q8_0")
    int64_t w_batches = 1, m = 0, k = 0;
    std::vector<float> x; // F32 [x_batches][n][k]; x_batches a multiple of w_batches (broadcast)
    int64_t x_batches = 1, n = 0;
    std::string type, level;
    int n_threads = 1;
    // timing: `copies` weights hold the same values in separate memory (more than the caches hold
    // makes the products read memory); `repeat` runs of the graph are timed
    int copies = 1, repeat = 0;
    // attention's layouts: w the first m rows of taller batches (a cache window), x a permuted
    // view whose columns and batches interleave (queries by head)
    bool views = false;
};
// Returns F32 [x_batches][n][m] (the first copy's); `seconds` gets the time of the repeats.
std::vector<float> run_weight_product(const weight_product_job & job, double * seconds = nullptr);

} // namespace captionist
