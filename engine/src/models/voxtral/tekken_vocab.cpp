#include "tekken_vocab.h"

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

void tekken_vocab::load(const gguf_context * ctx, uint32_t n_vocab_expected) {
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

std::string tekken_vocab::token_bytes(int32_t id) const {
    if (id < 0 || id >= size()) {
        return {};
    }
    return std::string((const char *) bytes_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]);
}

} // namespace captionist
