#include "graph_runner.h"

#include "env_flag.h"
#include "model_base.h"

#include "backend_registry.h"
#include "node_dump.h"

#include <captionist/engine.h>

#include <algorithm>
#include <cstdio>
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
            n_threads_ = m.auto_threads ? std::min(default_n_threads(), m.n_threads) : m.n_threads;
            cpu_set_n_threads(b, n_threads_);
            const char * poll = std::getenv("CAPTIONIST_POLL");
            threadpool_ = cpu_threadpool_new(n_threads_, poll ? std::atoi(poll) : -1);
            cpu_set_threadpool(b, threadpool_);
        }
    }
    profiling_ = env_flag("CAPTIONIST_PROFILE_OPS");
    dump_ = node_dump::from_env();
}

graph_runner::slot_state & graph_runner::slot(int i) {
    if (i < 0 || i >= GRAPH_SLOTS) throw std::logic_error("graph slot out of range");
    slot_state & s = slots_[i];
    if (!s.sched) {
        // created on first use: a stream that never keeps a graph holds one scheduler
        s.sched = ggml_backend_sched_new(backends_.data(), nullptr, (int) backends_.size(), GRAPH_MAX_NODES, false, false);
        if (!s.sched) throw std::runtime_error("cannot create the graph scheduler");
        if (profiling_) ggml_backend_sched_set_eval_callback(s.sched, &graph_runner::profile_node, this);
        s.meta.resize(ggml_tensor_overhead() * GRAPH_MAX_NODES + ggml_graph_overhead_custom(GRAPH_MAX_NODES, false));
    }
    return s;
}

int64_t graph_runner::n_buffer_grows() const {
    int64_t n = 0;
    for (const slot_state & s : slots_) n += s.grows;
    return n;
}

void graph_runner::add_counters(std::map<std::string, double> & out) const {
    out["n_threads"] = n_threads_;
    out["n_graph_builds"] = (double) n_builds_;
    out["n_graph_computes"] = (double) n_computes_;
    out["n_buffer_grows"] = (double) n_buffer_grows();
    out["n_bytes_in"] = (double) n_bytes_in_;
    out["n_bytes_out"] = (double) n_bytes_out_;
    out["n_graph_splits"] = (double) n_splits_;
    out["n_moved_recomputes"] = (double) n_moved_recomputes_;
}

bool graph_runner::profile_node(ggml_tensor * t, bool ask, void * self) {
    graph_runner & r = *static_cast<graph_runner *>(self);
    const auto now = std::chrono::steady_clock::now();
    if (ask) {
        r.op_start_ = now;
        return true;
    }
    std::string key = ggml_op_desc(t);
    if (t->op == GGML_OP_MUL_MAT) {
        const ggml_tensor * w = t->src[0];
        key += std::string(" ") + ggml_type_name(w->type) + " " + std::to_string(w->ne[0]) + "x" +
               std::to_string(w->ne[1]) + "x" + std::to_string(w->ne[2]) + " n=" + std::to_string(t->src[1]->ne[1]);
    }
    op_total & o = r.op_totals_[key];
    o.ms += std::chrono::duration<double, std::milli>(now - r.op_start_).count();
    o.count += 1;
    return true;
}

graph_runner::~graph_runner() {
    if (profiling_ && !op_totals_.empty()) {
        std::vector<std::pair<std::string, op_total>> rows(op_totals_.begin(), op_totals_.end());
        std::sort(rows.begin(), rows.end(), [](const auto & a, const auto & b) { return a.second.ms > b.second.ms; });
        double total = 0;
        for (const auto & r : rows) total += r.second.ms;
        std::fprintf(stderr, "ops: %.1f ms in all\n", total);
        for (const auto & r : rows) {
            std::fprintf(stderr, "%10.1f ms %5.1f%% %8lld  %s\n", r.second.ms, 100.0 * r.second.ms / total,
                         (long long) r.second.count, r.first.c_str());
        }
    }
    for (slot_state & s : slots_) {
        if (s.ctx) ggml_free(s.ctx);
        if (s.sched) ggml_backend_sched_free(s.sched);
    }
    for (ggml_backend_t b : backends_) ggml_backend_free(b);
    cpu_threadpool_free(threadpool_);
}

ggml_context * graph_runner::begin(int i) {
    slot_state & s = slot(i);
    if (s.ctx) ggml_free(s.ctx);
    s.ctx = nullptr;
    ggml_backend_sched_reset(s.sched);
    ggml_init_params p = {s.meta.size(), s.meta.data(), /*no_alloc =*/true};
    s.ctx = ggml_init(p);
    if (!s.ctx) throw std::runtime_error("cannot create a graph context");
    ++n_builds_;
    return s.ctx;
}

ggml_cgraph * graph_runner::new_graph(ggml_context * ctx) const {
    return ggml_new_graph_custom(ctx, GRAPH_MAX_NODES, false);
}

void graph_runner::alloc(ggml_cgraph * gf, int i) {
    slot_state & s = slot(i);
    if (!ggml_backend_sched_alloc_graph(s.sched, gf)) {
        throw std::runtime_error("not enough memory on " + m_.backend_name + " to run the model");
    }
    size_t size = 0;
    for (ggml_backend_t b : backends_) size += ggml_backend_sched_get_buffer_size(s.sched, b);
    s.addresses.clear();
    if (size != s.buffer_size) {
        s.buffer_size = size;
        ++s.grows;
    }
}

void graph_runner::compute(ggml_cgraph * gf, int i) {
    ++n_computes_;
    if (dump_) { // CAPTIONIST_DUMP_NODES: node by node, each output written (node_dump.h)
        const bool on = dump_->begin_compute();
        ggml_backend_sched_set_eval_callback(slot(i).sched, on ? &node_dump::eval : nullptr, on ? dump_ : nullptr);
    }
    note_addresses(slot(i), gf);
    const ggml_status st = ggml_backend_sched_graph_compute(slot(i).sched, gf);
    n_splits_ += ggml_backend_sched_get_n_splits(slot(i).sched);
    if (st != GGML_STATUS_SUCCESS) {
        throw std::runtime_error("the " + m_.backend_name + " backend failed to compute (status " +
                                 std::to_string((int) st) + ")");
    }
}

void graph_runner::note_addresses(slot_state & s, ggml_cgraph * gf) {
    std::vector<const void *> & now = s.scratch; // kept, so that a step allocates nothing
    now.clear();
    for (int n = 0; n < ggml_graph_n_nodes(gf); ++n) {
        const ggml_tensor * t = ggml_graph_node(gf, n);
        now.push_back(t->data);
        for (const ggml_tensor * src : t->src) now.push_back(src ? src->data : nullptr);
    }
    if (!s.addresses.empty() && now != s.addresses) ++n_moved_recomputes_;
    s.addresses.swap(now);
}

void graph_runner::set(ggml_tensor * t, const void * data, size_t bytes, size_t offset) {
    ggml_backend_tensor_set(t, data, offset, bytes);
    n_bytes_in_ += (int64_t) bytes;
}

void graph_runner::get(const ggml_tensor * t, void * data, size_t bytes) {
    ggml_backend_tensor_get(t, data, 0, bytes);
    n_bytes_out_ += (int64_t) bytes;
}

ggml_backend_buffer_type_t graph_runner::weights_buft() const {
    return ggml_backend_dev_buffer_type(m_.device);
}

} // namespace captionist
