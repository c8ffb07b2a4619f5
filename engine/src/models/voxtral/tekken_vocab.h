// tekken_vocab.h - the tekken vocabulary (token bytes, control ids) and byte-level detokenization.
//
// Token ids below `n_special` are control tokens ([STREAMING_PAD], [STREAMING_WORD], BOS, EOS, ...)
// and never reach the text. Text tokens are raw byte strings; a UTF-8 character may be split
// across tokens, so text is assembled with utf8_assembler, which holds back an incomplete tail and
// replaces invalid bytes with U+FFFD exactly as Python's `bytes.decode("utf-8", "replace")` does.
#pragma once

#include "utf8_assembler.h"

#include <cstdint>
#include <string>
#include <vector>

struct gguf_context;

namespace captionist {

class tekken_vocab {
public:
    // Read `tokenizer.tekken.*` from a GGUF; throws std::runtime_error if absent or inconsistent.
    void load(const gguf_context * ctx, uint32_t n_vocab_expected);

    int32_t size() const { return (int32_t) offsets_.size() - 1; }
    bool is_control(int32_t id) const { return id < n_special; }
    // Raw bytes of token `id` (empty for ids out of range).
    std::string token_bytes(int32_t id) const;

    int32_t n_special = 0;
    int32_t bos_id = -1;
    int32_t eos_id = -1;
    int32_t streaming_pad_id = -1;
    int32_t streaming_word_id = -1;

private:
    std::vector<uint8_t> bytes_;
    std::vector<uint32_t> offsets_;
};

} // namespace captionist
