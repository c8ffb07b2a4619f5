// module.cpp - captionist._engine: the task-level Python binding of the engine.
//
// Exposes Model (load, info, token bytes), Stream (feed / finish / reset, capture for tests) and
// quantize(). C++ exceptions become EngineError (runtime/logic errors) or ValueError (bad
// arguments) with the same message. Every compute call releases the GIL.
#include <captionist/engine.h>

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>

namespace py = pybind11;
using namespace captionist;

namespace {

py::dict result_to_dict(const stream_result & r) {
    py::list toks;
    for (const stream_token & t : r.new_tokens) {
        toks.append(py::make_tuple(t.id, py::bytes(t.piece).attr("decode")("utf-8", "replace"), t.time_ms));
    }
    py::dict d;
    d["new_tokens"] = toks;
    d["events"] = r.events;
    d["event_at"] = r.event_at;
    d["audio_ms_received"] = r.audio_ms_received;
    d["audio_ms_decoded"] = r.audio_ms_decoded;
    d["text_tail"] = py::bytes(r.text_tail).attr("decode")("utf-8", "replace");
    return d;
}

py::array_t<float> to_array(const std::vector<float> & v, py::ssize_t cols) {
    const py::ssize_t rows = cols > 0 ? (py::ssize_t) v.size() / cols : 0;
    py::array_t<float> a({rows, cols});
    std::copy(v.begin(), v.begin() + rows * cols, a.mutable_data());
    return a;
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
        const model_hparams & hp = m->hp;
        py::dict d;
        d["architecture"] = "voxtral_realtime";
        d["name"] = m->name;
        d["path"] = m->path;
        d["backend"] = m->backend_name;
        d["n_threads"] = m->n_threads;
        d["weight_bytes"] = m->weight_bytes;
        d["default_delay_tokens"] = hp.default_num_delay_tokens;
        d["default_delay_ms"] = hp.default_num_delay_tokens * hp.samples_per_token() * 1000 / hp.sample_rate;
        py::dict enc, dec, types;
        enc["n_embd"] = hp.enc_n_embd; enc["n_layer"] = hp.enc_n_layer; enc["n_head"] = hp.enc_n_head;
        enc["head_dim"] = hp.enc_head_dim; enc["n_ff"] = hp.enc_n_ff; enc["sliding_window"] = hp.enc_sliding_window;
        dec["n_embd"] = hp.dec_n_embd; dec["n_layer"] = hp.dec_n_layer; dec["n_head"] = hp.dec_n_head;
        dec["n_head_kv"] = hp.dec_n_head_kv; dec["head_dim"] = hp.dec_head_dim; dec["n_ff"] = hp.dec_n_ff;
        dec["sliding_window"] = hp.dec_sliding_window; dec["max_position"] = hp.dec_max_position;
        dec["n_vocab"] = hp.dec_n_vocab;
        d["encoder"] = enc;
        d["decoder"] = dec;
        for (ggml_tensor * t = ggml_get_first_tensor(m->ctx_w); t; t = ggml_get_next_tensor(m->ctx_w, t)) {
            const std::string tn = ggml_type_name(t->type);
            types[tn.c_str()] = types.contains(tn) ? types[tn.c_str()].cast<int>() + 1 : 1;
        }
        d["tensor_types"] = types;
        d["sample_rate"] = hp.sample_rate;
        d["n_special"] = m->voc.n_special;
        d["eos_id"] = m->voc.eos_id;
        d["bos_id"] = m->voc.bos_id;
        d["streaming_pad_id"] = m->voc.streaming_pad_id;
        d["streaming_word_id"] = m->voc.streaming_word_id;
        d["n_left_pad_tokens"] = hp.n_left_pad_tokens;
        return d;
    }
    py::bytes token_bytes(int32_t id) const { return py::bytes(m->voc.token_bytes(id)); }
    std::shared_ptr<const model> m;
};

class py_stream {
public:
    py_stream(const py_model & pm, int delay_tokens, bool eos_ends, bool capture) {
        stream_options o;
        o.num_delay_tokens = delay_tokens;
        o.eos_ends = eos_ends;
        o.capture = capture;
        n_mel = (py::ssize_t) pm.m->hp.n_mel;
        n_enc = (py::ssize_t) pm.m->hp.enc_n_embd;
        n_dec = (py::ssize_t) pm.m->hp.dec_n_embd;
        py::gil_scoped_release nogil;
        s = std::make_unique<stream>(pm.m, o);
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
    void reset(int delay_tokens) {
        py::gil_scoped_release nogil;
        s->reset(delay_tokens);
    }
    std::unique_ptr<stream> s;
    py::ssize_t n_mel = 0, n_enc = 0, n_dec = 0;
};

} // namespace

PYBIND11_MODULE(_engine, mod) {
    mod.doc() = "Captionist speech engine (Voxtral Realtime on ggml)";
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
        .def("token_bytes", &py_model::token_bytes, py::arg("id"));

    py::class_<py_stream>(mod, "Stream")
        .def(py::init<const py_model &, int, bool, bool>(), py::arg("model"), py::arg("delay_tokens") = 0,
             py::arg("eos_ends") = false, py::arg("capture") = false, py::keep_alive<1, 2>())
        .def("feed", &py_stream::feed, py::arg("pcm"))
        .def("finish", &py_stream::finish)
        .def("reset", &py_stream::reset, py::arg("delay_tokens") = 0)
        .def("set_forced_tokens", [](py_stream & s, std::vector<int32_t> ids) { s.s->set_forced_tokens(std::move(ids)); })
        .def_property_readonly("token_ids", [](const py_stream & s) { return s.s->token_ids(); })
        .def_property_readonly("delay_tokens", [](const py_stream & s) { return s.s->num_delay_tokens(); })
        .def_property_readonly("finished", [](const py_stream & s) { return s.s->finished(); })
        .def_property_readonly("state_bytes", [](const py_stream & s) { return s.s->state_bytes(); })
        .def("timings", [](const py_stream & s) {
            const stream_timings & t = s.s->timings();
            py::dict d;
            d["mel_ms"] = t.mel_ms; d["conv_ms"] = t.conv_ms; d["audio_ms"] = t.audio_ms; d["decoder_ms"] = t.decoder_ms;
            d["n_mel_frames"] = t.n_mel_frames; d["n_audio_batches"] = t.n_audio_batches;
            d["n_audio_tokens"] = t.n_audio_tokens; d["n_decoder_calls"] = t.n_decoder_calls;
            d["n_decoder_positions"] = t.n_decoder_positions;
            return d;
        })
        .def("captured", [](const py_stream & s) {
            const stream_capture & c = s.s->capture();
            py::dict d;
            d["mel"] = to_array(c.mel, s.n_mel);
            d["enc_out"] = to_array(c.enc_out, s.n_enc);
            d["embeds"] = to_array(c.embeds, s.n_dec);
            py::list logits;
            for (const auto & l : c.logits) logits.append(to_array(l, (py::ssize_t) l.size()).attr("reshape")(-1));
            d["logits"] = logits;
            return d;
        });

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
