// column_kernels.h - CPU kernels for a weight matrix times a few F32 columns (1 to 16).
//
// A streaming step multiplies every weight by only a few columns (Voxtral's encoder: 4 frames per
// 80 ms). ggml 0.20.2 runs those through llamafile's tiles, which convert and sign-fix every
// block once per (row, column) pair and leave the core computing while its memory reads wait: on
// a Zen 4 core they reach 9 GB/s (F16) and 6 GB/s (Q8_0) where its one-column kernel streams
// 19-23 GB/s. These kernels read each weight block once for all the columns and prefetch the next
// rows into L2, so the step runs near the memory's speed. On Intel Xeons they also beat ggml's
// one-column kernel (a decoder step), which reads one row at a time (column_products.cpp).
//
// Each instruction-set level lives in its own file, compiled for that level only; nothing here or
// there runs before choose_column_kernels() (column_products.h) has checked the CPU.
//
// The arithmetic is ggml's: F16 weights meet the columns rounded to F16 (as ggml_mul_mat rounds
// them), Q8_0 weights meet the columns quantized to Q8_0 with ggml's rounding; only the order in
// which F32 partial sums are added differs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace captionist {

// Rows [r0, r1) of `w` (row i at w + i * w_row_bytes, k values per row) times n columns of x
// (column j at x + j * x_stride floats, k values) into out[j * out_stride + i]. `scratch` holds
// column_scratch_bytes(k, n) bytes, 64-byte aligned, private to the calling thread: the kernel
// prepares the columns there first. Q8_0 kernels need k % 32 == 0.
using column_kernel_fn = void (*)(const void * w, size_t w_row_bytes, int64_t k, const float * x, size_t x_stride,
                                  int n, float * out, size_t out_stride, int64_t r0, int64_t r1, void * scratch);

// Large enough for either type's prepared columns.
size_t column_scratch_bytes(int64_t k, int n);

struct column_kernel_set {
    const char * name; // "avx512_vnni", "avx2"
    column_kernel_fn f16;
    column_kernel_fn q8_0;
    // the most columns each takes: beyond them ggml's tiles are about as fast
    // (bench/bench_column_kernels.py, bench/README.md)
    int f16_max_columns;
    int q8_0_max_columns;
};

// Defined only where the file for that level is compiled (x86-64); callers check the CPU first.
extern const column_kernel_set column_kernels_avx2;
extern const column_kernel_set column_kernels_avx512_vnni;

} // namespace captionist
