// stft_power.h - the power spectrum of one windowed frame (the shared part of every log-mel frontend).
//
// A frame is n_fft samples; the window (win_length <= n_fft samples) sits centred in it, zeros
// elsewhere, as torch.stft pads a shorter window. power[k] = |sum_n x[n] w[n] e^(-2πi kn/n_fft)|²
// for k = 0..n_fft/2. A power-of-two n_fft (FastConformer: 512) goes through an iterative radix-2
// FFT in F64 (about 20x fewer operations than the direct sum); any other size (Voxtral: 400) through
// a direct DFT over the window's span (F32 products in 8 lanes, summed in F64).
#pragma once

#include <complex>
#include <vector>

namespace captionist {

class stft_power {
public:
    stft_power(int n_fft, const std::vector<float> & window);

    // `frame` holds n_fft samples; writes n_fft/2 + 1 values to `power`.
    void compute(const float * frame, float * power) const;

    int n_fft() const { return n_fft_; }
    int n_freq() const { return n_freq_; }
    bool uses_fft() const { return !twiddle_.empty(); }

private:
    void compute_fft(const float * frame, float * power) const;
    void compute_dft(const float * frame, float * power) const;

    int n_fft_;
    int n_freq_;
    int offset_; // first sample under the window
    int span_;   // window length
    std::vector<float> window_;
    // direct DFT tables [n_freq][span] (sizes that are not a power of two)
    std::vector<float> cos_;
    std::vector<float> sin_;
    // FFT tables: e^(-2πi k/n_fft) for k < n_fft/2, and the bit-reversal permutation
    std::vector<std::complex<double>> twiddle_;
    std::vector<int> bitrev_;
    mutable std::vector<std::complex<double>> work_; // scratch: one stft_power per stream, not shared
};

} // namespace captionist
