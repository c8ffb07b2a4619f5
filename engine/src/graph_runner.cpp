#include "graph_runner.h"

#include "model_base.h"

#include "backend_registry.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace captionist {

graph_runner::graph_runner(const model_base & m) : m_(m) {
    ggml_backend_t main = ggml_backend_dev_init(m.device, nullptr);
    if (!main) throw std::runtime_error("cannot start the " + m.backend_name + " backend");
    backends_.push_back(main);
    if (ggml_backend_dev_type(m.device) != GGML_BACKEND_DEVICE_TYPE_CPU) {
        ggml_backend_t cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
        if (cpu) backends_.push_back(cpu);
    }
    for (ggml_backend_t b : backends_) {
        ggml_backend_dev_t dev = ggml_backend_get_device(b);
        if (dev && ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU) {
            cpu_set_n_threads(b, m.n_threads);
            const char * poll = std::getenv("CAPTIONIST_POLL");
            threadpool_ = cpu_threadpool_new(m.n_threads, poll ? std::atoi(poll) : -1);
            cpu_set_threadpool(b, threadpool_);
        }
    }
    sched_ = ggml_backend_sched_new(backends_.data(), nullptr, (int) backends_.size(), GRAPH_MAX_NODES, false, false);
    if (!sched_) throw std::runtime_error("cannot create the graph scheduler");
    meta_.resize(ggml_tensor_overhead() * GRAPH_MAX_NODES + ggml_graph_overhead_custom(GRAPH_MAX_NODES, false));
}

graph_runner::~graph_runner() {
    if (ctx_) ggml_free(ctx_);
    if (sched_) ggml_backend_sched_free(sched_);
    for (ggml_backend_t b : backends_) ggml_backend_free(b);
    cpu_threadpool_free(threadpool_);
}

ggml_context * graph_runner::begin() {
    if (ctx_) ggml_free(ctx_);
    ggml_backend_sched_reset(sched_);
    ggml_init_params p = {meta_.size(), meta_.data(), /*no_alloc =*/true};
    ctx_ = ggml_init(p);
    if (!ctx_) throw std::runtime_error("cannot create a graph context");
    return ctx_;
}

ggml_cgraph * graph_runner::new_graph(ggml_context * ctx) const {
    return ggml_new_graph_custom(ctx, GRAPH_MAX_NODES, false);
}

void graph_runner::alloc(ggml_cgraph * gf) {
    if (!ggml_backend_sched_alloc_graph(sched_, gf)) {
        throw std::runtime_error("not enough memory on " + m_.backend_name + " to run the model");
    }
}

void graph_runner::compute(ggml_cgraph * gf) {
    const ggml_status st = ggml_backend_sched_graph_compute(sched_, gf);
    if (st != GGML_STATUS_SUCCESS) {
        throw std::runtime_error("the " + m_.backend_name + " backend failed to compute (status " +
                                 std::to_string((int) st) + ")");
    }
}

ggml_backend_buffer_type_t graph_runner::weights_buft() const {
    return ggml_backend_dev_buffer_type(m_.device);
}

} // namespace captionist
