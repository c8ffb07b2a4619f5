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

std::once_flag g_prepare_once;
std::mutex g_load_mutex; // ggml's registry is a plain vector: one loader at a time

void prepare_once() {
    std::call_once(g_prepare_once, [] {
        disable_cuda_graphs_unless_asked();
        ggml_log_set(log_callback, nullptr);
    });
}

#if defined(_WIN32)
const char * const k_prefix = "ggml-";
const char * const k_suffix = ".dll";
#else
const char * const k_prefix = "libggml-";
const char * const k_suffix = ".so";
#endif

// "vulkan" for libggml-vulkan.so, "cpu" for libggml-cpu-zen4.so; empty for anything else.
std::string module_backend(const std::string & filename) {
    const std::string prefix = k_prefix, suffix = k_suffix;
    if (filename.size() <= prefix.size() + suffix.size() || filename.rfind(prefix, 0) != 0 ||
        filename.compare(filename.size() - suffix.size(), suffix.size(), suffix) != 0) {
        return "";
    }
    std::string rest = filename.substr(prefix.size(), filename.size() - prefix.size() - suffix.size());
    const size_t dash = rest.find('-');
    if (dash != std::string::npos) rest = rest.substr(0, dash);
    if (rest.empty() || rest == "base" || rest.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
        return "";
    }
    return rest;
}

// What a CPU variant module says of this CPU (ggml_backend_score: 0 = cannot run here), as ggml's own
// loader asks it; -1 when the file does not open or has no score.
int module_score(const std::filesystem::path & path) {
    using score_fn = int (*)();
#if defined(_WIN32)
    const UINT mode = SetErrorMode(SEM_FAILCRITICALERRORS); // no dialog for a missing DLL, as in ggml
    SetErrorMode(mode | SEM_FAILCRITICALERRORS);
    HMODULE h = LoadLibraryW(path.wstring().c_str());
    SetErrorMode(mode);
    if (!h) return -1;
    auto fn = (score_fn) (void *) GetProcAddress(h, "ggml_backend_score");
    const int score = fn ? fn() : -1;
    FreeLibrary(h);
#else
    void * h = dlopen(path.string().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return -1;
    auto fn = (score_fn) dlsym(h, "ggml_backend_score");
    const int score = fn ? fn() : -1;
    dlclose(h);
#endif
    return score;
}

bool cpu_registered() { return cpu_reg() != nullptr; }

// load_cpu_backend with g_load_mutex held.
std::string load_cpu_locked(const std::string & dir_in) {
    if (cpu_registered()) return ""; // linked in, or loaded already
    const std::string dir = dir_in.empty() ? backend_module_dir() : dir_in;
    // CAPTIONIST_CPU_VARIANT=haswell (a development aid for measuring what each instruction set
    // gains): that module instead of the best one for this CPU. A variant this CPU cannot run is the
    // caller's mistake (illegal instruction), as with ggml's own GGML_BACKEND_PATH.
    const char * variant = std::getenv("CAPTIONIST_CPU_VARIANT");
    std::filesystem::path best;
    if (variant && *variant) {
        best = std::filesystem::path(dir) / (std::string(k_prefix) + "cpu-" + variant + k_suffix);
    } else {
        int best_score = 0;
        std::error_code ec;
        for (const auto & e : std::filesystem::directory_iterator(dir, ec)) {
            if (module_backend(e.path().filename().string()) != "cpu") continue;
            const int score = module_score(e.path());
            if (score > best_score || (score == best_score && score > 0 && e.path() < best)) {
                best_score = score;
                best = e.path();
            }
        }
    }
    if (best.empty() || !ggml_backend_load(best.string().c_str())) {
        const char * modules = std::getenv("CAPTIONIST_GGML_MODULES");
        const bool from_env = dir_in.empty() && modules && *modules;
        throw std::runtime_error("no CPU backend of ggml could be loaded from '" + dir + "'" +
                                 (from_env ? std::string(" (CAPTIONIST_GGML_MODULES)") : std::string()) +
                                 (variant && *variant ? std::string(" (CAPTIONIST_CPU_VARIANT=") + variant + ")" : ""));
    }
    return best.string();
}

} // namespace

std::string backend_module_dir() {
    const char * env = std::getenv("CAPTIONIST_GGML_MODULES");
    if (env && *env) return env;
    return ggml_library_dir();
}

std::vector<backend_module> backend_modules(const std::string & dir) {
    std::vector<backend_module> out;
    std::error_code ec;
    for (const auto & e : std::filesystem::directory_iterator(dir.empty() ? backend_module_dir() : dir, ec)) {
        const std::string name = module_backend(e.path().filename().string());
        if (name.empty() || name == "cpu") continue;
        out.push_back({name, e.path().string()});
    }
    std::sort(out.begin(), out.end(), [](const backend_module & a, const backend_module & b) {
        return a.name != b.name ? a.name < b.name : a.path < b.path;
    });
    return out;
}

std::string load_cpu_backend(const std::string & dir) {
    prepare_once();
    std::lock_guard<std::mutex> lock(g_load_mutex);
    return load_cpu_locked(dir);
}

bool load_backend_module(const std::string & path) {
    prepare_once();
    std::lock_guard<std::mutex> lock(g_load_mutex);
    return ggml_backend_load(path.c_str()) != nullptr;
}

void backend_init_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        prepare_once();
        std::lock_guard<std::mutex> lock(g_load_mutex);
        // A linked build has its CPU backend registered already, an installer bundle or the app
        // loads the modules it chose (load_cpu_backend, load_backend_module) before any model, and
        // loading again would register them twice. Otherwise the modules beside libggml (wheels,
        // build trees) or in CAPTIONIST_GGML_MODULES, then ggml's own search (the executable's
        // folder, GGML_BACKEND_PATH) if that found no CPU backend.
        if (cpu_registered()) return;
        const std::string dir = backend_module_dir();
        const char * variant = std::getenv("CAPTIONIST_CPU_VARIANT");
        if (variant && *variant && !dir.empty()) {
            try {
                load_cpu_locked(dir);
            } catch (const std::runtime_error & e) {
                // falls through to "no CPU device" errors, which name the problem
                std::fprintf(stderr, "captionist: %s\n", e.what());
                return;
            }
            for (const backend_module & m : backend_modules(dir)) ggml_backend_load(m.path.c_str());
            return;
        }
        if (!dir.empty()) ggml_backend_load_all_from_path(dir.c_str());
        if (!cpu_registered()) ggml_backend_load_all();
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
