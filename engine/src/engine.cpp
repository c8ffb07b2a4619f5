// engine.cpp - the public entry points: load a model file of any supported architecture.
#include <captionist/engine.h>

#include "gguf_file.h"
#include "models/fastconformer/fc_model.h"
#include "models/voxtral/voxtral_model.h"

#include <stdexcept>
#include <string>

namespace captionist {

const char * model_architecture_name(model_architecture a) {
    switch (a) {
    case model_architecture::MODEL_ARCHITECTURE_VOXTRAL_REALTIME: return "voxtral_realtime";
    case model_architecture::MODEL_ARCHITECTURE_FASTCONFORMER_RNNT: return "fastconformer_rnnt";
    }
    return "unknown";
}

const char * stream_event_type_name(stream_event_type t) {
    switch (t) {
    case stream_event_type::STREAM_EVENT_END_OF_UTTERANCE: return "end_of_utterance";
    case stream_event_type::STREAM_EVENT_REANCHOR: return "reanchor";
    case stream_event_type::STREAM_EVENT_FINISHED: return "finished";
    }
    return "unknown";
}

const char * repack_cache_state_name(repack_cache_state s) {
    switch (s) {
    case repack_cache_state::REPACK_CACHE_NONE: return "none";
    case repack_cache_state::REPACK_CACHE_USED: return "used";
    case repack_cache_state::REPACK_CACHE_WRITTEN: return "written";
    case repack_cache_state::REPACK_CACHE_FAILED: return "failed";
    }
    return "unknown";
}

std::shared_ptr<const model> model_load(const std::string & path, const model_load_options & opts) {
    if (path.find('\0') != std::string::npos) {
        throw std::runtime_error("model path contains a NUL byte");
    }
    gguf_file f(path);
    hparam_reader r(f.gguf);
    const std::string arch = r.has("general.architecture") ? r.str("general.architecture") : "";
    if (arch == model_architecture_name(model_architecture::MODEL_ARCHITECTURE_VOXTRAL_REALTIME)) {
        return voxtral_model_load(f, opts);
    }
    if (arch == model_architecture_name(model_architecture::MODEL_ARCHITECTURE_FASTCONFORMER_RNNT)) {
        return fc_model_load(f, opts);
    }
    throw std::runtime_error("'" + path + "' holds architecture '" + arch +
                             "', but Captionist needs a 'voxtral_realtime' or 'fastconformer_rnnt' model");
}

} // namespace captionist
