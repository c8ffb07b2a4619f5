// utf8_assembler.h - incremental UTF-8 decoding of token bytes.
//
// Tokenizers emit raw bytes, and a UTF-8 character may be split across tokens: the assembler holds
// back an incomplete tail and replaces invalid bytes with U+FFFD exactly as Python's
// `bytes.decode("utf-8", "replace")` does.
#pragma once

#include <string>

namespace captionist {

// Incremental UTF-8 decoder: push bytes, get the text that became complete.
class utf8_assembler {
public:
    // Append bytes; returns the newly decodable text (invalid sequences become U+FFFD).
    std::string push(const std::string & bytes);
    // End of input: decode whatever is held back (an incomplete tail becomes U+FFFD).
    std::string flush();
    void clear() { pending_.clear(); }

private:
    std::string decode(bool final_chunk);
    std::string pending_;
};

} // namespace captionist
