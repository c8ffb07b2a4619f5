// node_dump.h - every computed node's output written to a file, for finding the first op where two
// backends part (CAPTIONIST_DUMP_NODES=FILE; tools/compare_node_dumps.py reads two such files).
//
// A development aid: it makes ggml's scheduler compute the graph node by node (an eval callback)
// and copies each output to the host. Records are appended per graph compute, up to
// CAPTIONIST_DUMP_COMPUTES computes per process (default 4), so a short stream on two backends
// gives two files of nearly the same graphs (with CAPTIONIST_FLASH_ATTN=0 and one
// CAPTIONIST_KV_TYPE on both; the engine still adds a few copies in device memory), which the
// comparison aligns node by node.
//
// Record layout (little-endian): "CNDR", u32 compute, u32 node (its place among the compute's
// observed nodes), strings (u16 length + bytes) op and name, u8 n_src and per source an i32 (the
// node it reads, through views, or the last node that wrote into the tensor it views, as a cache
// write does; -1 for weights, inputs and state), its name and its layout, then the node's layout,
// u8 has_values, u64 n, n x f32. A layout is i32 ggml type, 4 x i64 ne, 4 x i64 nb (bytes). Values
// are written for F32, F16 and I32 outputs (as f32, in ggml's element order, strided views
// gathered), else has_values 0.
#pragma once

#include <ggml.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>

namespace captionist {

class node_dump {
public:
    // The process-wide dump named by CAPTIONIST_DUMP_NODES, or nullptr when it is not set.
    static node_dump * from_env();

    // Starts the next graph compute's records; false once the limit of computes is reached.
    bool begin_compute();
    // ggml_backend_sched_eval_callback: observes every node that is not a view.
    static bool eval(ggml_tensor * t, bool ask, void * self);

private:
    node_dump(std::FILE * f, int64_t max_computes) : f_(f), max_computes_(max_computes) {}
    void write(const ggml_tensor * t);

    std::FILE * f_;
    int64_t max_computes_;
    int64_t compute_ = -1;
    uint32_t node_ = 0;
    std::unordered_map<const ggml_tensor *, uint32_t> index_;   // this compute's observed nodes
    std::unordered_map<const ggml_tensor *, uint32_t> written_; // tensors they wrote into, through views
    std::mutex mu_; // streams on several threads share the file
};

} // namespace captionist
