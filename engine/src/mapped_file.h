// mapped_file.h - a whole file mapped read-only into memory (POSIX mmap, Win32 file mapping).
//
// Weights on the CPU (and on devices that share host memory) point straight into the mapping, so a
// model opens without reading its data, and several processes share one copy in the page cache.
// The caller checks tensor bounds against size() before using any byte: reading past the end of a
// mapping faults instead of failing.
#pragma once

#include <cstddef>
#include <string>

namespace captionist {

class mapped_file {
public:
    // Throws std::runtime_error with the OS's reason when the file cannot be mapped.
    explicit mapped_file(const std::string & path);
    ~mapped_file();
    mapped_file(const mapped_file &) = delete;
    mapped_file & operator=(const mapped_file &) = delete;

    const char * data() const { return static_cast<const char *>(addr_); }
    size_t size() const { return size_; }
    // Tells the OS this process is done with the whole pages inside [p, p + n): they leave its
    // resident set (the page cache keeps them; reading them again maps them back). A hint.
    void release(const char * p, size_t n) const;

private:
    void * addr_ = nullptr;
    size_t size_ = 0;
#if defined(_WIN32)
    void * file_ = nullptr;
    void * mapping_ = nullptr;
#endif
};

} // namespace captionist
