#include "hparam_bounds.h"

#include "gguf_file.h"
#include "models/fastconformer/fc_model.h"
#include "models/voxtral/voxtral_model.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace captionist {

namespace {

// The shortest text that reads back as the same f32 (1e-12, not 9.99999996e-13).
std::string number(double v) {
    char buf[32];
    for (int precision = 6; precision <= 9; ++precision) {
        std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
        if ((float) std::strtod(buf, nullptr) == (float) v) break;
    }
    return buf;
}

} // namespace

uint32_t hparam_u32_in(const hparam_reader & r, const char * key, uint32_t lo, uint32_t hi) {
    const uint32_t v = r.u32(key);
    if (v < lo || v > hi) {
        throw std::runtime_error(std::string("model key '") + key + "' = " + std::to_string(v) + " is outside [" +
                                 std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return v;
}

float hparam_f32_in(const hparam_reader & r, const char * key, float lo, float hi) {
    const float v = r.f32(key);
    if (!(v >= lo && v <= hi)) {
        throw std::runtime_error(std::string("model key '") + key + "' = " + number(v) + " is outside [" + number(lo) +
                                 ", " + number(hi) + "]");
    }
    return v;
}

void hparam_require(bool ok, const char * key, double value, const std::string & rule) {
    if (!ok) {
        throw std::runtime_error(std::string("model key '") + key + "' = " + number(value) + ": " + rule);
    }
}

void hparam_check_layers(const gguf_context * ctx, const char * key, uint32_t n_layer, const std::string & prefix,
                         const std::string & probe) {
    uint32_t present = 0;
    while (present <= n_layer && gguf_find_tensor(ctx, (prefix + std::to_string(present) + "." + probe).c_str()) >= 0) {
        ++present;
    }
    if (present != n_layer) {
        const std::string held = present > n_layer ? "more than " + std::to_string(n_layer) : std::to_string(present);
        throw std::runtime_error(std::string("model key '") + key + "' = " + std::to_string(n_layer) +
                                 " but the file holds " + held + " layers (tensors '" + prefix + "N." + probe + "')");
    }
}

void model_metadata_check(const gguf_context * ctx) {
    hparam_reader r(ctx);
    const std::string arch = r.has("general.architecture") ? r.str("general.architecture") : "";
    if (arch == "voxtral_realtime") {
        voxtral_metadata_check(r);
    } else if (arch == "fastconformer_rnnt") {
        fc_metadata_check(r);
    } else {
        throw std::runtime_error("architecture '" + arch + "' is not 'voxtral_realtime' or 'fastconformer_rnnt'");
    }
}

} // namespace captionist
