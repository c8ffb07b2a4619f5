// voxtral_mel.h - Voxtral log-mel spectrogram frames, one at a time (the streaming frontend).
//
// Frame f of a padded signal x is the STFT of x[f*hop - n_fft/2 .. f*hop + n_fft/2) (zeros outside
// the signal, which equals the reference's reflect padding because the padded signal starts and ends
// with zeros), periodic Hann window, power spectrum, slaney mel filterbank, then
// log10(max(., 1e-10)), max(., global_max - 8), (. + 4) / 4.
#pragma once

#include "stft_power.h"

#include <vector>

namespace captionist {

struct voxtral_model;

class mel_frontend {
public:
    explicit mel_frontend(const voxtral_model & m);

    // `frame` holds n_fft samples (the window span); writes n_mel values to `out`.
    void compute(const float * frame, float * out) const;

    int n_fft() const { return stft_.n_fft(); }
    int n_mel() const { return n_mel_; }

private:
    stft_power stft_;
    int n_mel_;
    float log_floor_;
    std::vector<float> filters_; // [n_freq][n_mel]
};

} // namespace captionist
