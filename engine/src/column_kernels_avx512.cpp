// column_kernels_avx512.cpp - column_kernels.h for CPUs with AVX-512 F/BW/VL and VNNI (Ice Lake,
// Zen 4 and later). Compiled with those instruction sets enabled, so only intrinsics and code with
// internal linkage live here (an inline function shared with other files could be merged into
// them and run on a CPU without AVX-512).
#include "column_kernels.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 headers start some intrinsics from _mm512_undefined_*() and then warn that it is
// uninitialized (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

namespace captionist {
namespace {

struct q8_block {
    uint16_t d;
    int8_t qs[32];
};
static_assert(sizeof(q8_block) == 34, "ggml's block_q8_0");

constexpr int TILE_ROWS = 4;             // F16: rows sharing each column load
constexpr int GROUP_COLUMNS = 4;         // columns per pass over a tile or row
constexpr int64_t Q8_PREFETCH_BYTES = 4096; // Q8_0: how far ahead of a row's reads L2 is filled

// ---- F16 ----------------------------------------------------------------------------------------

// The upper and lower halves of a 16-lane sum added: 8 lanes with the same total.
inline __m256 fold(__m512 a) {
    return _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
}

// Lane t = the sum of v[t]'s lanes.
inline __m256 hsum8(const __m256 v[8]) {
    const __m256 s0123 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const __m256 s4567 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
    // each 128-bit half holds vectors 0-3 (4-7): the low lanes' sums, then the high lanes'
    return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31));
}

// The columns rounded to F16 and back (ggml_mul_mat rounds them so for F16 weights).
void prepare_f16(const float * x, size_t x_stride, int64_t k, int n, float * cols) {
    for (int j = 0; j < n; ++j) {
        const float * src = x + (size_t) j * x_stride;
        float * dst = cols + (size_t) j * (size_t) k;
        int64_t i = 0;
        for (; i + 16 <= k; i += 16) {
            const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(h));
        }
        if (i < k) {
            const __mmask16 m = (__mmask16) ((1u << (k - i)) - 1u);
            const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(h));
        }
    }
}

// R rows from row i times NC columns (column j at cols + j * k).
template <int R, int NC>
inline void f16_tile(const uint16_t * w, size_t ldw, int64_t k, const float * cols, float * out, size_t ldo, int64_t i) {
    __m512 acc[R][NC];
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < NC; ++j) acc[r][j] = _mm512_setzero_ps();
    int64_t kk = 0;
    for (; kk + 16 <= k; kk += 16) {
        __m512 a[R];
        for (int r = 0; r < R; ++r) {
            const uint16_t * p = w + (size_t) (i + r) * ldw + kk;
            if (R > 1) _mm_prefetch((const char *) (p + (size_t) R * ldw), _MM_HINT_T1); // the next tile
            a[r] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) p));
        }
        for (int j = 0; j < NC; ++j) {
            const __m512 b = _mm512_loadu_ps(cols + (size_t) j * (size_t) k + kk);
            for (int r = 0; r < R; ++r) acc[r][j] = _mm512_fmadd_ps(a[r], b, acc[r][j]);
        }
    }
    if (kk < k) {
        const __mmask16 m = (__mmask16) ((1u << (k - kk)) - 1u);
        __m512 a[R];
        for (int r = 0; r < R; ++r)
            a[r] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w + (size_t) (i + r) * ldw + kk));
        for (int j = 0; j < NC; ++j) {
            const __m512 b = _mm512_maskz_loadu_ps(m, cols + (size_t) j * (size_t) k + kk);
            for (int r = 0; r < R; ++r) acc[r][j] = _mm512_fmadd_ps(a[r], b, acc[r][j]);
        }
    }
    // the R * NC sums, eight at a time: short rows (attention over 64-wide heads) spend as long
    // summing lanes as multiplying
    alignas(32) float sums[8];
    for (int g = 0; g < R * NC; g += 8) {
        __m256 v[8];
        for (int t = 0; t < 8; ++t) {
            const int a = g + t;
            v[t] = a < R * NC ? fold(acc[a / NC][a % NC]) : _mm256_setzero_ps();
        }
        _mm256_store_ps(sums, hsum8(v));
        for (int t = 0; t < 8 && g + t < R * NC; ++t) {
            const int a = g + t;
            out[(size_t) (a % NC) * ldo + (size_t) (i + a / NC)] = sums[t];
        }
    }
}

template <int R>
void f16_rows(const uint16_t * w, size_t ldw, int64_t k, const float * cols, int n, float * out, size_t ldo, int64_t i) {
    for (int j0 = 0; j0 < n; j0 += GROUP_COLUMNS) {
        const float * c = cols + (size_t) j0 * (size_t) k;
        float * o = out + (size_t) j0 * ldo;
        switch (n - j0 < GROUP_COLUMNS ? n - j0 : GROUP_COLUMNS) {
        case 1: f16_tile<R, 1>(w, ldw, k, c, o, ldo, i); break;
        case 2: f16_tile<R, 2>(w, ldw, k, c, o, ldo, i); break;
        case 3: f16_tile<R, 3>(w, ldw, k, c, o, ldo, i); break;
        default: f16_tile<R, 4>(w, ldw, k, c, o, ldo, i); break;
        }
    }
}

void f16_columns(const void * w, size_t w_row_bytes, int64_t k, const float * x, size_t x_stride, int n, float * out,
                 size_t out_stride, int64_t r0, int64_t r1, void * scratch) {
    float * cols = (float *) scratch;
    prepare_f16(x, x_stride, k, n, cols);
    const uint16_t * wp = (const uint16_t *) w;
    const size_t ldw = w_row_bytes / sizeof(uint16_t);
    int64_t i = r0;
    for (; i + TILE_ROWS <= r1; i += TILE_ROWS) f16_rows<TILE_ROWS>(wp, ldw, k, cols, n, out, out_stride, i);
    for (; i < r1; ++i) f16_rows<1>(wp, ldw, k, cols, n, out, out_stride, i);
}

// ---- Q8_0 ---------------------------------------------------------------------------------------

// Prepared columns: quantized as ggml quantizes a product's columns for Q8_0 weights (per block of
// 32: d = amax / 127 stored as F16, q = round-to-even(x * 127 / amax)), plus 128 * sum(q) per
// block: the kernel offsets the weights to unsigned bytes (VNNI multiplies unsigned by signed) and
// subtracts what the offset added.
struct q8_columns {
    int8_t * qs;  // [n][nb][32]
    float * d;    // [n][nb]
    int32_t * cs; // [n][nb]
};

q8_columns q8_layout(void * scratch, int64_t nb, int n) {
    q8_columns c;
    c.qs = (int8_t *) scratch;
    c.d = (float *) (c.qs + (size_t) n * (size_t) nb * 32);
    c.cs = (int32_t *) (c.d + (size_t) n * (size_t) nb);
    return c;
}

void prepare_q8(const float * x, size_t x_stride, int64_t nb, int n, const q8_columns & c) {
    for (int j = 0; j < n; ++j) {
        const float * src = x + (size_t) j * x_stride;
        for (int64_t l = 0; l < nb; ++l) {
            const __m512 v0 = _mm512_loadu_ps(src + l * 32);
            const __m512 v1 = _mm512_loadu_ps(src + l * 32 + 16);
            const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
            const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
            const __m512 s = _mm512_set1_ps(id);
            const __m512i q0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v0, s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            const __m512i q1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v1, s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            const size_t b = (size_t) j * (size_t) nb + (size_t) l;
            _mm_storeu_si128((__m128i *) (c.qs + b * 32), _mm512_cvtsepi32_epi8(q0));
            _mm_storeu_si128((__m128i *) (c.qs + b * 32 + 16), _mm512_cvtsepi32_epi8(q1));
            const __m128 d = _mm_set_ss(amax / 127.0f);
            c.d[b] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
            c.cs[b] = 128 * _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
        }
    }
}

inline int32_t hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_hadd_epi32(s, s);
    s = _mm_hadd_epi32(s, s);
    return _mm_cvtsi128_si32(s);
}

inline float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_hadd_ps(s, s);
    s = _mm_hadd_ps(s, s);
    return _mm_cvtss_f32(s);
}

// One row times NC columns (column j's blocks at index j * nb of the prepared arrays). Blocks go in
// groups of 8: each column's 8 block dots are reduced to one vector of 8 sums, which takes the
// 8 scale products in one multiply.
template <int NC>
inline void q8_row(const q8_block * a, int64_t nb, const int8_t * qs, const float * d, const int32_t * cs, float * out,
                   size_t ldo) {
    const __m256i off = _mm256_set1_epi8((char) 0x80);
    __m256 acc[NC];
    for (int j = 0; j < NC; ++j) acc[j] = _mm256_setzero_ps();
    int64_t l = 0;
    for (; l + 8 <= nb; l += 8) {
        __m256i s[NC][2];
        alignas(16) uint16_t da16[8];
        for (int half = 0; half < 2; ++half) {
            __m256i p[NC][4];
            for (int b = 0; b < 4; ++b) {
                const q8_block * ab = a + l + half * 4 + b;
                _mm_prefetch((const char *) ab + Q8_PREFETCH_BYTES, _MM_HINT_T1);
                da16[half * 4 + b] = ab->d;
                const __m256i au = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *) ab->qs), off);
                for (int j = 0; j < NC; ++j) {
                    const __m256i bq = _mm256_loadu_si256((const __m256i *) (qs + ((size_t) j * nb + l + half * 4 + b) * 32));
                    p[j][b] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), au, bq);
                }
            }
            for (int j = 0; j < NC; ++j)
                s[j][half] = _mm256_hadd_epi32(_mm256_hadd_epi32(p[j][0], p[j][1]), _mm256_hadd_epi32(p[j][2], p[j][3]));
        }
        const __m256 da = _mm256_cvtph_ps(_mm_load_si128((const __m128i *) da16));
        for (int j = 0; j < NC; ++j) {
            // lanes 0-3 of each half hold blocks 0-3 and 4-7 of this group, split over the halves
            __m256i t = _mm256_add_epi32(_mm256_permute2x128_si256(s[j][0], s[j][1], 0x20),
                                         _mm256_permute2x128_si256(s[j][0], s[j][1], 0x31));
            t = _mm256_sub_epi32(t, _mm256_loadu_si256((const __m256i *) (cs + (size_t) j * nb + l)));
            const __m256 scale = _mm256_mul_ps(da, _mm256_loadu_ps(d + (size_t) j * nb + l));
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), scale, acc[j]);
        }
    }
    float tail[NC];
    for (int j = 0; j < NC; ++j) tail[j] = 0.0f;
    for (; l < nb; ++l) {
        const __m256i au = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *) a[l].qs), off);
        const float da = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(a[l].d)));
        for (int j = 0; j < NC; ++j) {
            const size_t b = (size_t) j * nb + l;
            const __m256i bq = _mm256_loadu_si256((const __m256i *) (qs + b * 32));
            const int32_t dot = hsum_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), au, bq)) - cs[b];
            tail[j] += da * d[b] * (float) dot;
        }
    }
    for (int j = 0; j < NC; ++j) out[(size_t) j * ldo] = hsum_ps(acc[j]) + tail[j];
}

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
            case 1: q8_row<1>(a, nb, qs, c.d + b0, c.cs + b0, o, out_stride); break;
            case 2: q8_row<2>(a, nb, qs, c.d + b0, c.cs + b0, o, out_stride); break;
            case 3: q8_row<3>(a, nb, qs, c.d + b0, c.cs + b0, o, out_stride); break;
            default: q8_row<4>(a, nb, qs, c.d + b0, c.cs + b0, o, out_stride); break;
            }
        }
    }
}

} // namespace

const column_kernel_set column_kernels_avx512_vnni = {"avx512_vnni", f16_columns, q8_0_columns, 16, 8};

} // namespace captionist
