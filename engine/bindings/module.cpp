// module.cpp - captionist._engine: the task-level Python binding of the engine.
//
// Exposes Model (load, info, token bytes), Stream (feed / finish / reset, capture for tests),
// quantize() and check_metadata() (the loader's hyper-parameter rules, for the converter), the same
// for every architecture. C++ exceptions become EngineError (runtime/logic errors) or ValueError (bad
// arguments) with the same message; an argument of the wrong type is a one-line TypeError naming it.
// Every compute call releases the GIL.
#include <captionist/engine.h>

#include "../src/column_products.h"
#include "../src/hparam_bounds.h"
#include "../src/repack_cache.h"

#include <gguf.h>

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace captionist;

namespace {

// Arguments are taken as Python objects and converted here, so that a wrong type is one line
// ("n_threads must be an int, got float") instead of pybind's list of overloads.
std::string type_name(py::handle h) {
    return py::str(py::type::handle_of(h).attr("__name__"));
}

[[noreturn]] void arg_type_error(const char * name, const char * want, py::handle got) {
    throw py::type_error(std::string(name) + " must be " + want + ", got " + type_name(got));
}

long long arg_integer(py::handle h, const char * name, long long lo, long long hi) {
    if (PyBool_Check(h.ptr()) || !PyIndex_Check(h.ptr())) arg_type_error(name, "an int", h);
    const py::int_ v = py::reinterpret_steal<py::int_>(PyNumber_Index(h.ptr()));
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow != 0 || x < lo || x > hi) {
        throw py::value_error(std::string(name) + " = " + std::string(py::str(v)) + " is outside [" +
                              std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return x;
}

int arg_int(py::handle h, const char * name) {
    return (int) arg_integer(h, name, INT_MIN, INT_MAX);
}

std::string arg_str(py::handle h, const char * name) {
    if (!PyUnicode_Check(h.ptr())) arg_type_error(name, "a str", h);
    return h.cast<std::string>();
}

bool arg_bool(py::handle h, const char * name) {
    if (!PyBool_Check(h.ptr())) arg_type_error(name, "a bool", h);
    return h.ptr() == Py_True;
}

// A GGUF metadata value from Python (gguf-py's value and type codes) into `ctx`; a value the type
// cannot hold is an EngineError naming the key, as a file holding it would be.
void metadata_set(gguf_context * ctx, const std::string & key, int type, py::handle value, int sub_type);

py::str utf8(const std::string & bytes) {
    return py::bytes(bytes).attr("decode")("utf-8", "replace");
}

py::dict result_to_dict(const stream_result & r) {
    py::list toks;
    for (const stream_token & t : r.new_tokens) {
        toks.append(py::make_tuple(t.id, utf8(t.piece), t.time_ms, t.is_control));
    }
    py::list events;
    for (const stream_event & e : r.events) {
        events.append(py::make_tuple(stream_event_type_name(e.type), e.token_index));
    }
    py::dict d;
    d["new_tokens"] = toks;
    d["events"] = events;
    d["audio_ms_received"] = r.audio_ms_received;
    d["audio_ms_decoded"] = r.audio_ms_decoded;
    d["text_tail"] = utf8(r.text_tail);
    return d;
}

// "encoder.n_layer" -> d["encoder"]["n_layer"]; keys without a dot stay at the top level.
void put_dim(py::dict & d, const std::string & key, int64_t value) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos) {
        d[key.c_str()] = value;
        return;
    }
    const std::string group = key.substr(0, dot);
    if (!d.contains(group.c_str())) d[group.c_str()] = py::dict();
    py::dict sub = d[group.c_str()];
    sub[key.substr(dot + 1).c_str()] = value;
}

uint64_t metadata_uint(py::handle v, const std::string & key, uint64_t hi) {
    if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) {
        throw std::runtime_error("model key '" + key + "' must be an integer, got " + type_name(v));
    }
    const py::int_ i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
    const unsigned long long x = PyLong_AsUnsignedLongLong(i.ptr());
    if (PyErr_Occurred() || x > hi) {
        PyErr_Clear();
        throw std::runtime_error("model key '" + key + "' = " + std::string(py::str(i)) + " is outside [0, " +
                                 std::to_string(hi) + "]");
    }
    return x;
}

int64_t metadata_int(py::handle v, const std::string & key, int64_t lo, int64_t hi) {
    if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) {
        throw std::runtime_error("model key '" + key + "' must be an integer, got " + type_name(v));
    }
    const py::int_ i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow != 0 || x < lo || x > hi) {
        throw std::runtime_error("model key '" + key + "' = " + std::string(py::str(i)) + " is outside [" +
                                 std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return x;
}

double metadata_float(py::handle v, const std::string & key) {
    if (PyBool_Check(v.ptr()) || !(PyFloat_Check(v.ptr()) || PyIndex_Check(v.ptr()))) {
        try {
            return v.cast<double>(); // numpy floats
        } catch (const py::cast_error &) {
            throw std::runtime_error("model key '" + key + "' must be a number, got " + type_name(v));
        }
    }
    return v.cast<double>();
}

// One element of a numeric array, stored little-endian as the file would hold it.
void metadata_append(std::vector<uint8_t> & out, int type, py::handle v, const std::string & key) {
    auto put = [&out](const void * p, size_t n) { out.insert(out.end(), (const uint8_t *) p, (const uint8_t *) p + n); };
    switch (type) {
    case GGUF_TYPE_UINT8: { const uint8_t x = (uint8_t) metadata_uint(v, key, UINT8_MAX); put(&x, 1); break; }
    case GGUF_TYPE_INT8: { const int8_t x = (int8_t) metadata_int(v, key, INT8_MIN, INT8_MAX); put(&x, 1); break; }
    case GGUF_TYPE_UINT16: { const uint16_t x = (uint16_t) metadata_uint(v, key, UINT16_MAX); put(&x, 2); break; }
    case GGUF_TYPE_INT16: { const int16_t x = (int16_t) metadata_int(v, key, INT16_MIN, INT16_MAX); put(&x, 2); break; }
    case GGUF_TYPE_UINT32: { const uint32_t x = (uint32_t) metadata_uint(v, key, UINT32_MAX); put(&x, 4); break; }
    case GGUF_TYPE_INT32: { const int32_t x = (int32_t) metadata_int(v, key, INT32_MIN, INT32_MAX); put(&x, 4); break; }
    case GGUF_TYPE_UINT64: { const uint64_t x = metadata_uint(v, key, UINT64_MAX); put(&x, 8); break; }
    case GGUF_TYPE_INT64: { const int64_t x = metadata_int(v, key, INT64_MIN, INT64_MAX); put(&x, 8); break; }
    case GGUF_TYPE_FLOAT32: { const float x = (float) metadata_float(v, key); put(&x, 4); break; }
    case GGUF_TYPE_FLOAT64: { const double x = metadata_float(v, key); put(&x, 8); break; }
    case GGUF_TYPE_BOOL: { const int8_t x = PyObject_IsTrue(v.ptr()) == 1 ? 1 : 0; put(&x, 1); break; }
    default: throw std::runtime_error("model key '" + key + "' has an unsupported array type " + std::to_string(type));
    }
}

void metadata_set(gguf_context * ctx, const std::string & key, int type, py::handle value, int sub_type) {
    const char * k = key.c_str();
    if (type == GGUF_TYPE_STRING) {
        if (!PyUnicode_Check(value.ptr())) throw std::runtime_error("model key '" + key + "' must be a string");
        gguf_set_val_str(ctx, k, value.cast<std::string>().c_str());
        return;
    }
    if (type != GGUF_TYPE_ARRAY) {
        std::vector<uint8_t> one;
        metadata_append(one, type, value, key);
        switch (type) {
        case GGUF_TYPE_UINT8: gguf_set_val_u8(ctx, k, one[0]); break;
        case GGUF_TYPE_INT8: gguf_set_val_i8(ctx, k, (int8_t) one[0]); break;
        case GGUF_TYPE_BOOL: gguf_set_val_bool(ctx, k, one[0] != 0); break;
        case GGUF_TYPE_UINT16: gguf_set_val_u16(ctx, k, *(const uint16_t *) one.data()); break;
        case GGUF_TYPE_INT16: gguf_set_val_i16(ctx, k, *(const int16_t *) one.data()); break;
        case GGUF_TYPE_UINT32: gguf_set_val_u32(ctx, k, *(const uint32_t *) one.data()); break;
        case GGUF_TYPE_INT32: gguf_set_val_i32(ctx, k, *(const int32_t *) one.data()); break;
        case GGUF_TYPE_FLOAT32: gguf_set_val_f32(ctx, k, *(const float *) one.data()); break;
        case GGUF_TYPE_UINT64: gguf_set_val_u64(ctx, k, *(const uint64_t *) one.data()); break;
        case GGUF_TYPE_INT64: gguf_set_val_i64(ctx, k, *(const int64_t *) one.data()); break;
        case GGUF_TYPE_FLOAT64: gguf_set_val_f64(ctx, k, *(const double *) one.data()); break;
        default: break;
        }
        return;
    }
    if (sub_type == GGUF_TYPE_STRING) {
        std::vector<std::string> items;
        for (py::handle v : value) {
            if (!PyUnicode_Check(v.ptr())) throw std::runtime_error("model key '" + key + "' must hold strings");
            items.push_back(v.cast<std::string>());
        }
        std::vector<const char *> ptrs;
        for (const std::string & x : items) ptrs.push_back(x.c_str());
        gguf_set_arr_str(ctx, k, ptrs.data(), ptrs.size());
        return;
    }
    std::vector<uint8_t> data;
    size_t n = 0;
    if (PyBytes_Check(value.ptr()) && (sub_type == GGUF_TYPE_UINT8 || sub_type == GGUF_TYPE_INT8)) {
        const std::string b = value.cast<std::string>();
        data.assign(b.begin(), b.end());
        n = b.size();
    } else {
        for (py::handle v : value) {
            metadata_append(data, sub_type, v, key);
            ++n;
        }
    }
    gguf_set_arr_data(ctx, k, (gguf_type) sub_type, data.data(), n);
}

// check_metadata([(key, type, value, sub_type), ...]): the architecture's load-time rules on keys alone.
void check_metadata(py::iterable items) {
    std::unique_ptr<gguf_context, decltype(&gguf_free)> ctx(gguf_init_empty(), &gguf_free);
    for (py::handle item : items) {
        const py::tuple t = py::reinterpret_borrow<py::object>(item).cast<py::tuple>();
        if (t.size() != 4) throw py::value_error("check_metadata items are (key, type, value, sub_type)");
        const std::string key = arg_str(t[0], "key");
        const int type = arg_int(t[1], "type");
        if (type < 0 || type >= GGUF_TYPE_COUNT) throw py::value_error("unknown GGUF type " + std::to_string(type));
        metadata_set(ctx.get(), key, type, t[2], t[3].is_none() ? -1 : arg_int(t[3], "sub_type"));
    }
    model_metadata_check(ctx.get());
}

class py_model {
public:
    py_model(const std::string & path, const std::string & backend, int n_threads, bool use_mmap,
             const std::string & repack_cache_dir) {
        model_load_options o;
        o.backend = backend;
        o.n_threads = n_threads;
        o.use_mmap = use_mmap;
        o.repack_cache_dir = repack_cache_dir;
        py::gil_scoped_release nogil;
        m = model_load(path, o);
    }
    py::dict info() const {
        const model_info & i = m->info();
        py::dict d;
        d["architecture"] = model_architecture_name(i.architecture);
        d["variant"] = i.variant;
        d["name"] = i.name;
        d["path"] = i.path;
        d["backend"] = i.backend;
        d["cpu_features"] = i.cpu_features;
        d["n_threads"] = i.n_threads;
        d["weight_bytes"] = i.weight_bytes;
        d["weights_mapped"] = i.weights_mapped;
        d["repacked_tensors"] = i.repacked_tensors;
        d["repacked_layouts"] = i.repacked_layouts;
        d["repack_cache"] = repack_cache_state_name(i.repack_cache);
        d["repack_cache_path"] = i.repack_cache_path;
        d["repack_cache_error"] = i.repack_cache_error;
        d["repack_cache_removed"] = i.repack_cache_removed;
        d["product_twins"] = i.product_twins;
        d["column_kernels"] = i.column_kernels;
        d["flash_attention"] = i.flash_attention;
        d["batch_flash_attention"] = i.batch_flash_attention;
        d["kv_cache_type"] = i.kv_cache_type;
        d["sample_rate"] = i.sample_rate;
        d["latencies_ms"] = i.latencies_ms;
        d["default_latency_ms"] = i.default_latency_ms;
        d["languages"] = i.languages;
        d["default_language"] = i.default_language;
        d["punctuation"] = i.punctuation;
        d["end_of_utterance"] = i.end_of_utterance;
        d["n_vocab"] = i.n_vocab;
        for (const auto & kv : i.dims) put_dim(d, kv.first, kv.second);
        py::dict types;
        for (const auto & kv : i.tensor_types) types[kv.first.c_str()] = kv.second;
        d["tensor_types"] = types;
        return d;
    }
    py::bytes token_bytes(int32_t id) const { return py::bytes(m->token_bytes(id)); }
    bool is_control(int32_t id) const { return m->is_control(id); }
    std::shared_ptr<const model> m;
};

class py_stream {
public:
    py_stream(const py_model & pm, int latency_ms, const std::string & language, bool stop_at_eou, bool capture) {
        stream_options o;
        o.latency_ms = latency_ms;
        o.language = language;
        o.stop_at_end_of_utterance = stop_at_eou;
        o.capture = capture;
        py::gil_scoped_release nogil;
        s = pm.m->new_stream(o);
    }
    py::dict feed(py::array pcm) {
        if (pcm.ndim() != 1) throw std::invalid_argument("audio must be a 1-D array of samples");
        if (!py::isinstance<py::array_t<float>>(pcm) || pcm.dtype().kind() != 'f' || pcm.itemsize() != 4) {
            throw std::invalid_argument("audio must be float32 (got " + std::string(py::str(pcm.dtype())) + ")");
        }
        auto a = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(pcm);
        const float * p = a.data();
        const size_t n = (size_t) a.size();
        stream_result r;
        {
            py::gil_scoped_release nogil;
            r = s->feed(p, n);
        }
        return result_to_dict(r);
    }
    py::dict finish() {
        stream_result r;
        {
            py::gil_scoped_release nogil;
            r = s->finish();
        }
        return result_to_dict(r);
    }
    void reset(int latency_ms, const std::string & language, bool stop_at_eou) {
        stream_options o;
        o.latency_ms = latency_ms;
        o.language = language;
        o.stop_at_end_of_utterance = stop_at_eou;
        o.capture = capture_;
        py::gil_scoped_release nogil;
        s->reset(o);
    }
    py::dict captured() const {
        py::dict d;
        for (const auto & kv : s->captured()) {
            const stream_capture_array & c = kv.second;
            const py::ssize_t cols = (py::ssize_t) c.cols, rows = cols > 0 ? (py::ssize_t) c.data.size() / cols : 0;
            py::array_t<float> a({rows, cols});
            std::copy(c.data.begin(), c.data.begin() + rows * cols, a.mutable_data());
            d[kv.first.c_str()] = a;
        }
        return d;
    }
    std::unique_ptr<stream> s;
    bool capture_ = false;
};

} // namespace

PYBIND11_MODULE(_engine, mod) {
    mod.doc() = "Captionist speech engine (Voxtral Realtime and FastConformer RNN-T on ggml)";
    // One exception class for Python and C++ errors alike: captionist.engine.EngineError.
    static PyObject * engine_error = py::object(py::module_::import("captionist.engine").attr("EngineError")).release().ptr();
    mod.attr("EngineError") = py::handle(engine_error);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const py::builtin_exception &) {
            throw; // TypeError / ValueError raised by the argument checks: pybind's own translator
        } catch (const std::invalid_argument & e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const std::bad_alloc &) {
            PyErr_SetString(engine_error, "out of memory");
        } catch (const std::exception & e) {
            PyErr_SetString(engine_error, e.what());
        }
    });

    py::class_<py_model>(mod, "Model")
        .def(py::init([](py::object path, py::object backend, py::object n_threads, py::object mmap,
                         py::object repack_cache) {
                 return std::make_unique<py_model>(arg_str(path, "path"), arg_str(backend, "backend"),
                                                   arg_int(n_threads, "n_threads"), arg_bool(mmap, "mmap"),
                                                   arg_str(repack_cache, "repack_cache"));
             }),
             py::arg("path"), py::arg("backend") = "auto", py::arg("n_threads") = 0, py::arg("mmap") = true,
             py::arg("repack_cache") = "")
        .def("info", &py_model::info)
        .def("token_bytes", [](const py_model & m, py::object id) { return m.token_bytes(arg_int(id, "id")); },
             py::arg("id"))
        .def("is_control", [](const py_model & m, py::object id) { return m.is_control(arg_int(id, "id")); },
             py::arg("id"));

    py::class_<py_stream>(mod, "Stream")
        .def(py::init([](py::object m, py::object latency_ms, py::object language, py::object stop_at_eou,
                         py::object capture) {
                 if (!py::isinstance<py_model>(m)) arg_type_error("model", "a captionist._engine.Model", m);
                 const bool cap = arg_bool(capture, "capture");
                 auto s = std::make_unique<py_stream>(m.cast<const py_model &>(), arg_int(latency_ms, "latency_ms"),
                                                      arg_str(language, "language"),
                                                      arg_bool(stop_at_eou, "stop_at_end_of_utterance"), cap);
                 s->capture_ = cap;
                 return s;
             }),
             py::arg("model"), py::arg("latency_ms") = 0, py::arg("language") = "",
             py::arg("stop_at_end_of_utterance") = false, py::arg("capture") = false, py::keep_alive<1, 2>())
        .def("feed", &py_stream::feed, py::arg("pcm"))
        .def("finish", &py_stream::finish)
        .def(
            "reset",
            [](py_stream & s, py::object latency_ms, py::object language, py::object stop_at_eou) {
                s.reset(arg_int(latency_ms, "latency_ms"), arg_str(language, "language"),
                        arg_bool(stop_at_eou, "stop_at_end_of_utterance"));
            },
            py::arg("latency_ms") = 0, py::arg("language") = "", py::arg("stop_at_end_of_utterance") = false)
        .def("set_forced_tokens", [](py_stream & s, std::vector<int32_t> ids) { s.s->set_forced_tokens(std::move(ids)); })
        .def_property_readonly("token_ids", [](const py_stream & s) { return s.s->token_ids(); })
        .def_property_readonly("latency_ms", [](const py_stream & s) { return s.s->latency_ms(); })
        .def_property_readonly("language", [](const py_stream & s) { return s.s->language(); })
        .def_property_readonly("finished", [](const py_stream & s) { return s.s->finished(); })
        .def_property_readonly("state_bytes", [](const py_stream & s) { return s.s->state_bytes(); })
        .def("timings", [](const py_stream & s) { return s.s->timings(); })
        .def("captured", &py_stream::captured);

    mod.def(
        "quantize",
        [](py::object src, py::object dst, py::object type, py::object n_threads, py::object progress) {
            const int nt = (int) arg_integer(n_threads, "n_threads", 0, 256);
            if (!progress.is_none() && !PyCallable_Check(progress.ptr())) arg_type_error("progress", "callable", progress);
            std::function<void(size_t, size_t)> cb;
            if (!progress.is_none()) {
                cb = [&progress](size_t done, size_t total) {
                    py::gil_scoped_acquire gil;
                    progress(done, total);
                };
            }
            const std::string s = arg_str(src, "src"), d = arg_str(dst, "dst"), t = arg_str(type, "type");
            py::gil_scoped_release nogil;
            quantize_model(s, d, t, nt, cb);
        },
        py::arg("src"), py::arg("dst"), py::arg("type"), py::arg("n_threads") = 0, py::arg("progress") = py::none());
    mod.def("check_metadata", &check_metadata, py::arg("items"),
            "Raise EngineError unless the (key, gguf type, value, array type) items would load: every "
            "hyper-parameter and tokenizer rule of the architecture's loader, without tensors.");
    mod.def(
        "column_kernel_levels",
        [] {
            py::list out;
            for (const column_kernel_set * ks : column_kernel_levels()) {
                py::dict d;
                d["name"] = ks->name;
                d["f16_max_columns"] = ks->f16_max_columns;
                d["q8_0_max_columns"] = ks->q8_0_max_columns;
                d["min_columns"] = column_kernels_min_columns();
                out.append(d);
            }
            return out;
        },
        "The few-column product kernel levels this CPU can run, best first (column_kernels.h): name, "
        "the most columns each weight type takes and the fewest any takes in this process.");
    mod.def(
        "repack_cache_prefix", [](py::object path) { return repack_cache::file_prefix(arg_str(path, "path")); },
        py::arg("path"), "The file-name prefix of every repack cache of the model file at `path`.");
    mod.def("column_product_count", &column_product_count,
            "Products computed through the column kernels in this process so far (for tests).");
    mod.def(
        "weight_product",
        [](py::array_t<float, py::array::c_style | py::array::forcecast> w,
           py::array_t<float, py::array::c_style | py::array::forcecast> x, const std::string & type,
           const std::string & level, int n_threads, int copies, int repeat, bool views) {
            const bool batched = w.ndim() == 3;
            if (w.ndim() != x.ndim() || (w.ndim() != 2 && !batched) || w.shape(w.ndim() - 1) != x.shape(x.ndim() - 1)) {
                throw std::invalid_argument("w must be [m, k] and x [n, k], or w [batches, m, k] and x [batches, n, k]");
            }
            weight_product_job job;
            job.w_batches = batched ? w.shape(0) : 1;
            job.x_batches = batched ? x.shape(0) : 1;
            job.m = w.shape(w.ndim() - 2);
            job.n = x.shape(x.ndim() - 2);
            job.k = w.shape(w.ndim() - 1);
            job.w.assign(w.data(), w.data() + w.size());
            job.x.assign(x.data(), x.data() + x.size());
            job.type = type;
            job.level = level;
            job.n_threads = n_threads;
            job.copies = copies;
            job.repeat = repeat;
            job.views = views;
            double seconds = 0.0;
            std::vector<float> out;
            {
                py::gil_scoped_release nogil;
                out = run_weight_product(job, &seconds);
            }
            std::vector<py::ssize_t> shape = {(py::ssize_t) job.n, (py::ssize_t) job.m};
            if (batched) shape.insert(shape.begin(), (py::ssize_t) job.x_batches);
            py::array_t<float> a(shape);
            std::copy(out.begin(), out.end(), a.mutable_data());
            return py::make_tuple(a, seconds);
        },
        py::arg("w"), py::arg("x"), py::arg("type"), py::arg("level"), py::arg("n_threads") = 1, py::arg("copies") = 1,
        py::arg("repeat") = 0, py::arg("views") = false,
        "For tests and bench/bench_column_kernels.py: (x @ w.T with w stored as `type`, per batch when both are "
        "3-D; seconds of `repeat` timed runs) on the CPU through the kernels of `level` or ggml_mul_mat "
        "(\"ggml\"); `views` reads w and x through attention's strided views.");
    mod.def("physical_cores", &cpu_physical_cores);
    mod.def("default_n_threads", &default_n_threads);
    mod.def("backend_module_dir", &backend_module_dir);
    mod.def("backend_modules", [](const std::string & dir) {
        py::list out;
        for (const backend_module & m : backend_modules(dir)) out.append(py::make_tuple(m.name, m.path));
        return out;
    }, py::arg("dir") = "", "[(name, path)] of the loadable non-CPU ggml backends in dir (default: the engine's).");
    mod.def("load_cpu_backend", [](const std::string & dir) {
        py::gil_scoped_release nogil;
        return load_cpu_backend(dir);
    }, py::arg("dir") = "");
    mod.def("load_backend_module", [](const std::string & path) {
        py::gil_scoped_release nogil;
        return load_backend_module(path);
    }, py::arg("path"));
    mod.def("compute_devices", [] {
        py::list out;
        for (const compute_device & c : compute_devices()) {
            py::dict d;
            d["backend"] = c.backend;
            d["name"] = c.name;
            d["description"] = c.description;
            d["type"] = compute_device_type_name(c.type);
            d["memory_total"] = c.memory_total;
            d["memory_free"] = c.memory_free;
            d["cpu_features"] = c.cpu_features;
            d["is_default"] = c.is_default;
            out.append(d);
        }
        return out;
    });
}
