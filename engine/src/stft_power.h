// stft_power.h - the power spectrum of one windowed frame (the shared part of every log-mel frontend).
//
// A frame is n_fft samples; the window (win_length <= n_fft samples) sits centred in it, zeros
// elsewhere, as torch.stft pads a shorter window. power[k] = |sum_n x[n] w[n] e^(-2πi kn/n_fft)|²
// for k = 0..n_fft/2, by a direct DFT over the window's span (F32 products in 8 lanes, summed in F64).
#pragma once

#include <vector>

namespace captionist {

class stft_power {
public:
    stft_power(int n_fft, const std::vector<float> & window);

    // `frame` holds n_fft samples; writes n_fft/2 + 1 values to `power`.
    void compute(const float * frame, float * power) const;

    int n_fft() const { return n_fft_; }
    int n_freq() const { return n_freq_; }

private:
    int n_fft_;
    int n_freq_;
    int offset_; // first sample under the window
    int span_;   // window length
    std::vector<float> window_;
    std::vector<float> cos_; // [n_freq][span]
    std::vector<float> sin_; // [n_freq][span]
};

} // namespace captionist
