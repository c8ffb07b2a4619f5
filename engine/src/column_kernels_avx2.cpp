// column_kernels_avx2.cpp - column_kernels.h for CPUs with AVX2, FMA and F16C (Haswell, Zen 1 and
// later): 8-lane F16 tiles of 2 rows (16 vector registers), Q8_0 dots with ggml's sign trick.
// Compiled with those instruction sets enabled (see column_kernel_loops.h for what that asks of
// this file).
#include "column_kernels.h"

#include "column_kernel_loops.h"

namespace captionist {
namespace {

struct avx2 {
    static constexpr int tile_rows = 2;

    // The columns rounded to F16 and back (ggml_mul_mat rounds them so for F16 weights).
    static void prepare_f16(const float * x, size_t x_stride, int64_t k, int n, float * cols) {
        for (int j = 0; j < n; ++j) {
            const float * src = x + (size_t) j * x_stride;
            float * dst = cols + (size_t) j * (size_t) k;
            int64_t i = 0;
            for (; i + 8 <= k; i += 8) {
                const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
            }
            for (; i < k; ++i) dst[i] = round_f16(src[i]);
        }
    }

    // R rows from row i times NC columns (column j at cols + j * k).
    template <int R, int NC>
    static void f16_tile(const uint16_t * w, size_t ldw, int64_t k, const float * cols, float * out, size_t ldo, int64_t i) {
        __m256 acc[R][NC];
        for (int r = 0; r < R; ++r)
            for (int j = 0; j < NC; ++j) acc[r][j] = _mm256_setzero_ps();
        int64_t kk = 0;
        for (; kk + 8 <= k; kk += 8) {
            __m256 a[R];
            for (int r = 0; r < R; ++r) {
                const uint16_t * p = w + (size_t) (i + r) * ldw + kk;
                if constexpr (R > 1) _mm_prefetch((const char *) (p + (size_t) R * ldw), _MM_HINT_T1); // the next tile
                a[r] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) p));
            }
            for (int j = 0; j < NC; ++j) {
                const __m256 b = _mm256_loadu_ps(cols + (size_t) j * (size_t) k + kk);
                for (int r = 0; r < R; ++r) acc[r][j] = _mm256_fmadd_ps(a[r], b, acc[r][j]);
            }
        }
        // the R * NC sums, eight at a time (short rows spend as long summing lanes as multiplying),
        // then the k % 8 tail
        alignas(32) float sums[8];
        for (int g = 0; g < R * NC; g += 8) {
            __m256 v[8];
            for (int t = 0; t < 8; ++t) {
                const int a = g + t;
                v[t] = a < R * NC ? acc[a / NC][a % NC] : _mm256_setzero_ps();
            }
            _mm256_store_ps(sums, hsum8(v));
            for (int t = 0; t < 8 && g + t < R * NC; ++t) {
                const int a = g + t, r = a / NC, j = a % NC;
                float s = sums[t];
                for (int64_t e = kk; e < k; ++e)
                    s += f16_to_f32(w[(size_t) (i + r) * ldw + e]) * cols[(size_t) j * (size_t) k + e];
                out[(size_t) j * ldo + (size_t) (i + r)] = s;
            }
        }
    }

    // Q8_0: |w| times the column's bytes with w's sign (ggml's mul_sum_i8_pairs), as maddubs
    // multiplies unsigned by signed.
    static constexpr bool offset_weights = false;
    struct a_block {
        __m256i a, abs_a;
    };
    static a_block load_a(const q8_block * b) {
        const __m256i a = _mm256_loadu_si256((const __m256i *) b->qs);
        return {a, _mm256_sign_epi8(a, a)};
    }
    static __m256i dot(const a_block & a, __m256i b) {
        return _mm256_madd_epi16(_mm256_maddubs_epi16(a.abs_a, _mm256_sign_epi8(b, a.a)), _mm256_set1_epi16(1));
    }
};

} // namespace

const column_kernel_set column_kernels_avx2 = {"avx2", f16_columns<avx2>, q8_0_columns<avx2>, 4, 4};

} // namespace captionist
