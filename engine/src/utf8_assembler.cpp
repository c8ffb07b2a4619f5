#include "utf8_assembler.h"

namespace captionist {

std::string utf8_assembler::push(const std::string & bytes) {
    pending_ += bytes;
    return decode(false);
}

std::string utf8_assembler::flush() {
    return decode(true);
}

// Decodes `pending_` following the Unicode "maximal subpart" replacement rule (what CPython does):
// each maximal prefix of a valid sequence that cannot be completed becomes one U+FFFD. When not
// final, a trailing prefix that could still be completed is kept for the next push.
std::string utf8_assembler::decode(bool final_chunk) {
    static const char * const REPLACEMENT = "\xEF\xBF\xBD";
    std::string out;
    const auto * s = (const unsigned char *) pending_.data();
    const size_t n = pending_.size();
    size_t i = 0;
    while (i < n) {
        const unsigned char c = s[i];
        if (c < 0x80) {
            out += (char) c;
            ++i;
            continue;
        }
        int need = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            out += REPLACEMENT;
            ++i;
            continue;
        }
        size_t j = 1;
        bool bad = false;
        while (j <= (size_t) need) {
            if (i + j >= n) {
                break; // ran out of bytes
            }
            const unsigned char cc = s[i + j];
            const unsigned char l = (j == 1) ? lo : 0x80;
            const unsigned char h = (j == 1) ? hi : 0xBF;
            if (cc < l || cc > h) {
                bad = true;
                break;
            }
            ++j;
        }
        if (!bad && j > (size_t) need) {
            out.append((const char *) s + i, need + 1);
            i += need + 1;
        } else if (!bad && i + j >= n && !final_chunk) {
            break; // incomplete but still valid so far: wait for more bytes
        } else {
            out += REPLACEMENT;
            i += j;
        }
    }
    pending_.erase(0, i);
    return out;
}

} // namespace captionist
