// fc_vocab.h - the SentencePiece vocabulary of a FastConformer model and its detokenization.
//
// Pieces come in id order (tokenizer.fastconformer.*). A normal piece's text is the piece with
// U+2581 ('▁') turned into a space; a byte piece (<0xNN>, byte fallback) is that one byte; control
// pieces (<unk>, <pad>, <EOU>, <EOB>, language tags) and the blank have no text. A run of byte
// pieces is decoded as the references do (fc_stream).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct gguf_context;

namespace captionist {

enum class fc_piece_type : uint8_t { FC_PIECE_NORMAL = 0, FC_PIECE_CONTROL = 1, FC_PIECE_BYTE = 2 };

class fc_vocab {
public:
    // Reads tokenizer.fastconformer.*; `n_vocab` counts the blank, which may have no piece.
    // Throws std::runtime_error if absent or inconsistent.
    void load(const gguf_context * ctx, uint32_t n_vocab, uint32_t blank_id);

    int32_t size() const { return n_vocab_; }
    bool is_control(int32_t id) const;
    bool is_byte(int32_t id) const {
        return id >= 0 && id < (int32_t) types_.size() && types_[(size_t) id] == fc_piece_type::FC_PIECE_BYTE;
    }
    // The bytes token `id` contributes to the text (empty for control tokens and ids out of range).
    std::string token_bytes(int32_t id) const;

    int32_t blank_id = -1;
    int32_t eou_id = -1;
    int32_t eob_id = -1;

private:
    int32_t n_vocab_ = 0;
    std::vector<std::string> text_;      // per piece: its text bytes
    std::vector<fc_piece_type> types_;
};

} // namespace captionist
