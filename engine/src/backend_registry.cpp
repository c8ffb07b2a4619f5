#include "backend_registry.h"

#include "env_flag.h"

#include <captionist/engine.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace captionist {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return (char) std::tolower(c); });
    return s;
}

// ggml prints through this. Every failure reaches the caller as an exception with its own
// message, so ggml's lines are shown only when CAPTIONIST_GGML_LOG is set (for debugging);
// CAPTIONIST_GGML_LOG=debug adds its debug lines (with GGML_SCHED_DEBUG=2: the backend of every
// node of every graph).
void log_callback(ggml_log_level level, const char * text, void *) {
    static const char * env = std::getenv("CAPTIONIST_GGML_LOG");
    static const bool debug = env != nullptr && std::string(env) == "debug";
    static thread_local ggml_log_level last = GGML_LOG_LEVEL_NONE;
    if (level != GGML_LOG_LEVEL_CONT) last = level;  // a continued line keeps its line's level
    if (env != nullptr && (last != GGML_LOG_LEVEL_DEBUG || debug)) {
        fputs(text, stderr);
    }
}

// The folder holding libggml (its backend modules are installed beside it); empty if unknown.
std::string ggml_library_dir() {
    std::string path;
#if defined(_WIN32)
    HMODULE h = nullptr;
    if (GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           (LPCSTR) (void *) &ggml_backend_load_all, &h)) {
        char buf[4096];
        const DWORD n = GetModuleFileNameA(h, buf, sizeof(buf));
        if (n > 0 && n < sizeof(buf)) path.assign(buf, n);
    }
    const size_t cut = path.find_last_of("\\/");
#else
    Dl_info info{};
    if (dladdr((void *) &ggml_backend_load_all, &info) && info.dli_fname) path = info.dli_fname;
    const size_t cut = path.find_last_of('/');
#endif
    return cut == std::string::npos ? std::string() : path.substr(0, cut);
}

ggml_backend_reg_t cpu_reg() {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    return dev ? ggml_backend_dev_backend_reg(dev) : nullptr;
}

template <typename F> F cpu_proc(const char * name) {
    ggml_backend_reg_t reg = cpu_reg();
    return reg ? (F) ggml_backend_reg_get_proc_address(reg, name) : nullptr;
}

bool is_cpu(ggml_backend_t backend) {
    ggml_backend_dev_t dev = backend ? ggml_backend_get_device(backend) : nullptr;
    return dev && ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU;
}

// CAPTIONIST_CPU_VARIANT=haswell (a development aid for measuring what each instruction set
// gains): that CPU module instead of the best one ggml would pick, and the other backends as usual.
// A variant this CPU cannot run is the caller's mistake (illegal instruction), as with ggml's own
// GGML_BACKEND_PATH.
void load_with_cpu_variant(const std::string & dir, const std::string & variant) {
#if defined(_WIN32)
    const std::string prefix = "ggml-", suffix = ".dll";
#else
    const std::string prefix = "libggml-", suffix = ".so";
#endif
    const std::filesystem::path cpu = std::filesystem::path(dir) / (prefix + "cpu-" + variant + suffix);
    if (!std::filesystem::exists(cpu) || !ggml_backend_load(cpu.string().c_str())) {
        std::fprintf(stderr, "captionist: CAPTIONIST_CPU_VARIANT: cannot load %s\n", cpu.string().c_str());
        return; // falls through to "no CPU device" errors, which name the problem
    }
    std::error_code ec;
    for (const auto & e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        const bool module = name.rfind(prefix, 0) == 0 && name.size() > suffix.size() &&
                            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
        if (!module || name.rfind(prefix + "cpu", 0) == 0 || name.rfind(prefix + "base", 0) == 0) continue;
        ggml_backend_load(e.path().string().c_str());
    }
}

// ggml's CUDA graphs (ggml built with GGML_CUDA_GRAPHS; HIP and MUSA graphs share the code) capture a
// graph's kernels once and then replay them whenever the scheduler hands over a split it has not
// made again, without looking at the nodes (ggml-cuda.cu, ggml_cuda_graph_update_required: the same
// cgraph uid counts as unchanged). The engine's kept graphs move their cache-write and window views
// between computes (graph_runner.h, move_view; timings()["n_moved_recomputes"] counts it), so a
// replay would write and read the slots of the step it was captured at: wrong text. They are off in
// this process unless CAPTIONIST_CUDA_GRAPHS=1 asks for them (development: tools/gpu_check.sh
// measures them), or the user already set the variable. Set before any backend computes: ggml reads
// it once, at its first CUDA graph compute. The installers' ggml is built without them anyway.
void disable_cuda_graphs_unless_asked() {
    if (env_flag("CAPTIONIST_CUDA_GRAPHS") || std::getenv("GGML_CUDA_DISABLE_GRAPHS")) return;
#ifdef _WIN32
    _putenv_s("GGML_CUDA_DISABLE_GRAPHS", "1");
#else
    setenv("GGML_CUDA_DISABLE_GRAPHS", "1", 0);
#endif
}

} // namespace

void backend_init_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        disable_cuda_graphs_unless_asked();
        ggml_log_set(log_callback, nullptr);
        const std::string dir = ggml_library_dir();
        // A linked build has its CPU backend registered already, and an installer bundle registers
        // its modules at start (captionist.frozen): loading again would register them twice.
        // Otherwise the modules beside libggml (wheels, build trees), then ggml's own search (the
        // executable's folder, GGML_BACKEND_PATH) if that found no CPU backend.
        if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)) return;
        const char * variant = std::getenv("CAPTIONIST_CPU_VARIANT");
        if (variant && *variant && !dir.empty()) {
            load_with_cpu_variant(dir, variant);
            return;
        }
        if (!dir.empty()) ggml_backend_load_all_from_path(dir.c_str());
        if (!ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)) ggml_backend_load_all();
    });
}

ggml_backend_dev_t pick_device(const std::string & want) {
    const std::string w = lower(want);
    std::string available;
    ggml_backend_dev_t cpu = nullptr, gpu = nullptr, named = nullptr;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        const std::string name = ggml_backend_dev_name(d);
        const std::string reg = ggml_backend_reg_name(ggml_backend_dev_backend_reg(d));
        available += (available.empty() ? "" : ", ") + name;
        const auto type = ggml_backend_dev_type(d);
        if (type == GGML_BACKEND_DEVICE_TYPE_CPU && !cpu) cpu = d;
        // "auto" takes a GPU, never a software rasterizer posing as one (Mesa's lavapipe, SwiftShader):
        // the CPU backend is far faster than those on the same cores
        const char * desc = ggml_backend_dev_description(d);
        const std::string dl = lower(desc ? desc : "");
        const bool software = dl.find("llvmpipe") != std::string::npos || dl.find("lavapipe") != std::string::npos ||
                              dl.find("swiftshader") != std::string::npos;
        if ((type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU) && !gpu && !software) gpu = d;
        if (!named && w != "auto" && w != "cpu" && (lower(reg) == w || lower(name).rfind(w, 0) == 0)) named = d;
    }
    if (w == "auto") {
        if (gpu) return gpu;
        if (cpu) return cpu;
    } else if (w == "cpu") {
        if (cpu) return cpu;
    } else if (w.empty() || w.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos) {
        throw std::runtime_error("unknown backend '" + want + "' (use auto, cpu or a ggml backend name)");
    } else {
        if (named) return named;
        throw std::runtime_error("backend '" + want + "' is not available in this ggml build (available: " +
                                 available + ")");
    }
    throw std::runtime_error("no usable ggml device found (available: " + available + ")");
}

std::string cpu_backend_features() {
    ggml_backend_reg_t reg = cpu_reg();
    auto get = reg ? (ggml_backend_get_features_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features")
                   : nullptr;
    std::string out;
    if (!get) return out;
    for (ggml_backend_feature * f = get(reg); f && f->name; ++f) {
        if (!out.empty()) out += ' ';
        out += f->name;
        if (f->value && std::string(f->value) != "1") out += std::string("=") + f->value;
    }
    return out;
}

void cpu_set_n_threads(ggml_backend_t backend, int n_threads) {
    if (!is_cpu(backend)) return;
    if (auto fn = cpu_proc<ggml_backend_set_n_threads_t>("ggml_backend_set_n_threads")) fn(backend, n_threads);
}

ggml_threadpool * cpu_threadpool_new(int n_threads, int poll) {
    using new_fn = ggml_threadpool * (*) (ggml_threadpool_params *);
    auto fn = cpu_proc<new_fn>("ggml_threadpool_new");
    if (!fn) return nullptr;
    ggml_threadpool_params tp = ggml_threadpool_params_default(n_threads);
    if (poll >= 0) tp.poll = (uint32_t) std::min(poll, 100);
    return fn(&tp);
}

void cpu_threadpool_free(ggml_threadpool * tp) {
    using free_fn = void (*)(ggml_threadpool *);
    if (!tp) return;
    if (auto fn = cpu_proc<free_fn>("ggml_threadpool_free")) fn(tp);
}

void cpu_set_threadpool(ggml_backend_t backend, ggml_threadpool * tp) {
    using set_fn = void (*)(ggml_backend_t, ggml_threadpool *);
    if (!is_cpu(backend) || !tp) return;
    if (auto fn = cpu_proc<set_fn>("ggml_backend_cpu_set_threadpool")) fn(backend, tp);
}

} // namespace captionist

namespace captionist {

const char * compute_device_type_name(compute_device_type t) {
    switch (t) {
    case compute_device_type::COMPUTE_DEVICE_CPU: return "cpu";
    case compute_device_type::COMPUTE_DEVICE_GPU: return "gpu";
    case compute_device_type::COMPUTE_DEVICE_INTEGRATED_GPU: return "igpu";
    case compute_device_type::COMPUTE_DEVICE_ACCELERATOR: return "accelerator";
    }
    return "unknown";
}

std::vector<compute_device> compute_devices() {
    backend_init_once();
    std::vector<compute_device> out;
    ggml_backend_dev_t best = nullptr;
    try {
        best = pick_device("auto");
    } catch (const std::runtime_error &) {
    }
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        compute_device c;
        c.backend = ggml_backend_reg_name(ggml_backend_dev_backend_reg(d));
        c.name = ggml_backend_dev_name(d);
        const char * desc = ggml_backend_dev_description(d);
        c.description = desc ? desc : "";
        switch (ggml_backend_dev_type(d)) {
        case GGML_BACKEND_DEVICE_TYPE_CPU: c.type = compute_device_type::COMPUTE_DEVICE_CPU; break;
        case GGML_BACKEND_DEVICE_TYPE_GPU: c.type = compute_device_type::COMPUTE_DEVICE_GPU; break;
        case GGML_BACKEND_DEVICE_TYPE_IGPU: c.type = compute_device_type::COMPUTE_DEVICE_INTEGRATED_GPU; break;
        default: c.type = compute_device_type::COMPUTE_DEVICE_ACCELERATOR; break;
        }
        ggml_backend_dev_memory(d, &c.memory_free, &c.memory_total);
        if (c.type == compute_device_type::COMPUTE_DEVICE_CPU) c.cpu_features = cpu_backend_features();
        c.is_default = d == best;
        out.push_back(c);
    }
    return out;
}

std::vector<ggml_backend_buffer_type_t> cpu_extra_bufts() {
    std::vector<ggml_backend_buffer_type_t> out;
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    auto get = cpu_proc<ggml_backend_dev_get_extra_bufts_t>("ggml_backend_dev_get_extra_bufts");
    if (!dev || !get) return out;
    if (env_flag("CAPTIONIST_NO_REPACK")) return out;
    for (ggml_backend_buffer_type_t * p = get(dev); p && *p; ++p) {
        // Never ggml's AMX layout (Intel Xeon 4th generation and later): the CPU variant built with
        // GCC 12 (Debian 12, our Linux builds) loads a tile configuration whose rows and column
        // widths the compiler dropped as dead stores (its _tile_loadconfig tells the compiler that
        // only the first 8 bytes are read), so the first AMX product stops the process with SIGILL
        // (seen on a Sapphire Rapids VM: `vpxor; vmovdqa64 %zmm0; movb $1; ldtilecfg`, then
        // tileloadd). The other layouts serve those types, and live streams' few columns go through
        // the column kernels anyway.
        if (std::string(ggml_backend_buft_name(*p)) == "AMX") continue;
        out.push_back(*p);
    }
    return out;
}

} // namespace captionist
