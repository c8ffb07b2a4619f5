#include "voxtral_mel.h"

#include "voxtral_model.h"

#include <algorithm>
#include <cmath>

namespace captionist {

mel_frontend::mel_frontend(const voxtral_model & m)
    : stft_(m.hp.n_fft, m.window), n_mel_((int) m.hp.n_mel), log_floor_(m.hp.global_log_mel_max - 8.0f),
      filters_(m.mel_filters) {}

void mel_frontend::compute(const float * frame, float * out) const {
    std::vector<float> power(stft_.n_freq());
    stft_.compute(frame, power.data());
    for (int j = 0; j < n_mel_; ++j) out[j] = 0.0f;
    for (int k = 0; k < stft_.n_freq(); ++k) {
        const float p = power[k];
        if (p == 0.0f) continue;
        const float * f = &filters_[(size_t) k * n_mel_];
        for (int j = 0; j < n_mel_; ++j) out[j] += f[j] * p;
    }
    for (int j = 0; j < n_mel_; ++j) {
        float v = std::log10(std::max(out[j], 1e-10f));
        v = std::max(v, log_floor_);
        out[j] = (v + 4.0f) / 4.0f;
    }
}

} // namespace captionist
