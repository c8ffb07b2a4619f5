// stream_guard.h - refuses concurrent use of one stream from several threads.
//
// A stream is owned by one thread at a time (engine.h). Two threads calling into it at once would
// corrupt its caches, so every entry point holds a stream_guard: the second caller gets a
// std::logic_error instead of undefined behaviour.
#pragma once

#include <atomic>
#include <stdexcept>

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

} // namespace captionist
