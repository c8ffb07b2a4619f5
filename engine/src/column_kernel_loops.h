// column_kernel_loops.h - what every level of column_kernels.h shares: the prepared columns'
// layout, the lane sums, and the loops over rows, blocks and column groups around a level's
// arithmetic.
//
// Included only by the column_kernels_<level>.cpp files, each compiled for its instruction set
// (x86-64 with AVX2 at least). Everything here has internal linkage (an anonymous namespace), so
// every level gets its own copy, built for its own instruction set; nothing can be merged into a
// copy that runs on a CPU without it.
//
// A level is a struct with:
//   static constexpr int tile_rows;                 // F16 rows sharing each column load
//   static void prepare_f16(x, x_stride, k, n, cols);  // columns rounded to F16, as F32
//   template <int R, int NC> static void f16_tile(w, ldw, k, cols, out, ldo, i);
//   static constexpr bool offset_weights;           // Q8_0: weights made unsigned by +128 (VNNI)
//   static a_block load_a(const q8_block *);        // a weight block ready for dot()
//   static __m256i dot(const a_block &, __m256i b); // 8 lanes, each the sum of 4 products
#pragma once

#include "column_kernels.h"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace captionist {
namespace {

struct q8_block {
    uint16_t d;
    int8_t qs[32];
};
static_assert(sizeof(q8_block) == 34, "ggml's block_q8_0");

constexpr int GROUP_COLUMNS = 4;            // columns per pass over a tile or row
constexpr int64_t Q8_PREFETCH_BYTES = 4096; // Q8_0: how far ahead of a row's reads L2 is filled

inline float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_hadd_ps(s, s);
    s = _mm_hadd_ps(s, s);
    return _mm_cvtss_f32(s);
}

inline int32_t hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_hadd_epi32(s, s);
    s = _mm_hadd_epi32(s, s);
    return _mm_cvtsi128_si32(s);
}

// Lane t = the sum of v[t]'s lanes.
inline __m256 hsum8(const __m256 v[8]) {
    const __m256 s0123 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const __m256 s4567 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
    // each 128-bit half holds vectors 0-3 (4-7): the low lanes' sums, then the high lanes'
    return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31));
}

inline float f16_to_f32(uint16_t h) {
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

inline float round_f16(float f) {
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
}

// ---- F16 ----------------------------------------------------------------------------------------

template <class Level, int R>
void f16_rows(const uint16_t * w, size_t ldw, int64_t k, const float * cols, int n, float * out, size_t ldo, int64_t i) {
    for (int j0 = 0; j0 < n; j0 += GROUP_COLUMNS) {
        const float * c = cols + (size_t) j0 * (size_t) k;
        float * o = out + (size_t) j0 * ldo;
        switch (n - j0 < GROUP_COLUMNS ? n - j0 : GROUP_COLUMNS) {
        case 1: Level::template f16_tile<R, 1>(w, ldw, k, c, o, ldo, i); break;
        case 2: Level::template f16_tile<R, 2>(w, ldw, k, c, o, ldo, i); break;
        case 3: Level::template f16_tile<R, 3>(w, ldw, k, c, o, ldo, i); break;
        default: Level::template f16_tile<R, 4>(w, ldw, k, c, o, ldo, i); break;
        }
    }
}

template <class Level>
void f16_columns(const void * w, size_t w_row_bytes, int64_t k, const float * x, size_t x_stride, int n, float * out,
                 size_t out_stride, int64_t r0, int64_t r1, void * scratch) {
    float * cols = (float *) scratch;
    Level::prepare_f16(x, x_stride, k, n, cols);
    const uint16_t * wp = (const uint16_t *) w;
    const size_t ldw = w_row_bytes / sizeof(uint16_t);
    constexpr int R = Level::tile_rows;
    int64_t i = r0;
    for (; i + R <= r1; i += R) f16_rows<Level, R>(wp, ldw, k, cols, n, out, out_stride, i);
    for (; i < r1; ++i) f16_rows<Level, 1>(wp, ldw, k, cols, n, out, out_stride, i);
}

// ---- Q8_0 ---------------------------------------------------------------------------------------

// Prepared columns: quantized as ggml quantizes a product's columns for Q8_0 weights (per block of
// 32: d = amax / 127 stored as F16, q = round-to-even(x * 127 / amax)), and 128 * sum(q) per block
// for levels that offset the weights to unsigned bytes (what the offset adds, taken off again).
struct q8_columns {
    int8_t * qs;  // [n][nb][32]
    float * d;    // [n][nb]
    int32_t * cs; // [n][nb]
};

inline q8_columns q8_layout(void * scratch, int64_t nb, int n) {
    q8_columns c;
    c.qs = (int8_t *) scratch;
    c.d = (float *) (c.qs + (size_t) n * (size_t) nb * 32);
    c.cs = (int32_t *) (c.d + (size_t) n * (size_t) nb);
    return c;
}

// Quantizes column j's blocks (amax / 127 and the rounded quotients of the 32 values at src).
inline void prepare_q8(const float * x, size_t x_stride, int64_t nb, int n, const q8_columns & c) {
    const __m256 sign_off = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int j = 0; j < n; ++j) {
        const float * src = x + (size_t) j * x_stride;
        for (int64_t l = 0; l < nb; ++l) {
            __m256 v[4];
            __m256 m = _mm256_setzero_ps();
            for (int q = 0; q < 4; ++q) {
                v[q] = _mm256_loadu_ps(src + l * 32 + q * 8);
                m = _mm256_max_ps(m, _mm256_and_ps(v[q], sign_off));
            }
            __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
            m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
            const float amax = _mm_cvtss_f32(m4);
            const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
            const __m256 s = _mm256_set1_ps(id);
            __m256i q32[4];
            for (int q = 0; q < 4; ++q)
                q32[q] = _mm256_cvtps_epi32(
                    _mm256_round_ps(_mm256_mul_ps(v[q], s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(q32[0], q32[1]), _mm256_add_epi32(q32[2], q32[3]));
            const __m256i q16a = _mm256_packs_epi32(q32[0], q32[1]);
            const __m256i q16b = _mm256_packs_epi32(q32[2], q32[3]);
            const size_t b = (size_t) j * (size_t) nb + (size_t) l;
            const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16a, q16b), perm);
            _mm256_storeu_si256((__m256i *) (c.qs + b * 32), q8);
            c.d[b] = round_f16(amax / 127.0f);
            c.cs[b] = 128 * hsum_epi32(sum);
        }
    }
}

// One row times NC columns (column j's blocks from index j * nb of the prepared arrays). Blocks go
// in groups of 8: each column's 8 block dots are reduced to one vector of 8 sums, which takes the 8
// scale products in one multiply.
template <class Level, int NC>
inline void q8_row(const q8_block * a, int64_t nb, const int8_t * qs, const float * d, const int32_t * cs, float * out,
                   size_t ldo) {
    __m256 acc[NC];
    for (int j = 0; j < NC; ++j) acc[j] = _mm256_setzero_ps();
    int64_t l = 0;
    for (; l + 8 <= nb; l += 8) {
        __m256i s[NC][2];
        alignas(16) uint16_t da16[8];
        for (int half = 0; half < 2; ++half) {
            __m256i h[NC][2];
            for (int pair = 0; pair < 2; ++pair) {
                __m256i p[NC][2];
                for (int b = 0; b < 2; ++b) {
                    const int64_t blk = l + half * 4 + pair * 2 + b;
                    _mm_prefetch((const char *) (a + blk) + Q8_PREFETCH_BYTES, _MM_HINT_T1);
                    da16[half * 4 + pair * 2 + b] = a[blk].d;
                    const auto ab = Level::load_a(a + blk);
                    for (int j = 0; j < NC; ++j)
                        p[j][b] = Level::dot(ab, _mm256_loadu_si256((const __m256i *) (qs + ((size_t) j * nb + blk) * 32)));
                }
                for (int j = 0; j < NC; ++j) h[j][pair] = _mm256_hadd_epi32(p[j][0], p[j][1]);
            }
            for (int j = 0; j < NC; ++j) s[j][half] = _mm256_hadd_epi32(h[j][0], h[j][1]);
        }
        const __m256 da = _mm256_cvtph_ps(_mm_load_si128((const __m128i *) da16));
        for (int j = 0; j < NC; ++j) {
            // lanes 0-3 of each half hold blocks 0-3 and 4-7 of this group, split over the halves
            __m256i t = _mm256_add_epi32(_mm256_permute2x128_si256(s[j][0], s[j][1], 0x20),
                                         _mm256_permute2x128_si256(s[j][0], s[j][1], 0x31));
            if constexpr (Level::offset_weights) {
                t = _mm256_sub_epi32(t, _mm256_loadu_si256((const __m256i *) (cs + (size_t) j * nb + l)));
            }
            const __m256 scale = _mm256_mul_ps(da, _mm256_loadu_ps(d + (size_t) j * nb + l));
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), scale, acc[j]);
        }
    }
    float tail[NC];
    for (int j = 0; j < NC; ++j) tail[j] = 0.0f;
    for (; l < nb; ++l) {
        const auto ab = Level::load_a(a + l);
        const float da = f16_to_f32(a[l].d);
        for (int j = 0; j < NC; ++j) {
            const size_t b = (size_t) j * nb + l;
            int32_t dot = hsum_epi32(Level::dot(ab, _mm256_loadu_si256((const __m256i *) (qs + b * 32))));
            if constexpr (Level::offset_weights) dot -= cs[b];
            tail[j] += da * d[b] * (float) dot;
        }
    }
    for (int j = 0; j < NC; ++j) out[(size_t) j * ldo] = hsum_ps(acc[j]) + tail[j];
}

template <class Level>
void q8_0_columns(const void * w, size_t w_row_bytes, int64_t k, const float * x, size_t x_stride, int n, float * out,
                  size_t out_stride, int64_t r0, int64_t r1, void * scratch) {
    const int64_t nb = k / 32;
    const q8_columns c = q8_layout(scratch, nb, n);
    prepare_q8(x, x_stride, nb, n, c);
    for (int64_t i = r0; i < r1; ++i) {
        const q8_block * a = (const q8_block *) ((const char *) w + (size_t) i * w_row_bytes);
        for (int j0 = 0; j0 < n; j0 += GROUP_COLUMNS) {
            const size_t b0 = (size_t) j0 * (size_t) nb;
            const int8_t * qs = c.qs + b0 * 32;
            float * o = out + (size_t) j0 * out_stride + (size_t) i;
            switch (n - j0 < GROUP_COLUMNS ? n - j0 : GROUP_COLUMNS) {
            case 1: q8_row<Level, 1>(a, nb, qs, c.d + b0, c.cs + b0, o, out_stride); break;
            case 2: q8_row<Level, 2>(a, nb, qs, c.d + b0, c.cs + b0, o, out_stride); break;
            case 3: q8_row<Level, 3>(a, nb, qs, c.d + b0, c.cs + b0, o, out_stride); break;
            default: q8_row<Level, 4>(a, nb, qs, c.d + b0, c.cs + b0, o, out_stride); break;
            }
        }
    }
}

} // namespace
} // namespace captionist
