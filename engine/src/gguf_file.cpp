#include "gguf_file.h"

#include "backend_registry.h"
#include "utf8_assembler.h"

#include <ggml-alloc.h>
#include <ggml-backend.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace captionist {

namespace {

void read_tensor_data(model_base & m, const gguf_file & f) {
    std::ifstream in(f.path, std::ios::binary);
    if (!in) {
        throw std::runtime_error("cannot open model file '" + f.path + "'");
    }
    const size_t data_offset = gguf_get_data_offset(f.gguf);
    std::vector<char> staging;
    const bool host = ggml_backend_buffer_is_host(m.buf_w);
    for (ggml_tensor * t = ggml_get_first_tensor(m.ctx_w); t; t = ggml_get_next_tensor(m.ctx_w, t)) {
        const int64_t tid = gguf_find_tensor(f.gguf, ggml_get_name(t));
        const size_t offs = data_offset + gguf_get_tensor_offset(f.gguf, tid);
        const size_t nbytes = ggml_nbytes(t);
        in.seekg((std::streamoff) offs);
        if (host) {
            in.read((char *) t->data, (std::streamsize) nbytes);
        } else {
            staging.resize(nbytes);
            in.read(staging.data(), (std::streamsize) nbytes);
            if (in) ggml_backend_tensor_set(t, staging.data(), 0, nbytes);
        }
        if (!in) {
            throw std::runtime_error("model file '" + f.path + "' is truncated (tensor '" + ggml_get_name(t) + "')");
        }
    }
}

} // namespace

model_base::~model_base() {
    if (buf_w) ggml_backend_buffer_free(buf_w);
    if (ctx_w) ggml_free(ctx_w);
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
    m.n_threads = opts.n_threads > 0 ? opts.n_threads : std::min(cpu_physical_cores(), MAX_THREADS);
    m.device = pick_device(opts.backend);
    m.backend_name = ggml_backend_dev_name(m.device);
    m.buf_w = ggml_backend_alloc_ctx_tensors_from_buft(m.ctx_w, ggml_backend_dev_buffer_type(m.device));
    if (!m.buf_w) {
        throw std::runtime_error("not enough memory on " + m.backend_name + " for the model weights");
    }
    ggml_backend_buffer_set_usage(m.buf_w, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    m.weight_bytes = ggml_backend_buffer_get_size(m.buf_w);
    read_tensor_data(m, f);

    model_info & info = m.info_;
    info.path = f.path;
    info.backend = m.backend_name;
    info.cpu_features = cpu_backend_features();
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

int cpu_physical_cores() {
#if defined(__APPLE__)
    int n = 0;
    size_t len = sizeof(n);
    if (sysctlbyname("hw.perflevel0.physicalcpu", &n, &len, nullptr, 0) == 0 && n > 0) return n;
    if (sysctlbyname("hw.physicalcpu", &n, &len, nullptr, 0) == 0 && n > 0) return n;
#elif defined(__linux__)
    std::ifstream f("/proc/cpuinfo");
    std::set<std::string> cores;
    std::string line, phys;
    while (std::getline(f, line)) {
        if (line.rfind("physical id", 0) == 0) phys = line.substr(line.find(':') + 1);
        if (line.rfind("core id", 0) == 0) cores.insert(phys + "/" + line.substr(line.find(':') + 1));
    }
    if (!cores.empty()) return (int) cores.size();
#endif
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? (int) n : 1;
}

} // namespace captionist
