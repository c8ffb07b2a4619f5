// hparam_bounds.h - the valid range of every hyper-parameter, and the metadata-only check.
//
// Every key a loader reads goes through these: a value outside its range, or a relation between
// keys that does not hold, throws std::runtime_error naming the key, before anything is allocated.
// The ranges are listed in engine/GGUF.md and tested bound by bound in tests/engine/test_hparam_bounds.py.
//
//   hparam_reader r(ctx);
//   hp.n_fft = hparam_u32_in(r, "voxtral.audio.n_fft", 16, 8192);
//   hparam_require(hp.n_fft % 2 == 0, "voxtral.audio.n_fft", hp.n_fft, "must be even");
//
// model_metadata_check() runs an architecture's whole hyper-parameter and vocabulary check on keys
// alone (no tensors): the converter calls it before it writes anything.
#pragma once

#include <gguf.h>

#include <cstdint>
#include <string>

namespace captionist {

class hparam_reader;

// Reads the u32 `key` and checks lo <= value <= hi.
uint32_t hparam_u32_in(const hparam_reader & r, const char * key, uint32_t lo, uint32_t hi);
// Reads the f32 `key` (finite) and checks lo <= value <= hi.
float hparam_f32_in(const hparam_reader & r, const char * key, float lo, float hi);
// A rule between keys: unless `ok`, throws "model key 'key' = value: rule".
void hparam_require(bool ok, const char * key, double value, const std::string & rule);
// A layer count checked against the tensors present: `<prefix>N.<probe>` must exist for every N below
// `n_layer` and not for N = n_layer.
void hparam_check_layers(const gguf_context * ctx, const char * key, uint32_t n_layer, const std::string & prefix,
                         const std::string & probe);

// The architecture named by `general.architecture`: every hyper-parameter and tokenizer rule its loader
// applies, on the metadata alone. Throws std::runtime_error with the loader's message.
void model_metadata_check(const gguf_context * ctx);

} // namespace captionist
