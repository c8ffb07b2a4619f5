#include "stft_power.h"

#include <cmath>
#include <stdexcept>

namespace captionist {

namespace {

bool is_power_of_two(int n) { return n >= 2 && (n & (n - 1)) == 0; }

} // namespace

stft_power::stft_power(int n_fft, const std::vector<float> & window)
    : n_fft_(n_fft), n_freq_(n_fft / 2 + 1), offset_((n_fft - (int) window.size()) / 2), span_((int) window.size()),
      window_(window) {
    if (span_ < 1 || span_ > n_fft_) throw std::invalid_argument("stft window longer than n_fft");
    const double two_pi = 6.283185307179586476925286766559;
    if (is_power_of_two(n_fft_)) {
        twiddle_.resize((size_t) n_fft_ / 2);
        for (int k = 0; k < n_fft_ / 2; ++k) {
            const double a = -two_pi * k / n_fft_;
            twiddle_[(size_t) k] = {std::cos(a), std::sin(a)};
        }
        int bits = 0;
        while ((1 << bits) < n_fft_) ++bits;
        bitrev_.resize((size_t) n_fft_);
        for (int i = 0; i < n_fft_; ++i) {
            int r = 0;
            for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
            bitrev_[(size_t) i] = r;
        }
        work_.resize((size_t) n_fft_);
        return;
    }
    cos_.resize((size_t) n_freq_ * span_);
    sin_.resize((size_t) n_freq_ * span_);
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
    if (uses_fft()) {
        compute_fft(frame, power);
    } else {
        compute_dft(frame, power);
    }
}

void stft_power::compute_fft(const float * frame, float * power) const {
    std::vector<std::complex<double>> & a = work_;
    std::fill(a.begin(), a.end(), std::complex<double>(0.0, 0.0));
    for (int j = 0; j < span_; ++j) {
        const int n = offset_ + j;
        a[(size_t) bitrev_[(size_t) n]] = (double) frame[n] * (double) window_[(size_t) j];
    }
    // iterative decimation in time: butterflies of size 2, 4, ..., n_fft
    for (int len = 2; len <= n_fft_; len <<= 1) {
        const int half = len / 2, step = n_fft_ / len;
        for (int s = 0; s < n_fft_; s += len) {
            for (int k = 0; k < half; ++k) {
                const std::complex<double> w = twiddle_[(size_t) (k * step)];
                const std::complex<double> u = a[(size_t) (s + k)];
                const std::complex<double> v = a[(size_t) (s + k + half)] * w;
                a[(size_t) (s + k)] = u + v;
                a[(size_t) (s + k + half)] = u - v;
            }
        }
    }
    for (int k = 0; k < n_freq_; ++k) power[k] = (float) std::norm(a[(size_t) k]);
}

void stft_power::compute_dft(const float * frame, float * power) const {
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
