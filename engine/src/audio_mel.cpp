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
            cos_[(size_t) k * n_fft_ + n] = (float) std::cos(a);
            sin_[(size_t) k * n_fft_ + n] = (float) std::sin(a);
        }
    }
}

void mel_frontend::compute(const float * frame, float * out) const {
    // Direct DFT: F32 products summed in 8 independent F32 lanes (vectorizes), lanes summed in F64.
    std::vector<float> xw(n_fft_);
    for (int n = 0; n < n_fft_; ++n) xw[n] = frame[n] * window_[n];
    std::vector<float> power(n_freq_);
    const int n8 = n_fft_ / 8 * 8;
    for (int k = 0; k < n_freq_; ++k) {
        const float * c = &cos_[(size_t) k * n_fft_];
        const float * s = &sin_[(size_t) k * n_fft_];
        float re8[8] = {0}, im8[8] = {0};
        for (int n = 0; n < n8; n += 8) {
            for (int l = 0; l < 8; ++l) {
                re8[l] += xw[n + l] * c[n + l];
                im8[l] += xw[n + l] * s[n + l];
            }
        }
        double re = 0.0, im = 0.0;
        for (int l = 0; l < 8; ++l) {
            re += re8[l];
            im += im8[l];
        }
        for (int n = n8; n < n_fft_; ++n) {
            re += (double) xw[n] * c[n];
            im += (double) xw[n] * s[n];
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
