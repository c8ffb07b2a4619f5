#include "repack_cache.h"

#include "backend_registry.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <system_error>

namespace captionist {

namespace {

namespace fs = std::filesystem;

constexpr char MAGIC[8] = {'C', 'A', 'P', 'T', 'R', 'P', 'K', '1'};
constexpr size_t ALIGN = 4096;
// Free disk space a write leaves untouched, so that a cache never fills the disk it shares with
// the user's transcripts.
constexpr uintmax_t SPARE_BYTES = (uintmax_t) 1 << 30;

size_t align_up(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

uint64_t fnv1a(const std::string & s) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

std::string hex(uint64_t v) {
    static const char digits[] = "0123456789abcdef";
    std::string out(16, '0');
    for (int i = 15; i >= 0; --i, v >>= 4) out[(size_t) i] = digits[v & 15];
    return out;
}

fs::path fs_path(const std::string & utf8) { return fs::u8path(utf8); }

std::string absolute_path(const std::string & p) {
    std::error_code ec;
    fs::path a = fs::weakly_canonical(fs_path(p), ec);
    if (ec) a = fs::absolute(fs_path(p), ec);
    return ec ? p : a.u8string();
}

void put_u64(char * out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out[i] = (char) ((v >> (8 * i)) & 0xff);
}

// A cache's file name ends in SUFFIX; its write goes to that name + TMP_INFIX + a random number.
constexpr char SUFFIX[] = ".repack";
constexpr char TMP_INFIX[] = ".tmp-";
// The header's lines before the tensors' (format, ggml, buffer, cpu, model) fit in this many bytes.
constexpr size_t HEAD_BYTES = 64 * 1024;

bool ends_with(const std::string & s, const std::string & end) {
    return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

// The model file a cache file was made from ("" when `file` is not a cache file).
std::string model_of_cache(const fs::path & file) {
    std::ifstream in(file, std::ios::binary);
    std::string head(HEAD_BYTES, '\0');
    in.read(head.data(), (std::streamsize) head.size());
    head.resize((size_t) in.gcount());
    if (head.size() < sizeof(MAGIC) + 8 || head.compare(0, sizeof(MAGIC), MAGIC, sizeof(MAGIC)) != 0) return "";
    const std::string text = head.substr(sizeof(MAGIC) + 8);
    const std::string key = "\nmodel ";
    const size_t at = text.find(key);
    if (at == std::string::npos) return "";
    const size_t end = text.find('\n', at + key.size());
    return end == std::string::npos ? "" : text.substr(at + key.size(), end - at - key.size());
}

bool is_stale_temp(const fs::path & file) {
    std::error_code ec;
    const auto written = fs::last_write_time(file, ec);
    if (ec) return false;
    return fs::file_time_type::clock::now() - written > std::chrono::seconds(repack_cache::STALE_TEMP_S);
}

// Whether `file` (a cache file) can never be used again.
bool is_dead_cache(const fs::path & file) {
    const std::string model = model_of_cache(file);
    if (model.empty()) return true;
    std::error_code ec;
    const fs::path path = fs_path(model);
    if (fs::exists(path, ec) || ec) return false;
    return fs::is_directory(path.parent_path(), ec) && !ec;
}

// file_prefix() of a path already made absolute.
std::string prefix_of(const std::string & absolute) {
    return fs_path(absolute).stem().u8string() + "-" + hex(fnv1a(absolute)).substr(0, 12) + "-";
}

} // namespace

std::string repack_cache::file_prefix(const std::string & model_path) { return prefix_of(absolute_path(model_path)); }

repack_cache::repack_cache(const std::string & dir, const std::string & model_path, ggml_backend_buffer_type_t buft,
                           const std::vector<ggml_tensor *> & tensors)
    : dir_(dir), tensors_(tensors) {
    const std::string model = absolute_path(model_path);
    std::error_code ec;
    const uintmax_t model_size = fs::file_size(fs_path(model), ec);
    const auto mtime = ec ? fs::file_time_type() : fs::last_write_time(fs_path(model), ec);
    if (ec) throw std::runtime_error("cannot look at model file '" + model_path + "': " + ec.message());

    const std::string layout = std::string(ggml_backend_buft_name(buft)) + "\ncpu " + cpu_backend_features();
    header_ = "captionist repack cache 1\nggml " + std::string(ggml_version()) + " " + ggml_commit() + "\nbuffer " +
              layout + "\nmodel " + model + "\nmodel_size " + std::to_string(model_size) + "\nmodel_mtime " +
              std::to_string((long long) mtime.time_since_epoch().count()) + "\n";
    // each tensor's line ends in its offset and size, and the offsets depend on the header's
    // length: the data starts where a header with 20-digit numbers would end
    std::vector<std::string> lines; // each tensor's line before its offset and size
    size_t longest_header = sizeof(MAGIC) + 8 + header_.size();
    for (const ggml_tensor * t : tensors) {
        std::string line = "tensor " + std::string(ggml_get_name(t)) + " " + ggml_type_name(t->type);
        for (int d = 0; d < GGML_MAX_DIMS; ++d) line += " " + std::to_string(t->ne[d]);
        longest_header += line.size() + 2 * 21 + 1;
        lines.push_back(std::move(line));
    }
    size_t at = align_up(longest_header);
    for (size_t i = 0; i < tensors.size(); ++i) {
        offsets_.push_back(at);
        header_ += lines[i] + " " + std::to_string(at) + " " + std::to_string(ggml_nbytes(tensors[i])) + "\n";
        size_ = at + ggml_nbytes(tensors[i]);
        at = align_up(size_);
    }
    if (tensors.empty()) size_ = at;
    path_ = (fs_path(dir) / fs_path(prefix_of(model) + hex(fnv1a(layout)).substr(0, 12) + SUFFIX)).u8string();
}

std::shared_ptr<mapped_file> repack_cache::open() const {
    std::error_code ec;
    if (fs::file_size(fs_path(path_), ec) != size_ || ec) return nullptr;
    std::shared_ptr<mapped_file> mf;
    try {
        mf = std::make_shared<mapped_file>(path_);
    } catch (const std::runtime_error &) {
        return nullptr;
    }
    if (mf->size() != size_ || size_ < sizeof(MAGIC) + 8 + header_.size()) return nullptr;
    char len[8];
    put_u64(len, header_.size());
    const char * p = mf->data();
    if (std::memcmp(p, MAGIC, sizeof(MAGIC)) != 0 || std::memcmp(p + sizeof(MAGIC), len, 8) != 0 ||
        std::memcmp(p + sizeof(MAGIC) + 8, header_.data(), header_.size()) != 0) {
        return nullptr;
    }
    return mf;
}

void repack_cache::write() const {
    std::error_code ec;
    fs::create_directories(fs_path(dir_), ec);
    if (ec) throw std::runtime_error("cannot create the cache folder '" + dir_ + "': " + ec.message());
    const fs::space_info space = fs::space(fs_path(dir_), ec);
    if (!ec && space.available < size_ + SPARE_BYTES) {
        throw std::runtime_error("not enough free disk space in '" + dir_ + "' (" + std::to_string(size_ >> 20) +
                                 " MiB needed, and 1 GiB left free)");
    }
    std::random_device rd;
    const fs::path final_path = fs_path(path_);
    const fs::path tmp = fs_path(path_ + TMP_INFIX + hex(((uint64_t) rd() << 32) ^ rd()));
    try {
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            if (!out) throw std::runtime_error("cannot create '" + tmp.u8string() + "'");
            char len[8];
            put_u64(len, header_.size());
            out.write(MAGIC, sizeof(MAGIC));
            out.write(len, 8);
            out.write(header_.data(), (std::streamsize) header_.size());
            size_t at = sizeof(MAGIC) + 8 + header_.size();
            const std::vector<char> zeros(ALIGN, 0);
            for (size_t i = 0; i < tensors_.size() && out; ++i) {
                out.write(zeros.data(), (std::streamsize) (offsets_[i] - at));
                const size_t n = ggml_nbytes(tensors_[i]);
                out.write((const char *) tensors_[i]->data, (std::streamsize) n);
                at = offsets_[i] + n;
            }
            out.flush();
            if (!out) throw std::runtime_error("cannot write '" + tmp.u8string() + "' (disk full?)");
            out.close();
            if (!out) throw std::runtime_error("cannot write '" + tmp.u8string() + "' (disk full?)");
        }
        fs::rename(tmp, final_path, ec);
        if (ec) throw std::runtime_error("cannot rename '" + tmp.u8string() + "' to '" + path_ + "': " + ec.message());
    } catch (...) {
        fs::remove(tmp, ec);
        throw;
    }
}

std::vector<std::string> repack_cache::sweep(const std::string & dir) {
    std::vector<fs::path> dead; // found first, removed after: the listing is not changed under it
    std::vector<std::string> removed;
    try {
        std::error_code ec;
        fs::directory_iterator it(fs_path(dir), ec), end;
        for (; !ec && it != end; it.increment(ec)) {
            try { // one odd file (a name or header path Windows cannot convert) is passed over
                const fs::path file = it->path();
                const std::string name = file.filename().u8string();
                std::error_code type_ec;
                if (name.find(std::string(SUFFIX) + TMP_INFIX) != std::string::npos) {
                    if (is_stale_temp(file)) dead.push_back(file);
                } else if (ends_with(name, SUFFIX) && fs::is_regular_file(file, type_ec) && is_dead_cache(file)) {
                    dead.push_back(file);
                }
            } catch (const std::exception &) {
            }
        }
        for (const fs::path & file : dead) {
            std::error_code rm_ec;
            if (fs::remove(file, rm_ec) && !rm_ec) removed.push_back(file.u8string());
        }
    } catch (const std::exception &) { // out of memory: the sweep is housekeeping, the load goes on
    }
    return removed;
}

} // namespace captionist
