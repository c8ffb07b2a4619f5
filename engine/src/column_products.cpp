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

// The instruction sets this process may use: what the CPU backend ggml loaded was built for, and,
// where the compiler can tell, what the CPU reports (AVX-512 VL/BW, which ggml's list leaves out).
bool can_run(const std::string & level) {
#if CAPTIONIST_COLUMN_KERNELS_X86
    const std::string features = cpu_backend_features();
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
#else
    (void) level;
#endif
    return false;
}

const column_kernel_set * kernels_for(const std::string & level) {
#if CAPTIONIST_COLUMN_KERNELS_X86
    if (level == "avx512_vnni") return &column_kernels_avx512_vnni;
    if (level == "avx2") return &column_kernels_avx2;
#else
    (void) level;
#endif
    return nullptr;
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

// Rows [r0, r1) without a kernel: each weight row converted by ggml's type traits, summed in F32.
// Only where the prepared columns' memory could not be had.
void product_rows_plain(const ggml_tensor * w, const ggml_tensor * x, ggml_tensor * dst, int64_t r0, int64_t r1) {
    constexpr int64_t CHUNK = 1024; // a multiple of every block size
    const int64_t k = w->ne[0];
    const ggml_to_float_t to_float = ggml_get_type_traits(w->type)->to_float;
    const size_t chunk_bytes = ggml_row_size(w->type, CHUNK);
    float row[CHUNK];
    for (int64_t i = r0; i < r1; ++i) {
        for (int64_t j = 0; j < x->ne[1]; ++j) ((float *) ((char *) dst->data + j * dst->nb[1]))[i] = 0.0f;
        for (int64_t c = 0; c < k; c += CHUNK) {
            const int64_t len = std::min(CHUNK, k - c);
            to_float((const char *) w->data + i * w->nb[1] + (c / CHUNK) * chunk_bytes, row, len);
            for (int64_t j = 0; j < x->ne[1]; ++j) {
                const float * xc = (const float *) ((const char *) x->data + j * x->nb[1]) + c;
                float s = 0.0f;
                for (int64_t t = 0; t < len; ++t) s += row[t] * xc[t];
                ((float *) ((char *) dst->data + j * dst->nb[1]))[i] += s;
            }
        }
    }
}

// The custom op: src[0] the weight, src[1] the columns; rows split over the threads in fours.
void column_product_op(ggml_tensor * dst, int ith, int nth, void * userdata) {
    const column_kernel_set * ks = (const column_kernel_set *) userdata;
    if (ith == 0) products_computed.fetch_add(1, std::memory_order_relaxed);
    const ggml_tensor * w = dst->src[0];
    const ggml_tensor * x = dst->src[1];
    const int64_t m = w->ne[1], k = w->ne[0];
    const int n = (int) x->ne[1];
    const int64_t quads = (m + 3) / 4;
    const int64_t r0 = std::min(m, quads * ith / nth * 4), r1 = std::min(m, quads * (ith + 1) / nth * 4);
    if (r0 >= r1) return;
    void * scratch = thread_scratch(column_scratch_bytes(k, n));
    if (!scratch) {
        product_rows_plain(w, x, dst, r0, r1);
        return;
    }
    const column_kernel_fn fn = w->type == GGML_TYPE_F16 ? ks->f16 : ks->q8_0;
    fn(w->data, w->nb[1], k, (const float *) x->data, x->nb[1] / sizeof(float), n, (float *) dst->data,
       dst->nb[1] / sizeof(float), r0, r1, scratch);
}

bool kernel_applies(const column_kernel_set * ks, const ggml_tensor * w, const ggml_tensor * x) {
    if (!ks) return false;
    if (w->type != GGML_TYPE_F16 && w->type != GGML_TYPE_Q8_0) return false;
    // a plain host layout: mapped or loaded, not repacked by an extra buffer type (a view, such as a
    // reshaped convolution kernel, gets its buffer only when the graph is allocated)
    const ggml_tensor * base = w->view_src ? w->view_src : w;
    if (!base->buffer || !ggml_backend_buffer_is_host(base->buffer) || base->extra || !w->data) return false;
    if (w->ne[2] != 1 || w->ne[3] != 1 || !ggml_is_contiguous(w)) return false;
    if (x->type != GGML_TYPE_F32 || x->ne[2] != 1 || x->ne[3] != 1 || !ggml_is_contiguous(x)) return false;
    const int max_columns = w->type == GGML_TYPE_F16 ? ks->f16_max_columns : ks->q8_0_max_columns;
    return x->ne[0] == w->ne[0] && x->ne[1] >= 2 && x->ne[1] <= max_columns;
}

} // namespace

int64_t column_product_count() {
    return products_computed.load(std::memory_order_relaxed);
}

std::vector<const column_kernel_set *> column_kernel_levels() {
    backend_init_once();
    std::vector<const column_kernel_set *> out;
    for (const char * level : {"avx512_vnni", "avx2"}) {
        if (can_run(level)) out.push_back(kernels_for(level));
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
    if (!kernel_applies(kernels, w, x)) return ggml_mul_mat(ctx, w, x);
    ggml_tensor * args[2] = {w, x};
    return ggml_custom_4d(ctx, GGML_TYPE_F32, w->ne[1], x->ne[1], 1, 1, args, 2, column_product_op, GGML_N_TASKS_MAX,
                          const_cast<column_kernel_set *>(kernels));
}

ggml_tensor * build_weight_product(ggml_context * ctx, const model_base & m, ggml_tensor * w, ggml_tensor * x) {
    return build_weight_product(ctx, m.column_kernels, w, x);
}

std::vector<float> run_weight_product(const std::vector<float> & w, int64_t m, int64_t k, const std::vector<float> & x,
                                      int64_t n, const std::string & type, const std::string & level, int n_threads,
                                      int copies, int repeat, double * seconds) {
    backend_init_once();
    ggml_type t = GGML_TYPE_COUNT;
    if (type == "f16") t = GGML_TYPE_F16;
    if (type == "q8_0") t = GGML_TYPE_Q8_0;
    if (t == GGML_TYPE_COUNT) throw std::invalid_argument("type must be f16 or q8_0, got '" + type + "'");
    if (m < 1 || k < 1 || n < 1 || (int64_t) w.size() != m * k || (int64_t) x.size() != n * k) {
        throw std::invalid_argument("w must hold m * k values and x n * k");
    }
    if (k % ggml_blck_size(t)) throw std::invalid_argument(type + " needs k to be a multiple of its block size");
    if (n_threads < 1 || n_threads > 256 || copies < 1 || copies > 1024 || repeat < 0) {
        throw std::invalid_argument("n_threads must be 1 to 256, copies 1 to 1024, repeat >= 0");
    }
    const column_kernel_set * ks = nullptr;
    if (level != "ggml") {
        if (!can_run(level)) throw std::invalid_argument("this CPU cannot run the '" + level + "' kernels");
        ks = kernels_for(level);
    }
    ggml_backend_t be = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
    if (!be) throw std::runtime_error("no CPU backend");
    std::unique_ptr<ggml_backend, decltype(&ggml_backend_free)> be_guard(be, ggml_backend_free);
    cpu_set_n_threads(be, n_threads);

    const size_t n_tensors = (size_t) copies + 2;
    ggml_init_params ip = {ggml_tensor_overhead() * (n_tensors * 2 + 8) + ggml_graph_overhead_custom(n_tensors * 2, false),
                           nullptr, true};
    std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(ggml_init(ip), ggml_free);
    std::vector<ggml_tensor *> ws;
    for (int c = 0; c < copies; ++c) ws.push_back(ggml_new_tensor_2d(ctx.get(), t, k, m));
    ggml_tensor * xt = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, k, n);
    std::unique_ptr<ggml_backend_buffer, decltype(&ggml_backend_buffer_free)> buf(
        ggml_backend_alloc_ctx_tensors(ctx.get(), be), ggml_backend_buffer_free);
    if (!buf) throw std::runtime_error("out of memory for the weights");
    std::vector<char> q(ggml_row_size(t, k) * (size_t) m);
    ggml_quantize_chunk(t, w.data(), q.data(), 0, m, k, nullptr);
    for (ggml_tensor * wt : ws) ggml_backend_tensor_set(wt, q.data(), 0, q.size());
    ggml_backend_tensor_set(xt, x.data(), 0, x.size() * sizeof(float));

    ggml_cgraph * gf = ggml_new_graph_custom(ctx.get(), n_tensors * 2, false);
    std::vector<ggml_tensor *> outs;
    for (ggml_tensor * wt : ws) {
        outs.push_back(ks ? build_weight_product(ctx.get(), ks, wt, xt) : ggml_mul_mat(ctx.get(), wt, xt));
        ggml_build_forward_expand(gf, outs.back());
    }
    if (ks && outs[0]->op != GGML_OP_CUSTOM) throw std::invalid_argument("the kernels do not take this shape");
    std::unique_ptr<ggml_gallocr, decltype(&ggml_gallocr_free)> ga(
        ggml_gallocr_new(ggml_backend_get_default_buffer_type(be)), ggml_gallocr_free);
    if (!ggml_gallocr_alloc_graph(ga.get(), gf)) throw std::runtime_error("out of memory for the products");
    if (ggml_backend_graph_compute(be, gf) != GGML_STATUS_SUCCESS) throw std::runtime_error("compute failed");
    if (repeat > 0) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < repeat; ++r) ggml_backend_graph_compute(be, gf);
        if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    std::vector<float> out((size_t) (m * n));
    ggml_backend_tensor_get(outs[0], out.data(), 0, out.size() * sizeof(float));
    return out;
}

} // namespace captionist
