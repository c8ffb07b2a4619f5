// One ggml matrix product timed on the CPU backend: W [K, M] (weights of one type) times X [K, n]
// (F32 columns), L weight matrices (own memory, same values) per graph so they come from memory.
// Built by bench_ggml_kernels.py against one ggml install at a time (ours, transcribe.cpp's).
//
//   ggml_matmul_probe LIBDIR K M n TYPE THREADS [L] [SECONDS]
//
// TYPE is a ggml_type number (0 F32, 1 F16, 8 Q8_0, 12 Q4_K). PROBE_REPACK=1 in the environment
// puts the weights in the repacking buffer. Prints one line of key=value pairs.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

int main(int argc, char ** argv) {
    if (argc < 7) {
        std::fprintf(stderr, "usage: %s LIBDIR K M n TYPE THREADS [L] [SECONDS]\n", argv[0]);
        return 2;
    }
    const int K = std::atoi(argv[2]), M = std::atoi(argv[3]), n = std::atoi(argv[4]);
    const auto type = (ggml_type) std::atoi(argv[5]);
    const int threads = std::atoi(argv[6]);
    const int L = argc > 7 ? std::atoi(argv[7]) : 16;
    const double seconds = argc > 8 ? std::atof(argv[8]) : 2.0;
    ggml_backend_load_all_from_path(argv[1]);
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!dev) {
        std::fprintf(stderr, "no CPU backend in %s\n", argv[1]);
        return 1;
    }
    ggml_backend_t be = ggml_backend_dev_init(dev, nullptr);
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    auto set_threads = (ggml_backend_set_n_threads_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
    if (set_threads) set_threads(be, threads);

    const size_t overhead = ggml_tensor_overhead() * (size_t) (L * 4 + 8) + ggml_graph_overhead();
    ggml_context * wctx = ggml_init({overhead, nullptr, true});
    std::vector<ggml_tensor *> W(L);
    for (auto & w : W) w = ggml_new_tensor_2d(wctx, type, K, M);
    // PROBE_REPACK=1: the weights in the CPU backend's repacking buffer (what a model load uses, so
    // Q4_K takes ggml's interleaved kernels); the input stays in ordinary memory
    ggml_backend_buffer_type_t wbuft = ggml_backend_get_default_buffer_type(be);
    const char * repack = std::getenv("PROBE_REPACK");
    if (repack && std::atoi(repack) != 0) {
        auto get_extra = (ggml_backend_dev_get_extra_bufts_t) ggml_backend_reg_get_proc_address(
            reg, "ggml_backend_dev_get_extra_bufts");
        ggml_backend_buffer_type_t * extra = get_extra ? get_extra(dev) : nullptr;
        if (!extra || !*extra) {
            std::fprintf(stderr, "no repacking buffer in %s\n", argv[1]);
            return 1;
        }
        wbuft = extra[0];
    }
    ggml_context * xctx = ggml_init({ggml_tensor_overhead() * 2, nullptr, true});
    ggml_tensor * X = ggml_new_tensor_2d(xctx, GGML_TYPE_F32, K, n);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, wbuft);
    ggml_backend_buffer_t xbuf = ggml_backend_alloc_ctx_tensors(xctx, be);
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.f, 0.05f);
    std::vector<float> f((size_t) K * M);
    std::vector<char> q(ggml_row_size(type, K) * (size_t) M);
    for (auto & v : f) v = normal(rng);
    ggml_quantize_chunk(type, f.data(), q.data(), 0, M, K, nullptr);
    for (auto & w : W) ggml_backend_tensor_set(w, q.data(), 0, q.size()); // same values, own memory
    std::vector<float> xs((size_t) K * n);
    for (auto & v : xs) v = normal(rng);
    ggml_backend_tensor_set(X, xs.data(), 0, xs.size() * sizeof(float));

    ggml_context * gctx = ggml_init({overhead, nullptr, true});
    ggml_cgraph * gf = ggml_new_graph(gctx);
    for (auto & w : W) ggml_build_forward_expand(gf, ggml_mul_mat(gctx, w, X));
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(be));
    ggml_gallocr_alloc_graph(galloc, gf);
    ggml_backend_graph_compute(be, gf); // warm-up
    int iters = 0;
    double elapsed = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (elapsed < seconds || iters < 3) {
        ggml_backend_graph_compute(be, gf);
        ++iters;
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    const double per = elapsed / iters / L;
    const double bytes = (double) ggml_row_size(type, K) * M;
    std::printf("type=%s K=%d M=%d n=%d threads=%d ms=%.4f gflops=%.2f gbs=%.2f bytes=%.0f\n", ggml_type_name(type), K,
                M, n, threads, per * 1e3, 2.0 * K * M * n / per / 1e9, bytes / per / 1e9, bytes);
    ggml_gallocr_free(galloc);
    ggml_free(gctx);
    ggml_backend_buffer_free(buf);
    ggml_backend_buffer_free(xbuf);
    ggml_free(xctx);
    ggml_free(wctx);
    ggml_backend_free(be);
    return 0;
}
