#include "fc_vocab.h"

#include "gguf_file.h"

#include <stdexcept>

namespace captionist {

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// "<0xNN>" -> the byte; throws on anything else. The length is checked before any character is
// read: a short piece such as "<0x" or "<0x4" must not be read past its end.
std::string byte_piece(const std::string & piece, size_t id) {
    const bool shaped = piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>';
    const int hi = shaped ? hex_digit(piece[3]) : -1;
    const int lo = shaped ? hex_digit(piece[4]) : -1;
    if (hi < 0 || lo < 0) {
        throw std::runtime_error("tokenizer piece " + std::to_string(id) + " is marked as a byte but is '" + piece +
                                 "' (expected <0xNN>)");
    }
    return std::string(1, (char) (hi * 16 + lo));
}

std::string normal_piece(const std::string & piece) {
    static const std::string SPACE_MARK = "\xE2\x96\x81"; // U+2581
    std::string out;
    for (size_t i = 0; i < piece.size();) {
        if (piece.compare(i, SPACE_MARK.size(), SPACE_MARK) == 0) {
            out += ' ';
            i += SPACE_MARK.size();
        } else {
            out += piece[i++];
        }
    }
    return out;
}

} // namespace

void fc_vocab::load(const gguf_context * ctx, uint32_t n_vocab, uint32_t blank) {
    hparam_reader r(ctx);
    const std::vector<std::string> pieces = r.str_array("tokenizer.fastconformer.pieces");
    const std::vector<uint8_t> types = r.u8_array("tokenizer.fastconformer.piece_types");
    if (types.size() != pieces.size()) {
        throw std::runtime_error("tokenizer has " + std::to_string(pieces.size()) + " pieces but " +
                                 std::to_string(types.size()) + " piece types");
    }
    if (pieces.size() != n_vocab && pieces.size() + 1 != n_vocab) {
        throw std::runtime_error("tokenizer has " + std::to_string(pieces.size()) + " pieces but the joint network has " +
                                 std::to_string(n_vocab) + " outputs");
    }
    if (blank >= n_vocab) {
        throw std::runtime_error("blank id " + std::to_string(blank) + " is out of range");
    }
    n_vocab_ = (int32_t) n_vocab;
    blank_id = (int32_t) blank;
    text_.assign(pieces.size(), std::string());
    types_.assign(pieces.size(), fc_piece_type::FC_PIECE_CONTROL);
    for (size_t i = 0; i < pieces.size(); ++i) {
        if (types[i] > 2) {
            throw std::runtime_error("tokenizer piece " + std::to_string(i) + " has an unknown type " +
                                     std::to_string((int) types[i]));
        }
        types_[i] = (fc_piece_type) types[i];
        if (types_[i] == fc_piece_type::FC_PIECE_NORMAL) text_[i] = normal_piece(pieces[i]);
        if (types_[i] == fc_piece_type::FC_PIECE_BYTE) text_[i] = byte_piece(pieces[i], i);
    }
    eou_id = r.i32("tokenizer.fastconformer.eou_id");
    eob_id = r.i32("tokenizer.fastconformer.eob_id");
    for (int32_t id : {eou_id, eob_id}) {
        if (id < -1 || id >= n_vocab_ || id == blank_id) {
            throw std::runtime_error("tokenizer special id " + std::to_string(id) + " is out of range");
        }
    }
}

bool fc_vocab::is_control(int32_t id) const {
    if (id < 0 || id >= (int32_t) types_.size() || id == blank_id) return true;
    return types_[(size_t) id] == fc_piece_type::FC_PIECE_CONTROL;
}

std::string fc_vocab::token_bytes(int32_t id) const {
    if (id < 0 || id >= (int32_t) text_.size() || id == blank_id) return {};
    return text_[(size_t) id];
}

} // namespace captionist
