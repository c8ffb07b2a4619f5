#include "column_products.h"

#include "backend_registry.h"
#include "model_base.h"

#include <ggml-alloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>

// CAPTIONIST_COLUMN_KERNELS_X86: set by CMake where it compiles the x86-64 kernel files.
#ifndef CAPTIONIST_COLUMN_KERNELS_X86
#define CAPTIONIST_COLUMN_KERNELS_X86 0
#endif
#if CAPTIONIST_COLUMN_KERNELS_X86 && defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h> // __cpuid
#endif

namespace captionist {

size_t column_scratch_bytes(int64_t k, int n) {
    // F16: n columns of k floats; Q8_0: n * k / 32 blocks of 32 bytes, a scale and a sum (less)
    return (size_t) n * (size_t) k * sizeof(float);
}

namespace {

constexpr size_t SCRATCH_ALIGN = 64;

std::atomic<int64_t> products_computed{0};

bool has_feature(const std::string & features, const char * name) {
    const std::string f = std::string(" ") + features + " ";
    return f.find(std::string(" ") + name + " ") != std::string::npos;
}

// Every level compiled into this build, best first.
std::vector<const column_kernel_set *> compiled_levels() {
#if CAPTIONIST_COLUMN_KERNELS_X86
    return {&column_kernels_avx512_vnni, &column_kernels_avx2};
#else
    return {};
#endif
}

// Whether this process may use a level: what the CPU backend ggml loaded was built for, and, where
// the compiler can tell, what the CPU reports (AVX-512 VL/BW, which ggml's list leaves out).
bool can_run(const column_kernel_set & ks) {
    const std::string features = cpu_backend_features();
    const std::string level = ks.name;
    if (level == "avx2") {
        return has_feature(features, "AVX2") && has_feature(features, "FMA") && has_feature(features, "F16C");
    }
    if (level == "avx512_vnni") {
        bool vl_bw = true;
#if defined(__GNUC__) || defined(__clang__)
        vl_bw = __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
#endif
        return vl_bw && has_feature(features, "AVX512") && has_feature(features, "AVX512_VNNI") &&
               has_feature(features, "F16C");
    }
    return false;
}

// This thread's prepared columns; grows, never shrinks. Null when the memory is not there.
void * thread_scratch(size_t bytes) {
    struct buffer {
        std::unique_ptr<unsigned char[]> data;
        size_t size = 0;
    };
    thread_local buffer b;
    if (b.size < bytes) {
        b.data.reset(new (std::nothrow) unsigned char[bytes + SCRATCH_ALIGN]);
        b.size = b.data ? bytes : 0;
        if (!b.data) return nullptr;
    }
    const uintptr_t p = (uintptr_t) b.data.get();
    return (void *) ((p + SCRATCH_ALIGN - 1) & ~(uintptr_t) (SCRATCH_ALIGN - 1));
}

// Rows [r0, r1) of one batch without a kernel: each weight row converted by ggml's type traits,
// summed in F32. Only where the prepared columns' memory could not be had.
void product_rows_plain(ggml_type type, const char * w, size_t w_row_bytes, int64_t k, const float * x,
                        size_t x_stride, int n, float * out, size_t out_stride, int64_t r0, int64_t r1) {
    constexpr int64_t CHUNK = 1024; // a multiple of every block size
    const ggml_to_float_t to_float = ggml_get_type_traits(type)->to_float;
    const size_t chunk_bytes = ggml_row_size(type, CHUNK);
    float row[CHUNK];
    for (int64_t i = r0; i < r1; ++i) {
        for (int j = 0; j < n; ++j) out[(size_t) j * out_stride + (size_t) i] = 0.0f;
        for (int64_t c = 0; c < k; c += CHUNK) {
            const int64_t len = std::min(CHUNK, k - c);
            to_float(w + (size_t) i * w_row_bytes + (size_t) (c / CHUNK) * chunk_bytes, row, len);
            for (int j = 0; j < n; ++j) {
                const float * xc = x + (size_t) j * x_stride + (size_t) c;
                float s = 0.0f;
                for (int64_t t = 0; t < len; ++t) s += row[t] * xc[t];
                out[(size_t) j * out_stride + (size_t) i] += s;
            }
        }
    }
}

// The custom op: src[0] the weight (or a head's keys or values), src[1] the columns, both in
// batches along dim 2 (a weight batch serves x->ne[2] / w->ne[2] column batches, as ggml_mul_mat
// broadcasts). The (batch, four rows) units are split evenly over the threads.
void column_product_op(ggml_tensor * dst, int ith, int nth, void * userdata) {
    const column_kernel_set * ks = (const column_kernel_set *) userdata;
    if (ith == 0) products_computed.fetch_add(1, std::memory_order_relaxed);
    const ggml_tensor * w = dst->src[0];
    const ggml_tensor * x = dst->src[1];
    const int64_t m = w->ne[1], k = w->ne[0], batches = x->ne[2], per_weight = batches / w->ne[2];
    const int n = (int) x->ne[1];
    const int64_t quads = (m + 3) / 4, units = quads * batches;
    const int64_t u0 = units * ith / nth, u1 = units * (ith + 1) / nth;
    if (u0 >= u1) return;
    void * scratch = thread_scratch(column_scratch_bytes(k, n));
    const column_kernel_fn fn = w->type == GGML_TYPE_F16 ? ks->f16 : ks->q8_0;
    const size_t x_stride = x->nb[1] / sizeof(float), out_stride = dst->nb[1] / sizeof(float);
    for (int64_t b = u0 / quads; b < batches && b * quads < u1; ++b) {
        const int64_t r0 = (std::max(u0, b * quads) - b * quads) * 4;
        const int64_t r1 = std::min(m, (std::min(u1, (b + 1) * quads) - b * quads) * 4);
        if (r0 >= r1) continue;
        const char * wb = (const char *) w->data + (size_t) (b / per_weight) * w->nb[2];
        const float * xb = (const float *) ((const char *) x->data + (size_t) b * x->nb[2]);
        float * ob = (float *) ((char *) dst->data + (size_t) b * dst->nb[2]);
        if (scratch) {
            fn(wb, w->nb[1], k, xb, x_stride, n, ob, out_stride, r0, r1, scratch);
        } else {
            product_rows_plain(w->type, wb, w->nb[1], k, xb, x_stride, n, ob, out_stride, r0, r1);
        }
    }
}

} // namespace

bool column_kernels_apply(const column_kernel_set * ks, const ggml_tensor * w, const ggml_tensor * x) {
    if (!ks) return false;
    if (w->type != GGML_TYPE_F16 && w->type != GGML_TYPE_Q8_0) return false;
    // a plain host layout: mapped or loaded weights, or a cache (not repacked by an extra buffer
    // type); a view, such as a reshaped convolution kernel or a cache's window, gets its buffer
    // only when the graph is allocated
    const ggml_tensor * base = w->view_src ? w->view_src : w;
    if (!base->buffer || !ggml_backend_buffer_is_host(base->buffer) || base->extra || !w->data) return false;
    // rows whole (their elements or blocks side by side), columns whole, batches that broadcast
    if (w->nb[0] != ggml_type_size(w->type) || w->ne[3] != 1) return false;
    if (x->type != GGML_TYPE_F32 || x->nb[0] != sizeof(float) || x->ne[3] != 1) return false;
    if (x->nb[1] % sizeof(float) || x->nb[2] % sizeof(float) || x->ne[2] % w->ne[2]) return false;
    const int max_columns = w->type == GGML_TYPE_F16 ? ks->f16_max_columns : ks->q8_0_max_columns;
    return x->ne[0] == w->ne[0] && x->ne[1] >= column_kernels_min_columns() && x->ne[1] <= max_columns;
}

// One column (a decoder step's product) takes the kernels too, not only 2 and more, on Intel CPUs.
// ggml's one-column loop reads a single row at a time and leaves the fetching ahead to the CPU: on
// a Zen 4 core that streams at the memory's speed (F16 28 GB/s on one core, with Q8_0 22), but on
// an Intel Xeon (Sapphire Rapids) it stalled at 8-10 GB/s where these kernels, four rows at a time
// with the next ones fetched into L2, read 11-14 (bench/README.md). CAPTIONIST_ONE_COLUMN=ours /
// ggml decides instead, for measuring both.
int column_kernels_min_columns() {
    static const int fewest = [] {
        const char * e = std::getenv("CAPTIONIST_ONE_COLUMN");
        if (e && std::strcmp(e, "ours") == 0) return 1;
        if (e && std::strcmp(e, "ggml") == 0) return 2;
#if !CAPTIONIST_COLUMN_KERNELS_X86
        return 2; // no kernels to take it
#elif defined(__GNUC__) || defined(__clang__)
        return __builtin_cpu_is("intel") ? 1 : 2;
#else
        int r[4];
        __cpuid(r, 0);
        char vendor[13] = {};
        std::memcpy(vendor, &r[1], 4);
        std::memcpy(vendor + 4, &r[3], 4);
        std::memcpy(vendor + 8, &r[2], 4);
        return std::strcmp(vendor, "GenuineIntel") == 0 ? 1 : 2;
#endif
    }();
    return fewest;
}

int64_t column_product_count() {
    return products_computed.load(std::memory_order_relaxed);
}

std::vector<const column_kernel_set *> column_kernel_levels() {
    backend_init_once();
    std::vector<const column_kernel_set *> out;
    for (const column_kernel_set * ks : compiled_levels()) {
        if (can_run(*ks)) out.push_back(ks);
    }
    return out;
}

const column_kernel_set * choose_column_kernels(ggml_backend_dev_t dev) {
    if (!dev || ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_CPU) return nullptr;
    const char * e = std::getenv("CAPTIONIST_COLUMN_KERNELS");
    const std::string want = e ? e : "";
    if (want == "0" || want == "off") return nullptr;
    for (const column_kernel_set * ks : column_kernel_levels()) {
        if (want.empty() || want == "1" || want == ks->name) return ks;
    }
    return nullptr;
}

ggml_tensor * build_weight_product(ggml_context * ctx, const column_kernel_set * kernels, ggml_tensor * w,
                                   ggml_tensor * x) {
    if (!column_kernels_apply(kernels, w, x)) return ggml_mul_mat(ctx, w, x);
    ggml_tensor * args[2] = {w, x};
    return ggml_custom_4d(ctx, GGML_TYPE_F32, w->ne[1], x->ne[1], x->ne[2], 1, args, 2, column_product_op,
                          GGML_N_TASKS_MAX, const_cast<column_kernel_set *>(kernels));
}

ggml_tensor * build_weight_product(ggml_context * ctx, const model_base & m, ggml_tensor * w, ggml_tensor * x) {
    return build_weight_product(ctx, m.column_kernels, w, x);
}

std::vector<float> run_weight_product(const weight_product_job & job, double * seconds) {
    backend_init_once();
    ggml_type t = GGML_TYPE_COUNT;
    if (job.type == "f16") t = GGML_TYPE_F16;
    if (job.type == "q8_0") t = GGML_TYPE_Q8_0;
    if (t == GGML_TYPE_COUNT) throw std::invalid_argument("type must be f16 or q8_0, got '" + job.type + "'");
    const int64_t m = job.m, k = job.k, n = job.n, bw = job.w_batches, bx = job.x_batches;
    if (m < 1 || k < 1 || n < 1 || bw < 1 || bx < 1 || bx % bw || (int64_t) job.w.size() != bw * m * k ||
        (int64_t) job.x.size() != bx * n * k) {
        throw std::invalid_argument("w must hold [w_batches][m][k] values, x [x_batches][n][k], x_batches a "
                                    "multiple of w_batches");
    }
    if (k % ggml_blck_size(t)) throw std::invalid_argument(job.type + " needs k to be a multiple of its block size");
    if (job.n_threads < 1 || job.n_threads > 256 || job.copies < 1 || job.copies > 1024 || job.repeat < 0 ||
        (job.views && job.copies != 1)) {
        throw std::invalid_argument("n_threads must be 1 to 256, copies 1 to 1024 (1 with views), repeat >= 0");
    }
    const column_kernel_set * ks = nullptr;
    if (job.level != "ggml") {
        for (const column_kernel_set * level : column_kernel_levels()) {
            if (job.level == level->name) ks = level;
        }
        if (!ks) throw std::invalid_argument("this CPU cannot run the '" + job.level + "' kernels");
    }
    ggml_backend_t be = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
    if (!be) throw std::runtime_error("no CPU backend");
    std::unique_ptr<ggml_backend, decltype(&ggml_backend_free)> be_guard(be, ggml_backend_free);
    cpu_set_n_threads(be, job.n_threads);

    const size_t n_nodes = (size_t) job.copies * 2 + 8;
    ggml_init_params ip = {ggml_tensor_overhead() * (n_nodes * 2) + ggml_graph_overhead_custom(n_nodes, false), nullptr,
                           true};
    std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(ggml_init(ip), ggml_free);
    const int64_t rows = job.views ? m + 3 : m; // a window: 3 rows past it in each batch
    std::vector<ggml_tensor *> stores;
    for (int c = 0; c < job.copies; ++c) stores.push_back(ggml_new_tensor_3d(ctx.get(), t, k, rows, bw));
    // views: x stored [n][x_batches][k] and read permuted to [x_batches][n][k]
    ggml_tensor * x_store = job.views ? ggml_new_tensor_3d(ctx.get(), GGML_TYPE_F32, k, bx, n)
                                      : ggml_new_tensor_3d(ctx.get(), GGML_TYPE_F32, k, n, bx);
    std::unique_ptr<ggml_backend_buffer, decltype(&ggml_backend_buffer_free)> buf(
        ggml_backend_alloc_ctx_tensors(ctx.get(), be), ggml_backend_buffer_free);
    if (!buf) throw std::runtime_error("out of memory for the weights");
    const size_t row_bytes = ggml_row_size(t, k);
    std::vector<char> q(row_bytes * (size_t) (m * bw));
    ggml_quantize_chunk(t, job.w.data(), q.data(), 0, m * bw, k, nullptr);
    for (ggml_tensor * st : stores) {
        for (int64_t b = 0; b < bw; ++b) {
            ggml_backend_tensor_set(st, q.data() + (size_t) (b * m) * row_bytes, (size_t) b * st->nb[2],
                                    (size_t) m * row_bytes);
        }
    }
    if (job.views) {
        std::vector<float> xs(job.x.size());
        for (int64_t b = 0; b < bx; ++b)
            for (int64_t j = 0; j < n; ++j)
                std::copy_n(job.x.data() + (size_t) ((b * n + j) * k), k, xs.data() + (size_t) ((j * bx + b) * k));
        ggml_backend_tensor_set(x_store, xs.data(), 0, xs.size() * sizeof(float));
    } else {
        ggml_backend_tensor_set(x_store, job.x.data(), 0, job.x.size() * sizeof(float));
    }

    ggml_cgraph * gf = ggml_new_graph_custom(ctx.get(), n_nodes, false);
    ggml_tensor * xt = job.views ? ggml_permute(ctx.get(), x_store, 0, 2, 1, 3) : x_store;
    std::vector<ggml_tensor *> outs;
    for (ggml_tensor * st : stores) {
        ggml_tensor * wt = job.views ? ggml_view_3d(ctx.get(), st, k, m, bw, st->nb[1], st->nb[2], 0) : st;
        outs.push_back(ks ? build_weight_product(ctx.get(), ks, wt, xt) : ggml_mul_mat(ctx.get(), wt, xt));
        ggml_build_forward_expand(gf, outs.back());
    }
    if (ks && outs[0]->op != GGML_OP_CUSTOM) throw std::invalid_argument("the kernels do not take this shape");
    std::unique_ptr<ggml_gallocr, decltype(&ggml_gallocr_free)> ga(
        ggml_gallocr_new(ggml_backend_get_default_buffer_type(be)), ggml_gallocr_free);
    if (!ggml_gallocr_alloc_graph(ga.get(), gf)) throw std::runtime_error("out of memory for the products");
    if (ggml_backend_graph_compute(be, gf) != GGML_STATUS_SUCCESS) throw std::runtime_error("compute failed");
    if (job.repeat > 0) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < job.repeat; ++r) ggml_backend_graph_compute(be, gf);
        if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    std::vector<float> out((size_t) (bx * n * m));
    ggml_backend_tensor_get(outs[0], out.data(), 0, out.size() * sizeof(float));
    return out;
}

} // namespace captionist
