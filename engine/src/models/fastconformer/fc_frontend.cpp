#include "fc_frontend.h"

#include "fc_model.h"

#include <algorithm>
#include <cmath>

namespace captionist {

fc_frontend::fc_frontend(const fc_model & m)
    : m_(m), stft_((int) m.hp.n_fft, m.window), hop_((int) m.hp.hop_length), n_fft_((int) m.hp.n_fft),
      n_mel_((int) m.hp.n_mel), win_lo_(((int) m.hp.n_fft - (int) m.hp.win_length) / 2),
      win_hi_(win_lo_ + (int) m.hp.win_length), preemph_(m.hp.preemphasis), guard_(m.hp.log_guard),
      filters_(m.mel_filters) {
    scratch_.assign((size_t) n_fft_, 0.0f);
    power_.assign((size_t) stft_.n_freq(), 0.0f);
    reset();
}

void fc_frontend::reset() {
    y_.clear();
    y_base_ = 0;
    last_x_ = 0.0f;
    n_samples_ = 0;
    frames_.clear();
    base_ = 0;
    next_ = 0;
    finished_ = false;
    valid_ = 0;
}

void fc_frontend::push(const float * pcm, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float x = pcm[i];
        y_.push_back(n_samples_ == 0 ? x : x - preemph_ * last_x_);
        last_x_ = x;
        ++n_samples_;
    }
    compute_ready(false);
}

void fc_frontend::finish() {
    if (finished_) return;
    valid_ = n_samples_ / hop_;
    compute_ready(true);
    for (; next_ <= valid_; ++next_) frames_.insert(frames_.end(), (size_t) n_mel_, 0.0f); // the masked frame L
    finished_ = true;
}

void fc_frontend::compute_ready(bool at_end) {
    const int64_t half = n_fft_ / 2;
    while (true) {
        const int64_t f = next_;
        if (at_end ? f >= valid_ : f * hop_ - half + win_hi_ > n_samples_) break;
        compute_frame(f, at_end);
        ++next_;
    }
    // keep the samples the next frame's window still needs
    const int64_t keep_from = std::max<int64_t>(0, next_ * hop_ - half + win_lo_);
    if (keep_from - y_base_ >= 4096) {
        y_.erase(y_.begin(), y_.begin() + (keep_from - y_base_));
        y_base_ = keep_from;
    }
}

void fc_frontend::compute_frame(int64_t f, bool /*at_end*/) {
    const int64_t start = f * hop_ - n_fft_ / 2;
    for (int i = 0; i < n_fft_; ++i) {
        const int64_t s = start + i;
        scratch_[(size_t) i] = (i >= win_lo_ && i < win_hi_ && s >= 0 && s < n_samples_) ? y_[(size_t) (s - y_base_)] : 0.0f;
    }
    stft_.compute(scratch_.data(), power_.data());
    const size_t at = frames_.size();
    frames_.resize(at + (size_t) n_mel_, 0.0f);
    float * out = &frames_[at];
    for (int k = 0; k < stft_.n_freq(); ++k) {
        const float p = power_[(size_t) k];
        if (p == 0.0f) continue;
        const float * fk = &filters_[(size_t) k * n_mel_];
        for (int j = 0; j < n_mel_; ++j) out[j] += fk[j] * p;
    }
    for (int j = 0; j < n_mel_; ++j) out[j] = std::log(out[j] + guard_);
}

void fc_frontend::release_before(int64_t f) {
    f = std::min(f, n_frames());
    if (f - base_ < 256) return;
    frames_.erase(frames_.begin(), frames_.begin() + (size_t) ((f - base_) * n_mel_));
    base_ = f;
}

} // namespace captionist
