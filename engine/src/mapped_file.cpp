#include "mapped_file.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#if defined(_WIN32)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace captionist {

#if defined(_WIN32)

namespace {

std::wstring widen(const std::string & s) {
    const int n = MultiByteToWideChar(CP_UTF8, 0, s.c_str(), -1, nullptr, 0);
    std::wstring w(n > 0 ? (size_t) n : 0, L'\0');
    if (n > 0) MultiByteToWideChar(CP_UTF8, 0, s.c_str(), -1, w.data(), n);
    if (!w.empty()) w.pop_back();
    return w;
}

std::runtime_error win_error(const std::string & what, const std::string & path) {
    return std::runtime_error("cannot map model file '" + path + "': " + what + " failed (Windows error " +
                              std::to_string((unsigned long) GetLastError()) + ")");
}

} // namespace

mapped_file::mapped_file(const std::string & path) {
    HANDLE f = CreateFileW(widen(path).c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, nullptr,
                           OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (f == INVALID_HANDLE_VALUE) throw win_error("CreateFile", path);
    LARGE_INTEGER sz;
    if (!GetFileSizeEx(f, &sz)) {
        CloseHandle(f);
        throw win_error("GetFileSizeEx", path);
    }
    size_ = (size_t) sz.QuadPart;
    file_ = f;
    if (size_ == 0) return;
    HANDLE m = CreateFileMappingW(f, nullptr, PAGE_READONLY, 0, 0, nullptr);
    if (!m) {
        CloseHandle(f);
        throw win_error("CreateFileMapping", path);
    }
    mapping_ = m;
    addr_ = MapViewOfFile(m, FILE_MAP_READ, 0, 0, 0);
    if (!addr_) {
        CloseHandle(m);
        CloseHandle(f);
        throw win_error("MapViewOfFile", path);
    }
}

void mapped_file::release(const char *, size_t) const {} // no cheap equivalent; the pages stay mapped

mapped_file::~mapped_file() {
    if (addr_) UnmapViewOfFile(addr_);
    if (mapping_) CloseHandle((HANDLE) mapping_);
    if (file_) CloseHandle((HANDLE) file_);
}

#else

mapped_file::mapped_file(const std::string & path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        throw std::runtime_error("cannot map model file '" + path + "': " + std::strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        throw std::runtime_error("cannot map model file '" + path + "': " + std::strerror(e));
    }
    size_ = (size_t) st.st_size;
    if (size_ > 0) {
        void * p = mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            const int e = errno;
            ::close(fd);
            throw std::runtime_error("cannot map model file '" + path + "': " + std::strerror(e));
        }
        addr_ = p;
    }
    ::close(fd); // the mapping keeps the file
}

void mapped_file::release(const char * p, size_t n) const {
    const uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
    const uintptr_t start = ((uintptr_t) p + page - 1) / page * page, end = ((uintptr_t) p + n) / page * page;
    if (end > start) madvise((void *) start, end - start, MADV_DONTNEED);
}

mapped_file::~mapped_file() {
    if (addr_) munmap(addr_, size_);
}

#endif

} // namespace captionist
