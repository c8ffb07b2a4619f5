#include "vocab.h"

#include <gguf.h>

#include <stdexcept>
#include <string>

namespace captionist {

namespace {

int64_t key_or_throw(const gguf_context * ctx, const char * key) {
    const int64_t id = gguf_find_key(ctx, key);
    if (id < 0) {
        throw std::runtime_error(std::string("model file has no tokenizer key '") + key + "'");
    }
    return id;
}

int32_t read_u32(const gguf_context * ctx, const char * key) {
    const int64_t id = key_or_throw(ctx, key);
    if (gguf_get_kv_type(ctx, id) != GGUF_TYPE_UINT32) {
        throw std::runtime_error(std::string("tokenizer key '") + key + "' is not a u32");
    }
    return (int32_t) gguf_get_val_u32(ctx, id);
}

} // namespace

void vocab::load(const gguf_context * ctx, uint32_t n_vocab_expected) {
    const int64_t kb = key_or_throw(ctx, "tokenizer.tekken.token_bytes");
    const int64_t ko = key_or_throw(ctx, "tokenizer.tekken.token_offsets");
    if (gguf_get_kv_type(ctx, kb) != GGUF_TYPE_ARRAY || gguf_get_kv_type(ctx, ko) != GGUF_TYPE_ARRAY) {
        throw std::runtime_error("tokenizer token_bytes/token_offsets must be arrays");
    }
    const gguf_type tb = gguf_get_arr_type(ctx, kb);
    if ((tb != GGUF_TYPE_UINT8 && tb != GGUF_TYPE_INT8) || gguf_get_arr_type(ctx, ko) != GGUF_TYPE_UINT32) {
        throw std::runtime_error("tokenizer token_bytes must be u8 and token_offsets u32");
    }
    const size_t nb = gguf_get_arr_n(ctx, kb);
    const size_t no = gguf_get_arr_n(ctx, ko);
    const auto * pb = (const uint8_t *) gguf_get_arr_data(ctx, kb);
    const auto * po = (const uint32_t *) gguf_get_arr_data(ctx, ko);
    bytes_.assign(pb, pb + nb);
    offsets_.assign(po, po + no);
    if (no < 2 || no - 1 != n_vocab_expected) {
        throw std::runtime_error("tokenizer has " + std::to_string(no ? no - 1 : 0) + " tokens but the decoder has " +
                                 std::to_string(n_vocab_expected));
    }
    for (size_t i = 0; i + 1 < no; ++i) {
        if (offsets_[i] > offsets_[i + 1] || offsets_[i + 1] > nb) {
            throw std::runtime_error("tokenizer token_offsets are corrupt at token " + std::to_string(i));
        }
    }
    n_special = read_u32(ctx, "tokenizer.tekken.n_special");
    bos_id = read_u32(ctx, "tokenizer.tekken.bos_id");
    eos_id = read_u32(ctx, "tokenizer.tekken.eos_id");
    streaming_pad_id = read_u32(ctx, "tokenizer.tekken.streaming_pad_id");
    streaming_word_id = read_u32(ctx, "tokenizer.tekken.streaming_word_id");
    for (int32_t id : {bos_id, eos_id, streaming_pad_id, streaming_word_id}) {
        if (id < 0 || id >= n_special || id >= size()) {
            throw std::runtime_error("tokenizer special id " + std::to_string(id) + " is out of range");
        }
    }
}

std::string vocab::token_bytes(int32_t id) const {
    if (id < 0 || id >= size()) {
        return {};
    }
    return std::string((const char *) bytes_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]);
}

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
