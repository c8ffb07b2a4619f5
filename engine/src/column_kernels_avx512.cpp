// column_kernels_avx512.cpp - column_kernels.h for CPUs with AVX-512 F/BW/VL and VNNI (Ice Lake,
// Zen 4 and later): 16-lane F16 tiles of 4 rows, Q8_0 dots with VNNI. Compiled with those
// instruction sets enabled (see column_kernel_loops.h for what that asks of this file).
#include "column_kernels.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 headers start some intrinsics from _mm512_undefined_*() and then warn that it is
// uninitialized (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "column_kernel_loops.h"

namespace captionist {
namespace {

// The upper and lower halves of a 16-lane sum added: 8 lanes with the same total.
inline __m256 fold(__m512 a) {
    return _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
}

struct avx512_vnni {
    static constexpr int tile_rows = 4;

    // The columns rounded to F16 and back (ggml_mul_mat rounds them so for F16 weights).
    static void prepare_f16(const float * x, size_t x_stride, int64_t k, int n, float * cols) {
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
                const __m256i h =
                    _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(h));
            }
        }
    }

    // R rows from row i times NC columns (column j at cols + j * k).
    template <int R, int NC>
    static void f16_tile(const uint16_t * w, size_t ldw, int64_t k, const float * cols, float * out, size_t ldo, int64_t i) {
        __m512 acc[R][NC];
        for (int r = 0; r < R; ++r)
            for (int j = 0; j < NC; ++j) acc[r][j] = _mm512_setzero_ps();
        int64_t kk = 0;
        for (; kk + 16 <= k; kk += 16) {
            __m512 a[R];
            for (int r = 0; r < R; ++r) {
                const uint16_t * p = w + (size_t) (i + r) * ldw + kk;
                if constexpr (R > 1) _mm_prefetch((const char *) (p + (size_t) R * ldw), _MM_HINT_T1); // the next tile
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

    // Q8_0: the weights offset to unsigned bytes, as VNNI multiplies unsigned by signed; the
    // prepared columns' sums take off what the offset added.
    static constexpr bool offset_weights = true;
    using a_block = __m256i;
    static a_block load_a(const q8_block * b) {
        return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *) b->qs), _mm256_set1_epi8((char) 0x80));
    }
    static __m256i dot(const a_block & a, __m256i b) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), a, b); }
};

} // namespace

const column_kernel_set column_kernels_avx512_vnni = {"avx512_vnni", f16_columns<avx512_vnni>,
                                                      q8_0_columns<avx512_vnni>, 16, 8};

} // namespace captionist
