// graph_runner.h - one stream's compute resources: its own backend instances and scheduler.
//
// ggml backends keep per-instance work buffers, so two threads must never compute on the same
// backend object. Each stream therefore owns a graph_runner; the model's weights are shared.
// Usage per graph: ctx = begin(); build into ctx; alloc(gf); set inputs; compute(gf); read outputs.
#pragma once

#include <ggml-backend.h>
#include <ggml.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace captionist {

struct model_base;
class node_dump;

// Graph slots: slot 0 holds a graph built for one compute; the other slots each keep one graph and
// its allocation for as long as the caller wants, so a stream can build its steady-state graphs
// once and recompute them with new inputs (ggml's scheduler keeps one allocation per instance).
constexpr int GRAPH_SLOTS = 8;

class graph_runner {
public:
    explicit graph_runner(const model_base & m);
    graph_runner(const graph_runner &) = delete;
    graph_runner & operator=(const graph_runner &) = delete;
    ~graph_runner();

    // A fresh no_alloc context for building one graph in `slot` (that slot's previous graph is
    // released).
    ggml_context * begin(int slot = 0);
    ggml_cgraph * new_graph(ggml_context * ctx) const;
    // Allocates the graph's intermediate tensors; throws if the backend runs out of memory.
    void alloc(ggml_cgraph * gf, int slot = 0);
    // Runs the graph (again, for a kept graph whose inputs were set); throws on backend failure.
    void compute(ggml_cgraph * gf, int slot = 0);
    // A graph without inputs (copies between device tensors) built by `build` in slot 0, allocated
    // and computed once.
    template <typename Build> void run_once(Build && build) {
        ggml_context * ctx = begin();
        ggml_cgraph * gf = new_graph(ctx);
        build(ctx, gf);
        alloc(gf);
        compute(gf);
    }

    ggml_backend_buffer_type_t weights_buft() const;

    // A graph input set from the host, an output read back; counted (bytes between host and
    // device memory when the device is not the CPU).
    // `offset` (bytes into t) writes part of an input that is otherwise kept from the last compute.
    void set(ggml_tensor * t, const void * data, size_t bytes, size_t offset = 0);
    void get(const ggml_tensor * t, void * data, size_t bytes);
    int64_t n_bytes_in() const { return n_bytes_in_; }
    int64_t n_bytes_out() const { return n_bytes_out_; }

    int n_threads() const { return n_threads_; }           // CPU compute threads of this runner
    int64_t n_builds() const { return n_builds_; }       // begin() calls
    int64_t n_computes() const { return n_computes_; }   // compute() calls
    int64_t n_buffer_grows() const;                       // compute buffers (re)allocated so far
    // All of the above under the names streams report them in timings(): n_threads,
    // n_graph_builds, n_graph_computes, n_buffer_grows, n_bytes_in, n_bytes_out, n_graph_splits,
    // n_moved_recomputes.
    void add_counters(std::map<std::string, double> & out) const;

private:
    struct slot_state {
        ggml_backend_sched_t sched = nullptr;
        std::vector<uint8_t> meta;
        ggml_context * ctx = nullptr;
        size_t buffer_size = 0;
        int64_t grows = 0;
        // every node's and source's data address at the last compute since alloc() (empty: none yet)
        std::vector<const void *> addresses, scratch;
    };
    void note_addresses(slot_state & s, ggml_cgraph * gf);
    slot_state & slot(int i);

    const model_base & m_;
    std::vector<ggml_backend_t> backends_;
    slot_state slots_[GRAPH_SLOTS];
    ggml_threadpool * threadpool_ = nullptr;
    int n_threads_ = 1;
    int64_t n_builds_ = 0;
    int64_t n_computes_ = 0;
    // splits summed over compute() calls: one per run of nodes on one backend, so a graph that
    // stays on its device counts 1 and every op that falls back to the CPU adds a split (and the
    // copies between the two that bytes_in / bytes_out do not count)
    int64_t n_splits_ = 0;
    // computes of an allocated graph in which a node or source now lies at another address than at
    // its last compute (a view moved by move_view): ggml's CUDA graphs would replay such a graph
    // with the old addresses (backend_registry.cpp turns them off for this reason)
    int64_t n_moved_recomputes_ = 0;
    int64_t n_bytes_in_ = 0;
    int64_t n_bytes_out_ = 0;
    // CAPTIONIST_PROFILE_OPS=1: every node computed on its own and timed; totals per op printed to
    // stderr when the runner is destroyed (a development aid: it serialises the graph).
    struct op_total {
        double ms = 0;
        int64_t count = 0;
    };
    static bool profile_node(ggml_tensor * t, bool ask, void * self);
    bool profiling_ = false;
    node_dump * dump_ = nullptr; // CAPTIONIST_DUMP_NODES (node_dump.h)
    std::chrono::steady_clock::time_point op_start_;
    std::map<std::string, op_total> op_totals_;
};

constexpr size_t GRAPH_MAX_NODES = 16384;

// Moves a view in a kept graph to `offs` bytes into the tensor it views (its data follows), e.g. a
// cache write to the next position's slot: the graph is recomputed without being rebuilt.
inline void move_view(ggml_tensor * t, size_t offs) {
    t->view_offs = offs;
    t->data = (char *) t->view_src->data + offs;
}

} // namespace captionist
