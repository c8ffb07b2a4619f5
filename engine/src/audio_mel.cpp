#include "audio_mel.h"

#include "model.h"

#include <algorithm>
#include <cmath>

namespace captionist {

mel_frontend::mel_frontend(const model & m)
    : n_fft_((int) m.hp.n_fft), n_freq_((int) m.hp.n_fft / 2 + 1), n_mel_((int) m.hp.n_mel),
      log_floor_(m.hp.global_log_mel_max - 8.0f), window_(m.window), filters_(m.mel_filters) {
    cos_.resize((size_t) n_freq_ * n_fft_);
    sin_.resize((size_t) n_freq_ * n_fft_);
    const double two_pi = 6.283185307179586476925286766559;
    for (int k = 0; k < n_freq_; ++k) {
        for (int n = 0; n < n_fft_; ++n) {
            // reduce k*n modulo n_fft first so the angle stays exact
            const double a = two_pi * (double) (((long long) k * n) % n_fft_) / n_fft_;
            cos_[(size_t) k * n_fft_ + n] = std::cos(a);
            sin_[(size_t) k * n_fft_ + n] = std::sin(a);
        }
    }
}

void mel_frontend::compute(const float * frame, float * out) const {
    std::vector<double> xw(n_fft_);
    for (int n = 0; n < n_fft_; ++n) xw[n] = (double) frame[n] * window_[n];
    std::vector<float> power(n_freq_);
    for (int k = 0; k < n_freq_; ++k) {
        const double * c = &cos_[(size_t) k * n_fft_];
        const double * s = &sin_[(size_t) k * n_fft_];
        double re = 0.0, im = 0.0;
        for (int n = 0; n < n_fft_; ++n) {
            re += xw[n] * c[n];
            im -= xw[n] * s[n];
        }
        power[k] = (float) (re * re + im * im);
    }
    for (int j = 0; j < n_mel_; ++j) out[j] = 0.0f;
    for (int k = 0; k < n_freq_; ++k) {
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
