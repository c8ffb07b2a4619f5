// fc_frontend.h - the FastConformer log-mel frontend, computed incrementally.
//
// Samples are pre-emphasised over the whole signal (y[0] = x[0], y[n] = x[n] - p·x[n-1]); frame f
// is the power spectrum of y[f·hop - n_fft/2 .. f·hop + n_fft/2) (zeros outside the signal) under the
// centred window, then log(filters · power + guard). A frame is computed once, as soon as every
// sample under its window has arrived. finish() computes the frames that need the zeros past the
// end, up to L = N / hop, and appends frame L as zeros: the reference masks its last STFT frame.
#pragma once

#include "stft_power.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace captionist {

struct fc_model;

class fc_frontend {
public:
    explicit fc_frontend(const fc_model & m);

    void reset();
    // Appends raw 16 kHz samples and computes every frame that became complete.
    void push(const float * pcm, size_t n);
    // End of input: computes the remaining frames and the final zero frame.
    void finish();

    int64_t n_frames() const { return base_ + (int64_t) (frames_.size() / (size_t) n_mel_); } // computed so far
    int64_t n_valid() const { return finished_ ? valid_ : -1; } // L after finish(), else -1
    int64_t n_samples() const { return n_samples_; }
    // Frame f (base() <= f < n_frames()): n_mel values.
    const float * frame(int64_t f) const { return &frames_[(size_t) ((f - base_) * n_mel_)]; }
    int64_t base() const { return base_; }
    // Frees frames before f.
    void release_before(int64_t f);
    size_t bytes() const { return (frames_.capacity() + y_.capacity()) * sizeof(float); }

private:
    void compute_ready(bool at_end);
    void compute_frame(int64_t f, bool at_end);

    const fc_model & m_;
    stft_power stft_;
    int hop_, n_fft_, n_mel_, win_lo_, win_hi_; // window span within a frame: [win_lo_, win_hi_)
    float preemph_, guard_;
    std::vector<float> filters_; // [n_freq][n_mel]

    std::vector<float> y_;  // pre-emphasised samples from y_base_
    int64_t y_base_ = 0;
    float last_x_ = 0.0f;
    int64_t n_samples_ = 0;
    std::vector<float> frames_; // [n][n_mel] frames from base_
    int64_t base_ = 0;
    int64_t next_ = 0;          // next frame to compute
    bool finished_ = false;
    int64_t valid_ = 0;
    std::vector<float> scratch_, power_;
};

} // namespace captionist
