// captionist/engine.h - the Captionist speech engine: streaming speech recognition on ggml.
//
// Two model families sit behind this one interface: Voxtral Mini 4B Realtime (an audio LLM that
// emits one token per 80 ms) and cache-aware FastConformer RNN-T models (Nemotron Speech
// Streaming, Nemotron 3.5 ASR, Parakeet-EOU). A caller never needs to know which it has: the
// model's info() says what it supports (latencies, languages, punctuation, end of utterance).
//
// Usage:
//   captionist::model_load_options opts;               // backend "auto" | "cpu" | "metal" | "cuda"
//   std::shared_ptr<const captionist::model> m = captionist::model_load("model.gguf", opts);
//   const captionist::model_info & info = m->info();   // info.latencies_ms, info.languages, ...
//   captionist::stream_options so;
//   so.latency_ms = info.default_latency_ms;            // one of info.latencies_ms
//   std::unique_ptr<captionist::stream> s = m->new_stream(so);
//   captionist::stream_result u = s->feed(pcm, n);      // 16 kHz mono float, any chunk size
//   u = s->finish();                                    // end of input: decode to the end
//   for (const auto & t : u.new_tokens) ...             // ids, text pieces, audio times
//   for (const auto & e : u.events) ...                 // END_OF_UTTERANCE, ...
//
// Thread safety: a model is immutable after model_load and may be shared by any number of
// threads and streams. A stream (its caches, backend instances and scheduler) is owned by one
// thread at a time; calling into one stream from two threads at once is detected and refused
// with std::logic_error.
// Errors: bad files and inputs throw std::runtime_error / std::invalid_argument with a message that
// names the problem; the engine never calls exit() or abort() on bad input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace captionist {

enum class model_architecture {
    MODEL_ARCHITECTURE_VOXTRAL_REALTIME,   // general.architecture "voxtral_realtime"
    MODEL_ARCHITECTURE_FASTCONFORMER_RNNT, // general.architecture "fastconformer_rnnt"
};

// The GGUF `general.architecture` string of `a`.
const char * model_architecture_name(model_architecture a);

enum class stream_event_type {
    STREAM_EVENT_END_OF_UTTERANCE, // the model marked the end of an utterance (the stream goes on)
    STREAM_EVENT_REANCHOR,         // Voxtral: the decoder restarted from a fresh prompt (no text lost)
    STREAM_EVENT_FINISHED,         // finish(): everything fed has been decoded
};

// Stable lower-case name of `t` ("end_of_utterance", "reanchor", "finished").
const char * stream_event_type_name(stream_event_type t);

enum class repack_cache_state {
    REPACK_CACHE_NONE,    // no cache asked for, or no weights the CPU backend repacks
    REPACK_CACHE_USED,    // the repacked weights were mapped from the cache (not repacked)
    REPACK_CACHE_WRITTEN, // repacked afresh, and the cache written for the next load
    REPACK_CACHE_FAILED,  // repacked afresh; the cache could not be written (repack_cache_error)
};

// Stable lower-case name of `s` ("none", "used", "written", "failed").
const char * repack_cache_state_name(repack_cache_state s);

struct model_load_options {
    std::string backend = "auto"; // "auto", "cpu", or a ggml backend name: "metal", "cuda", "vulkan", ...
    int n_threads = 0;            // 0 = number of physical cores
    bool use_mmap = true;         // map the file where the device reads host memory (CPU, Metal)
    // A folder for repack caches (repack_cache.h): where ggml's CPU backend re-lays out matrices
    // for its faster kernels, the first load writes that layout there and later loads map it
    // instead of repacking (only with use_mmap: a cache is mapped). "" = no cache.
    std::string repack_cache_dir;
};

// What a model file is and what it supports. Filled once at load; never changes.
struct model_info {
    model_architecture architecture = model_architecture::MODEL_ARCHITECTURE_VOXTRAL_REALTIME;
    std::string variant;   // "voxtral_realtime", "nemotron_asr_streaming", "nemotron3_5_asr", "parakeet_eou"
    std::string name;      // general.name
    std::string path;
    std::string backend;   // device name: "CPU", "CUDA0", "Metal", ...
    std::string cpu_features; // the CPU backend loaded: its variant and instruction sets ("AVX2 AVX512 ...")
    int n_threads = 1;
    size_t weight_bytes = 0;
    bool weights_mapped = false;     // weights read in place from the mapped file (not copied)
    int64_t repacked_tensors = 0;    // weights the CPU backend re-laid out for its faster kernels
    std::map<std::string, int64_t> repacked_layouts; // of those, how many per layout (buffer type name)
    int64_t product_twins = 0;       // of those, second copies of weights also read by row (tied head)
    repack_cache_state repack_cache = repack_cache_state::REPACK_CACHE_NONE;
    std::string repack_cache_path;   // the cache file, when there was one to use or write
    std::string repack_cache_error;  // why it could not be written (REPACK_CACHE_FAILED)
    std::vector<std::string> repack_cache_removed; // dead files the load swept from the cache folder
    std::string column_kernels;      // our few-column product kernels on this CPU ("avx512_vnni", "avx2", "")
    bool flash_attention = false;    // attention runs as one fused kernel (ggml_flash_attn_ext)
    bool batch_flash_attention = false; // only large batches do, from a row copy of the values (CPU, F16 caches)
    std::string kv_cache_type;       // ggml type of the attention caches ("f32", "f16")
    int sample_rate = 16000;
    std::vector<int> latencies_ms;   // the latency choices the model supports, ascending
    int default_latency_ms = 0;      // one of latencies_ms
    std::vector<std::string> languages; // languages the user may choose; empty when the model picks itself
    std::string default_language;    // "" when languages is empty, else one of them ("auto" where supported)
    bool punctuation = false;        // the model writes punctuation and capitalization
    bool end_of_utterance = false;   // the model marks ends of utterances (STREAM_EVENT_END_OF_UTTERANCE)
    int n_vocab = 0;
    std::map<std::string, int64_t> dims;      // architecture-specific sizes ("encoder.n_layer", ...)
    std::map<std::string, int64_t> tensor_types; // ggml type name -> number of tensors
};

struct stream_options {
    int latency_ms = 0;                    // 0 = the model's default; else one of info().latencies_ms
    std::string language;                  // "" = the model's default; else one of info().languages
    bool stop_at_end_of_utterance = false; // true: the first end of utterance ends decoding (Voxtral
                                           // reference offline rule, for golden tests); false: live rule
    bool capture = false;                  // keep intermediates for inspection (tests)
};

struct stream_token {
    int32_t id = 0;        // the model's vocabulary id (no blanks; control tokens such as <EOU> included)
    int64_t time_ms = 0;   // audio time the token belongs to
    std::string piece;     // text this token completed ('' for control tokens or a split character)
    bool is_control = false;
};

struct stream_event {
    stream_event_type type;
    size_t token_index = 0; // how many of the result's new_tokens precede the event
};

struct stream_result {
    std::vector<stream_token> new_tokens; // tokens committed by this call
    std::vector<stream_event> events;
    int64_t audio_ms_received = 0;        // real audio fed so far
    int64_t audio_ms_decoded = 0;         // real audio whose every token is final
    std::string text_tail;                // finish(): held-back bytes of a split character, decoded
};

// Named float arrays kept when stream_options::capture is set: name -> (rows x cols, row-major).
struct stream_capture_array {
    std::vector<float> data;
    int64_t cols = 0;
};
using stream_capture = std::map<std::string, stream_capture_array>;

class stream {
public:
    virtual ~stream() = default;

    // Append samples (any count, may be 0). Throws std::invalid_argument on NaN/Inf and
    // std::logic_error after finish(). Returns what became committed.
    virtual stream_result feed(const float * pcm, size_t n) = 0;
    // End of input: decode everything fed. A second call returns an empty result.
    virtual stream_result finish() = 0;
    // Start over with new options (latency_ms 0 / language "" keep the current ones); keeps allocations.
    virtual void reset(const stream_options & opts) = 0;

    virtual int latency_ms() const = 0;
    virtual std::string language() const = 0;
    virtual const std::vector<int32_t> & token_ids() const = 0; // every committed id so far
    virtual bool finished() const = 0;
    virtual size_t state_bytes() const = 0;   // memory held by this stream's caches and buffers
    virtual std::map<std::string, double> timings() const = 0; // cumulative ms and counts
    virtual const stream_capture & captured() const = 0;

    // Teacher forcing (tests, Voxtral): the decoder input after output j is forced[j].
    virtual void set_forced_tokens(std::vector<int32_t> forced) = 0;
};

class model : public std::enable_shared_from_this<model> {
public:
    virtual ~model() = default;
    virtual const model_info & info() const = 0;
    // Raw bytes of token `id` as the tokenizer defines them (empty for ids out of range).
    virtual std::string token_bytes(int32_t id) const = 0;
    virtual bool is_control(int32_t id) const = 0;
    // A new stream over this model. Throws std::invalid_argument for an unsupported latency or language.
    virtual std::unique_ptr<stream> new_stream(const stream_options & opts) const = 0;

protected:
    model() = default;
    model(const model &) = delete;
    model & operator=(const model &) = delete;
};

// Load a GGUF written by `captionist convert`/`quantize`. Throws std::runtime_error with a message
// naming the problem (missing file, not a GGUF, truncated, unknown architecture, missing tensor,
// shape mismatch, unknown backend). Never aborts the process.
std::shared_ptr<const model> model_load(const std::string & path, const model_load_options & opts);

// type_name: Q8_0, Q5_K, Q4_K, Q6_K, F16, Q4_K_M or Q5_K_M. Which tensors keep their type is the
// architecture's rule (engine/GGUF.md). Writes to a temporary file and renames it, so a failure
// leaves no partial output. `progress(done_bytes, total_bytes)` may be empty.
void quantize_model(const std::string & src, const std::string & dst, const std::string & type_name, int n_threads,
                    const std::function<void(size_t, size_t)> & progress);

// Physical core count (best effort).
int cpu_physical_cores();

// The thread count a model gets with n_threads = 0: the physical cores, no more than the CPUs this
// process may run on (affinity) and the CPUs idle right now (online CPUs minus the other runnable
// threads), at least 1. Compute threads wait for each other at every op, so one that shares a core
// with other work stalls them all: on a busy machine fewer threads are faster.
int default_n_threads();

enum class compute_device_type {
    COMPUTE_DEVICE_CPU,
    COMPUTE_DEVICE_GPU,            // a discrete GPU
    COMPUTE_DEVICE_INTEGRATED_GPU, // a GPU sharing host memory
    COMPUTE_DEVICE_ACCELERATOR,
};
const char * compute_device_type_name(compute_device_type t); // "cpu", "gpu", "igpu", "accelerator"

// One device this build of ggml can run models on (its backend module loaded and its driver found).
struct compute_device {
    std::string backend;     // the backend: "CPU", "Vulkan", "CUDA", "Metal", ...
    std::string name;        // the device: "CPU", "Vulkan0", "CUDA0" (what model_load_options::backend takes)
    std::string description; // e.g. the GPU's or the CPU's name
    compute_device_type type = compute_device_type::COMPUTE_DEVICE_CPU;
    size_t memory_total = 0; // bytes (0: unknown)
    size_t memory_free = 0;
    std::string cpu_features; // CPU: the variant loaded and its instruction sets
    bool is_default = false;  // what backend = "auto" picks
};
std::vector<compute_device> compute_devices();

// Loading ggml's backends one module at a time, for a caller that guards each GPU driver's start
// (the app: captionist/backend_guard.py). Without these calls the first model or compute_devices()
// loads every module found (backend_init_once); after load_cpu_backend it loads nothing more.
// The folder: CAPTIONIST_GGML_MODULES if set, else libggml's own (wheels, build trees, installers).
std::string backend_module_dir();
// A loadable non-CPU backend module: name "vulkan" for libggml-vulkan.so (ggml-vulkan.dll).
struct backend_module {
    std::string name;
    std::string path;
};
// The non-CPU modules in `dir` (backend_module_dir() when empty), by name; none for a linked build.
std::vector<backend_module> backend_modules(const std::string & dir);
// Registers the CPU backend: the variant that scores best on this CPU (CAPTIONIST_CPU_VARIANT: that
// one); returns its path, "" when a CPU backend is registered already; throws std::runtime_error when
// none loads. Call before any model or compute_devices().
std::string load_cpu_backend(const std::string & dir);
// Registers one module of backend_modules() (its driver starts now); false when ggml refuses it (no
// driver, no device): that is not an error.
bool load_backend_module(const std::string & path);

} // namespace captionist
