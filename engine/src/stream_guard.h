// stream_guard.h - the checks at every stream entry point: one thread at a time, valid audio.
//
// A stream is owned by one thread at a time (engine.h). Two threads calling into it at once would
// corrupt its caches, so every entry point holds a stream_guard: the second caller gets a
// std::logic_error instead of undefined behaviour.
#pragma once

#include <atomic>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace captionist {

class stream_guard {
public:
    explicit stream_guard(std::atomic<bool> & busy) : busy_(busy) {
        if (busy_.exchange(true)) {
            throw std::logic_error("this stream is already in use by another thread (a stream is owned by one "
                                   "thread at a time)");
        }
    }
    ~stream_guard() { busy_.store(false); }
    stream_guard(const stream_guard &) = delete;
    stream_guard & operator=(const stream_guard &) = delete;

private:
    std::atomic<bool> & busy_;
};

// The preconditions every stream's feed() shares: not after finish() (std::logic_error), and only
// finite samples (std::invalid_argument naming the first bad one), checked before any state changes.
inline void stream_check_feed(const float * pcm, size_t n, bool finished) {
    if (finished) {
        throw std::logic_error("the stream is finished; call reset() to start a new one");
    }
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(pcm[i])) {
            throw std::invalid_argument("audio sample " + std::to_string(i) + " is not a finite number (NaN or Inf)");
        }
    }
}

} // namespace captionist
