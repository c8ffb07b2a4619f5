#include "gguf_file.h"

#include "backend_registry.h"
#include "column_products.h"
#include "env_flag.h"
#include "mapped_file.h"
#include "repack_cache.h"
#include "utf8_assembler.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace captionist {

namespace {

// Where `t`'s data starts in the file.
size_t file_offset(const gguf_file & f, const ggml_tensor * t) {
    return gguf_get_data_offset(f.gguf) + gguf_get_tensor_offset(f.gguf, gguf_find_tensor(f.gguf, ggml_get_name(t)));
}

std::runtime_error truncated(const gguf_file & f, const ggml_tensor * t) {
    return std::runtime_error("model file '" + f.path + "' is truncated (tensor '" + ggml_get_name(t) + "')");
}

// Reads one tensor's bytes, found at `from`'s place in the file, into `t`'s (allocated) buffer:
// straight from the mapping when there is one (then its pages are released: the copy, repacked,
// is what the model keeps), else through `in`.
void read_tensor(const gguf_file & f, const mapped_file * mf, std::ifstream & in, std::vector<char> & staging,
                 ggml_tensor * t, const ggml_tensor * from) {
    const size_t nbytes = ggml_nbytes(t);
    if (mf) {
        const size_t off = file_offset(f, from);
        if (off + nbytes > mf->size()) { // the file changed since it was opened
            throw truncated(f, t);
        }
        ggml_backend_tensor_set(t, mf->data() + off, 0, nbytes);
        mf->release(mf->data() + off, nbytes);
        return;
    }
    in.seekg((std::streamoff) file_offset(f, from));
    if (ggml_backend_buffer_is_host(t->buffer)) {
        in.read((char *) t->data, (std::streamsize) nbytes);
    } else {
        staging.resize(nbytes);
        in.read(staging.data(), (std::streamsize) nbytes);
        if (in) ggml_backend_tensor_set(t, staging.data(), 0, nbytes);
    }
    if (!in) {
        throw truncated(f, t);
    }
}

// Reads `tensors` from the file into their (allocated) buffers, a twin from its source's bytes
// (`source_of`). With n_threads > 1 (CPU buffers only: ggml's repacking is CPU work done in
// tensor_set, one tensor at a time) the tensors are shared out among that many threads, each with
// its own stream; the first error stops the others and is thrown here.
void read_tensors(const gguf_file & f, const std::vector<ggml_tensor *> & tensors, int n_threads,
                  const std::map<const ggml_tensor *, const ggml_tensor *> & source_of = {},
                  const mapped_file * mf = nullptr) {
    if (tensors.empty()) return;
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex err_mutex;
    std::exception_ptr err;
    auto work = [&]() {
        try {
            std::ifstream in;
            if (!mf) {
                in.open(f.path, std::ios::binary);
                if (!in) throw std::runtime_error("cannot open model file '" + f.path + "'");
            }
            std::vector<char> staging;
            for (size_t i = next++; i < tensors.size() && !failed; i = next++) {
                const auto src = source_of.find(tensors[i]);
                read_tensor(f, mf, in, staging, tensors[i], src == source_of.end() ? tensors[i] : src->second);
            }
        } catch (...) {
            std::lock_guard<std::mutex> lock(err_mutex);
            if (!err) err = std::current_exception();
            failed = true;
        }
    };
    std::vector<std::thread> helpers;
    const size_t n_helpers = std::min<size_t>((size_t) std::max(n_threads, 1), tensors.size()) - 1;
    for (size_t i = 0; i < n_helpers; ++i) {
        try {
            helpers.emplace_back(work);
        } catch (const std::system_error &) {
            break; // no more threads to be had: the ones running (and this one) read the rest
        }
    }
    work();
    for (std::thread & t : helpers) t.join();
    if (err) std::rethrow_exception(err);
}

// One buffer of `buft` holding `tensors` (allocated in order).
ggml_backend_buffer_t alloc_group(ggml_backend_buffer_type_t buft, const std::vector<ggml_tensor *> & tensors,
                                  const std::string & where) {
    const size_t align = ggml_backend_buft_get_alignment(buft);
    size_t size = 0;
    for (ggml_tensor * t : tensors) size += GGML_PAD(ggml_backend_buft_get_alloc_size(buft, t), align);
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(buft, std::max<size_t>(size, 1));
    if (!buf) {
        throw std::runtime_error("not enough memory on " + where + " for the model weights");
    }
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_tallocr ta = ggml_tallocr_new(buf);
    for (ggml_tensor * t : tensors) {
        if (ggml_tallocr_alloc(&ta, t) != GGML_STATUS_SUCCESS) {
            ggml_backend_buffer_free(buf);
            throw std::runtime_error("cannot place tensor '" + std::string(ggml_get_name(t)) + "' on " + where);
        }
    }
    return buf;
}

// The first of `bufts` whose layout ggml's CPU backend can multiply `w` in.
ggml_backend_buffer_type_t repack_buft_for(ggml_backend_dev_t cpu, const std::vector<ggml_backend_buffer_type_t> & bufts,
                                          ggml_tensor * w) {
    if (bufts.empty() || ggml_n_dims(w) != 2) return nullptr;
    ggml_init_params p = {ggml_tensor_overhead() * 4, nullptr, /*no_alloc =*/true};
    ggml_context * ctx = ggml_init(p);
    if (!ctx) return nullptr;
    ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, w->ne[0], 2);
    ggml_tensor * op = ggml_mul_mat(ctx, w, x);
    ggml_backend_buffer_type_t found = nullptr;
    for (ggml_backend_buffer_type_t buft : bufts) {
        ggml_backend_buffer_t probe = ggml_backend_buft_alloc_buffer(buft, 0);
        if (!probe) continue;
        w->buffer = probe; // supports_op looks at the weight's buffer type
        const bool ok = ggml_backend_dev_supports_op(cpu, op);
        w->buffer = nullptr;
        ggml_backend_buffer_free(probe);
        if (ok) {
            found = buft;
            break;
        }
    }
    ggml_free(ctx);
    return found;
}

// A tensor shaped and typed like `source` in m.ctx_twins (made on first use), to be placed by
// weights_load; nullptr if the context cannot hold another.
ggml_tensor * make_twin(model_base & m, const ggml_tensor * source) {
    constexpr size_t MAX_TWINS = 8;
    if (!m.ctx_twins) {
        ggml_init_params p = {ggml_tensor_overhead() * MAX_TWINS, nullptr, /*no_alloc =*/true};
        m.ctx_twins = ggml_init(p);
        if (!m.ctx_twins) return nullptr;
    }
    if (ggml_get_mem_size(m.ctx_twins) - ggml_used_mem(m.ctx_twins) < ggml_tensor_overhead()) return nullptr;
    ggml_tensor * twin = ggml_dup_tensor(m.ctx_twins, source);
    ggml_format_name(twin, "%s (products)", ggml_get_name(source));
    return twin;
}

// Points `tensors` into the mapped file; false (nothing changed) when the file cannot be mapped or
// the device does not take the host pointer. Throws if the file no longer holds every tensor.
bool map_tensors(model_base & m, const gguf_file & f, const std::vector<ggml_tensor *> & tensors,
                 const std::shared_ptr<mapped_file> & mf) {
    if (!mf) return false;
    std::vector<size_t> offsets;
    size_t max_size = 0;
    for (ggml_tensor * t : tensors) {
        const size_t off = file_offset(f, t);
        if (off + ggml_nbytes(t) > mf->size()) { // the file changed since it was opened
            throw truncated(f, t);
        }
        offsets.push_back(off);
        max_size = std::max(max_size, ggml_nbytes(t));
    }
    ggml_backend_buffer_t buf = ggml_backend_dev_buffer_from_host_ptr(m.device, (void *) mf->data(), mf->size(), max_size);
    if (!buf) return false;
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (ggml_backend_tensor_alloc(buf, tensors[i], (char *) mf->data() + offsets[i]) != GGML_STATUS_SUCCESS) {
            for (size_t j = 0; j < i; ++j) {
                tensors[j]->buffer = nullptr;
                tensors[j]->data = nullptr;
            }
            ggml_backend_buffer_free(buf);
            return false;
        }
        m.weight_bytes += ggml_nbytes(tensors[i]);
    }
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    m.bufs_w.push_back(buf);
    m.mapping = mf;
    return true;
}

// Whether a repack cache (repack_cache.h) can stand in for `buft`'s repacking: ggml's CPU_REPACK
// buffer type multiplies from the tensor's data, its `extra` and its buffer's type, all of which
// place_from_cache keeps. Other extra buffer types (AMX) are not known to allow that.
bool repack_cache_applies(ggml_backend_buffer_type_t buft) {
    return std::strcmp(ggml_backend_buft_name(buft), "CPU_REPACK") == 0;
}

// Places `tensors` (of repack buffer type `buft`) at their bytes in `cache`, if the cache is this
// load's: its header and size (repack_cache::open), and one tensor repacked afresh by ggml equal to
// its cached copy. ggml's CPU backend chooses its kernels from a tensor's buffer type and `extra`,
// which allocation in a buffer of `buft` sets; so every tensor is allocated there, all at the base
// of one buffer as large as the largest (nothing is ever written to it), and its data then pointed
// into the mapped cache. Returns false, with nothing placed, when the cache cannot be used.
bool place_from_cache(model_base & m, const gguf_file & f, ggml_backend_buffer_type_t buft,
                      const std::vector<ggml_tensor *> & tensors, const repack_cache & cache,
                      const std::map<const ggml_tensor *, const ggml_tensor *> & source_of, const mapped_file * mf) {
    std::shared_ptr<mapped_file> cached = cache.open();
    if (!cached || tensors.empty()) return false;
    auto unplace = [](ggml_tensor * t) {
        t->buffer = nullptr;
        t->data = nullptr;
        t->extra = nullptr;
    };
    size_t probe = 0, largest = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (ggml_nbytes(tensors[i]) < ggml_nbytes(tensors[probe])) probe = i;
        const size_t alloc = ggml_backend_buft_get_alloc_size(buft, tensors[i]);
        if (alloc != ggml_nbytes(tensors[i])) return false; // the cache holds ggml_nbytes per tensor
        largest = std::max(largest, alloc);
    }
    ggml_tensor * t = tensors[probe];
    ggml_backend_buffer_t check = alloc_group(buft, {t}, m.backend_name);
    bool same = false;
    try {
        read_tensors(f, {t}, 1, source_of, mf);
        same = std::memcmp(t->data, cached->data() + cache.offset(probe), ggml_nbytes(t)) == 0;
    } catch (...) {
        ggml_backend_buffer_free(check);
        unplace(t);
        throw;
    }
    ggml_backend_buffer_free(check);
    unplace(t);
    if (!same) return false;

    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(buft, largest);
    if (!buf) throw std::runtime_error("not enough memory on " + m.backend_name + " for the model weights");
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    void * base = ggml_backend_buffer_get_base(buf);
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (ggml_backend_tensor_alloc(buf, tensors[i], base) != GGML_STATUS_SUCCESS) {
            for (size_t j = 0; j <= i; ++j) unplace(tensors[j]);
            ggml_backend_buffer_free(buf);
            return false;
        }
        tensors[i]->data = (char *) cached->data() + cache.offset(i);
        m.weight_bytes += ggml_nbytes(tensors[i]);
    }
    m.bufs_w.push_back(buf);
    m.repack_mappings.push_back(cached);
    return true;
}

} // namespace

model_base::~model_base() {
    for (ggml_backend_buffer_t b : bufs_w) ggml_backend_buffer_free(b);
    if (ctx_twins) ggml_free(ctx_twins);
    if (ctx_w) ggml_free(ctx_w);
}

void request_product_twin(model_base & m, ggml_tensor * source, ggml_tensor ** slot) {
    m.twin_requests.push_back({source, slot});
}

gguf_file::gguf_file(const std::string & p) : path(p) {
    backend_init_once();
    {
        // A FIFO would block the first read forever, a device could be endless: only regular files.
        std::error_code ec;
        const auto st = std::filesystem::status(path, ec);
        if (ec || !std::filesystem::exists(st)) {
            throw std::runtime_error("cannot open model file '" + path + "'");
        }
        if (!std::filesystem::is_regular_file(st)) {
            throw std::runtime_error("model path '" + path + "' is not a regular file (a directory, FIFO or device?)");
        }
        std::ifstream probe(path, std::ios::binary);
        if (!probe) {
            throw std::runtime_error("cannot open model file '" + path + "'");
        }
        char magic[4] = {0, 0, 0, 0};
        probe.read(magic, 4);
        if (!probe || std::string(magic, 4) != "GGUF") {
            throw std::runtime_error("'" + path + "' is not a GGUF model file");
        }
    }
    gguf_init_params params = {/*no_alloc =*/true, /*ctx =*/&ctx_w};
    gguf = gguf_init_from_file(path.c_str(), params);
    if (!gguf) {
        throw std::runtime_error("'" + path + "' is not a readable GGUF file (corrupt or truncated header)");
    }
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    const uint64_t file_size = (uint64_t) in.tellg();
    const uint64_t data_offset = gguf_get_data_offset(gguf);
    for (int64_t i = 0; i < gguf_get_n_tensors(gguf); ++i) {
        const uint64_t end = data_offset + gguf_get_tensor_offset(gguf, i) + gguf_get_tensor_size(gguf, i);
        if (end > file_size) {
            throw std::runtime_error("model file '" + path + "' is truncated: tensor '" + gguf_get_tensor_name(gguf, i) +
                                     "' ends at byte " + std::to_string(end) + " but the file has " +
                                     std::to_string(file_size));
        }
    }
}

gguf_file::~gguf_file() {
    if (gguf) gguf_free(gguf);
    if (ctx_w) ggml_free(ctx_w);
}

ggml_context * gguf_file::release_tensors() {
    ggml_context * c = ctx_w;
    ctx_w = nullptr;
    return c;
}

int64_t hparam_reader::find(const char * key, gguf_type type) const {
    const int64_t id = gguf_find_key(ctx_, key);
    if (id < 0) {
        throw std::runtime_error(std::string("model file is missing the key '") + key + "'");
    }
    if (gguf_get_kv_type(ctx_, id) != type) {
        throw std::runtime_error(std::string("model key '") + key + "' must be a " + gguf_type_name(type));
    }
    return id;
}

int64_t hparam_reader::find_array(const char * key, gguf_type elem) const {
    const int64_t id = find(key, GGUF_TYPE_ARRAY);
    if (gguf_get_arr_type(ctx_, id) != elem) {
        throw std::runtime_error(std::string("model key '") + key + "' must be an array of " + gguf_type_name(elem));
    }
    return id;
}

uint32_t hparam_reader::u32(const char * key) const {
    return gguf_get_val_u32(ctx_, find(key, GGUF_TYPE_UINT32));
}

int32_t hparam_reader::i32(const char * key) const {
    return gguf_get_val_i32(ctx_, find(key, GGUF_TYPE_INT32));
}

float hparam_reader::f32(const char * key) const {
    const float v = gguf_get_val_f32(ctx_, find(key, GGUF_TYPE_FLOAT32));
    if (!std::isfinite(v)) {
        throw std::runtime_error(std::string("model key '") + key + "' is not a finite number");
    }
    return v;
}

namespace {

// Strings reach Python as str: anything but valid UTF-8 is a corrupt file, not a decode error later.
std::string checked_utf8(const char * key, std::string s) {
    utf8_assembler a;
    if (a.push(s) + a.flush() != s) {
        throw std::runtime_error(std::string("model key '") + key + "' holds a string that is not valid UTF-8");
    }
    return s;
}

} // namespace

std::string hparam_reader::str(const char * key) const {
    return checked_utf8(key, gguf_get_val_str(ctx_, find(key, GGUF_TYPE_STRING)));
}

std::vector<uint32_t> hparam_reader::u32_array(const char * key) const {
    const int64_t id = find_array(key, GGUF_TYPE_UINT32);
    const auto * p = (const uint32_t *) gguf_get_arr_data(ctx_, id);
    return std::vector<uint32_t>(p, p + gguf_get_arr_n(ctx_, id));
}

std::vector<uint8_t> hparam_reader::u8_array(const char * key) const {
    const int64_t id = gguf_find_key(ctx_, key);
    if (id >= 0 && gguf_get_kv_type(ctx_, id) == GGUF_TYPE_ARRAY && gguf_get_arr_type(ctx_, id) == GGUF_TYPE_INT8) {
        const auto * p = (const uint8_t *) gguf_get_arr_data(ctx_, id);
        return std::vector<uint8_t>(p, p + gguf_get_arr_n(ctx_, id));
    }
    const int64_t jd = find_array(key, GGUF_TYPE_UINT8);
    const auto * p = (const uint8_t *) gguf_get_arr_data(ctx_, jd);
    return std::vector<uint8_t>(p, p + gguf_get_arr_n(ctx_, jd));
}

std::vector<std::string> hparam_reader::str_array(const char * key) const {
    const int64_t id = find_array(key, GGUF_TYPE_STRING);
    std::vector<std::string> out((size_t) gguf_get_arr_n(ctx_, id));
    for (size_t i = 0; i < out.size(); ++i) out[i] = checked_utf8(key, gguf_get_arr_str(ctx_, id, i));
    return out;
}

ggml_tensor * tensor_binder::get(const std::string & name, std::vector<int64_t> shape, bool f32_only) {
    ggml_tensor * t = ggml_get_tensor(ctx_, name.c_str());
    if (!t) {
        throw std::runtime_error("model file is missing the tensor '" + name + "'");
    }
    bool ok = ggml_n_dims(t) <= (int) shape.size();
    for (size_t i = 0; ok && i < 4; ++i) {
        const int64_t want = i < shape.size() ? shape[i] : 1;
        ok = t->ne[i] == want;
    }
    if (!ok) {
        std::string want = "[", got = "[";
        for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
        for (int i = 0; i < ggml_n_dims(t); ++i) got += (i ? ", " : "") + std::to_string(t->ne[i]);
        throw std::runtime_error("tensor '" + name + "' has shape " + got + "] but the hyper-parameters need " + want +
                                 "]");
    }
    if (f32_only && t->type != GGML_TYPE_F32) {
        throw std::runtime_error("tensor '" + name + "' must be F32, found " + ggml_type_name(t->type));
    }
    used_.insert(name);
    return t;
}

ggml_tensor * tensor_binder::matrix(const std::string & name, std::vector<int64_t> shape) {
    ggml_tensor * t = get(name, std::move(shape));
    matrices_.insert(t);
    return t;
}

void tensor_binder::check_all_used(const std::string & what) const {
    int64_t n_total = 0;
    for (ggml_tensor * t = ggml_get_first_tensor(ctx_); t; t = ggml_get_next_tensor(ctx_, t)) ++n_total;
    if ((size_t) n_total != used_.size()) {
        throw std::runtime_error("model file has " + std::to_string(n_total - (int64_t) used_.size()) +
                                 " unexpected tensors (not a " + what + " of these dimensions?)");
    }
}

void weights_load(model_base & m, const gguf_file & f, const model_load_options & opts) {
    if (opts.n_threads < 0 || opts.n_threads > MAX_THREADS) {
        throw std::invalid_argument("n_threads must be 0 (one per physical core) or 1 to " +
                                    std::to_string(MAX_THREADS) + ", got " + std::to_string(opts.n_threads));
    }
    m.auto_threads = opts.n_threads == 0;
    m.n_threads = opts.n_threads > 0 ? opts.n_threads : std::min(default_n_threads(), MAX_THREADS);
    m.device = pick_device(opts.backend);
    m.backend_name = ggml_backend_dev_name(m.device);
    const bool on_cpu = ggml_backend_dev_type(m.device) == GGML_BACKEND_DEVICE_TYPE_CPU;
    ggml_backend_dev_props props;
    ggml_backend_dev_get_props(m.device, &props);
    const bool map = opts.use_mmap && props.caps.buffer_from_host_ptr && !env_flag("CAPTIONIST_NO_MMAP");

    std::vector<std::pair<ggml_backend_buffer_type_t, std::vector<ggml_tensor *>>> repacked;
    std::vector<ggml_tensor *> rest;
    const std::vector<ggml_backend_buffer_type_t> extra = on_cpu ? cpu_extra_bufts() : std::vector<ggml_backend_buffer_type_t>();
    auto add_repacked = [&](ggml_backend_buffer_type_t buft, ggml_tensor * t) {
        auto it = std::find_if(repacked.begin(), repacked.end(), [&](const auto & g) { return g.first == buft; });
        if (it == repacked.end()) it = repacked.insert(repacked.end(), {buft, {}});
        it->second.push_back(t);
    };
    for (ggml_tensor * t = ggml_get_first_tensor(m.ctx_w); t; t = ggml_get_next_tensor(m.ctx_w, t)) {
        ggml_backend_buffer_type_t buft = m.matrices.count(t) ? repack_buft_for(m.device, extra, t) : nullptr;
        if (buft) {
            add_repacked(buft, t);
        } else {
            rest.push_back(t);
        }
    }
    std::map<const ggml_tensor *, const ggml_tensor *> source_of;
    m.info_.product_twins = 0;
    for (const model_base::twin_request & r : m.twin_requests) {
        *r.slot = r.source;
        ggml_tensor * twin = make_twin(m, r.source);
        ggml_backend_buffer_type_t buft = twin ? repack_buft_for(m.device, extra, twin) : nullptr;
        if (!buft) continue;
        add_repacked(buft, twin);
        source_of[twin] = r.source;
        *r.slot = twin;
        m.info_.product_twins += 1;
    }
    m.weight_bytes = 0;
    m.info_.repacked_tensors = 0;
    m.info_.repacked_layouts.clear();
    std::shared_ptr<mapped_file> mf;
    if (map) {
        try {
            mf = std::make_shared<mapped_file>(f.path);
        } catch (const std::runtime_error &) { // e.g. a file system without mmap: read instead
        }
    }
    model_info & info = m.info_;
    info.repack_cache = repack_cache_state::REPACK_CACHE_NONE;
    info.repack_cache_path.clear();
    info.repack_cache_error.clear();
    // before a write, so that the space of dead caches is free for it
    info.repack_cache_removed = opts.repack_cache_dir.empty() ? std::vector<std::string>()
                                                              : repack_cache::sweep(opts.repack_cache_dir);
    for (const auto & g : repacked) {
        std::unique_ptr<repack_cache> cache;
        if (map && !opts.repack_cache_dir.empty() && repack_cache_applies(g.first)) { // it is mapped
            cache = std::make_unique<repack_cache>(opts.repack_cache_dir, f.path, g.first, g.second);
            info.repack_cache_path = cache->path();
        }
        m.info_.repacked_tensors += (int64_t) g.second.size();
        m.info_.repacked_layouts[ggml_backend_buft_name(g.first)] += (int64_t) g.second.size();
        if (cache && place_from_cache(m, f, g.first, g.second, *cache, source_of, mf.get())) {
            if (info.repack_cache == repack_cache_state::REPACK_CACHE_NONE) info.repack_cache = repack_cache_state::REPACK_CACHE_USED;
            continue;
        }
        m.bufs_w.push_back(alloc_group(g.first, g.second, m.backend_name));
        m.weight_bytes += ggml_backend_buffer_get_size(m.bufs_w.back());
        // repacking reads the mapping in place (no copy through a read() buffer) where it is CPU work
        read_tensors(f, g.second, m.n_threads, source_of, mf.get());
        if (!cache || info.repack_cache == repack_cache_state::REPACK_CACHE_FAILED) continue;
        try {
            cache->write();
            info.repack_cache = repack_cache_state::REPACK_CACHE_WRITTEN;
        } catch (const std::exception & e) { // the model is loaded all the same; only the next load is slower
            info.repack_cache = repack_cache_state::REPACK_CACHE_FAILED;
            info.repack_cache_error = e.what();
        }
    }
    const bool mapped = !rest.empty() && map_tensors(m, f, rest, mf); // mf: only where `map`
    if (!mapped && !rest.empty()) {
        m.bufs_w.push_back(alloc_group(ggml_backend_dev_buffer_type(m.device), rest, m.backend_name));
        m.weight_bytes += ggml_backend_buffer_get_size(m.bufs_w.back());
        read_tensors(f, rest, on_cpu ? m.n_threads : 1);
    }
    m.info_.weights_mapped = mapped;

    info.path = f.path;
    info.backend = m.backend_name;
    info.cpu_features = cpu_backend_features();
    m.column_kernels = choose_column_kernels(m.device);
    info.column_kernels = m.column_kernels ? m.column_kernels->name : "";
    info.n_threads = m.n_threads;
    info.weight_bytes = m.weight_bytes;
    info.tensor_types.clear();
    for (ggml_tensor * t = ggml_get_first_tensor(m.ctx_w); t; t = ggml_get_next_tensor(m.ctx_w, t)) {
        info.tensor_types[ggml_type_name(t->type)] += 1;
    }
}

std::vector<float> tensor_to_host(const ggml_tensor * t) {
    std::vector<float> v((size_t) ggml_nelements(t));
    ggml_backend_tensor_get(t, v.data(), 0, v.size() * sizeof(float));
    return v;
}

} // namespace captionist
