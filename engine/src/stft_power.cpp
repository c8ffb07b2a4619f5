#include "stft_power.h"

#include <cmath>
#include <stdexcept>

namespace captionist {

stft_power::stft_power(int n_fft, const std::vector<float> & window)
    : n_fft_(n_fft), n_freq_(n_fft / 2 + 1), offset_((n_fft - (int) window.size()) / 2), span_((int) window.size()),
      window_(window) {
    if (span_ < 1 || span_ > n_fft_) throw std::invalid_argument("stft window longer than n_fft");
    cos_.resize((size_t) n_freq_ * span_);
    sin_.resize((size_t) n_freq_ * span_);
    const double two_pi = 6.283185307179586476925286766559;
    for (int k = 0; k < n_freq_; ++k) {
        for (int j = 0; j < span_; ++j) {
            // reduce k*n modulo n_fft first so the angle stays exact
            const long long n = offset_ + j;
            const double a = two_pi * (double) (((long long) k * n) % n_fft_) / n_fft_;
            cos_[(size_t) k * span_ + j] = (float) std::cos(a);
            sin_[(size_t) k * span_ + j] = (float) std::sin(a);
        }
    }
}

void stft_power::compute(const float * frame, float * power) const {
    std::vector<float> xw(span_);
    for (int j = 0; j < span_; ++j) xw[j] = frame[offset_ + j] * window_[j];
    const int n8 = span_ / 8 * 8;
    for (int k = 0; k < n_freq_; ++k) {
        const float * c = &cos_[(size_t) k * span_];
        const float * s = &sin_[(size_t) k * span_];
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
        for (int n = n8; n < span_; ++n) {
            re += (double) xw[n] * c[n];
            im += (double) xw[n] * s[n];
        }
        power[k] = (float) (re * re + im * im);
    }
}

} // namespace captionist
