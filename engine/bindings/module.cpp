// module.cpp - captionist._engine: the task-level Python binding of the engine.
//
// Exposes Model (load, info, token bytes), Stream (feed / finish / reset, capture for tests) and
// quantize(), the same for every architecture. C++ exceptions become EngineError (runtime/logic
// errors) or ValueError (bad arguments) with the same message. Every compute call releases the GIL.
#include <captionist/engine.h>

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>

namespace py = pybind11;
using namespace captionist;

namespace {

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

class py_model {
public:
    py_model(const std::string & path, const std::string & backend, int n_threads) {
        model_load_options o;
        o.backend = backend;
        o.n_threads = n_threads;
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
        d["n_threads"] = i.n_threads;
        d["weight_bytes"] = i.weight_bytes;
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
        } catch (const std::invalid_argument & e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const std::bad_alloc &) {
            PyErr_SetString(engine_error, "out of memory");
        } catch (const std::exception & e) {
            PyErr_SetString(engine_error, e.what());
        }
    });

    py::class_<py_model>(mod, "Model")
        .def(py::init<const std::string &, const std::string &, int>(), py::arg("path"), py::arg("backend") = "auto",
             py::arg("n_threads") = 0)
        .def("info", &py_model::info)
        .def("token_bytes", &py_model::token_bytes, py::arg("id"))
        .def("is_control", &py_model::is_control, py::arg("id"));

    py::class_<py_stream>(mod, "Stream")
        .def(py::init([](const py_model & m, int latency_ms, const std::string & language, bool stop_at_eou,
                         bool capture) {
                 auto s = std::make_unique<py_stream>(m, latency_ms, language, stop_at_eou, capture);
                 s->capture_ = capture;
                 return s;
             }),
             py::arg("model"), py::arg("latency_ms") = 0, py::arg("language") = "",
             py::arg("stop_at_end_of_utterance") = false, py::arg("capture") = false, py::keep_alive<1, 2>())
        .def("feed", &py_stream::feed, py::arg("pcm"))
        .def("finish", &py_stream::finish)
        .def("reset", &py_stream::reset, py::arg("latency_ms") = 0, py::arg("language") = "",
             py::arg("stop_at_end_of_utterance") = false)
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
        [](const std::string & src, const std::string & dst, const std::string & type, int n_threads,
           std::function<void(size_t, size_t)> progress) {
            std::function<void(size_t, size_t)> cb;
            if (progress) {
                cb = [&progress](size_t done, size_t total) {
                    py::gil_scoped_acquire gil;
                    progress(done, total);
                };
            }
            py::gil_scoped_release nogil;
            quantize_model(src, dst, type, n_threads, cb);
        },
        py::arg("src"), py::arg("dst"), py::arg("type"), py::arg("n_threads") = 0, py::arg("progress") = nullptr);
    mod.def("physical_cores", &cpu_physical_cores);
}
