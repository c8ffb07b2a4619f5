"""SentencePiece and tokenizer.json readers: pieces in id order, engine piece types, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from captionist.convert import ConversionError
from captionist.convert.hf_tokenizer import read_hf_tokenizer
from captionist.convert.piece_vocab import check_against_joint
from captionist.convert.sentencepiece_vocab import parse_sentencepiece
from tests.convert.fastconformer_synthetic import SPM_PIECES
from tests.convert.torch_checkpoint import SP_USER_DEFINED, sentencepiece_bytes


def test_sentencepiece_pieces_and_types() -> None:
    pieces = SPM_PIECES + [("<en-US>", SP_USER_DEFINED), ("+", SP_USER_DEFINED)]
    vocab = parse_sentencepiece(sentencepiece_bytes(pieces), "t.model")
    assert vocab.pieces == [p for p, _ in pieces]
    # unknown/control -> 1, normal -> 0, byte -> 2, user-defined <tags> -> 1, other user-defined -> 0
    assert vocab.types == [1, 1, 1, 0, 0, 0, 0, 0, 0, 2, 2, 1, 1, 1, 0]
    assert (vocab.eou_id, vocab.eob_id) == (11, 12)


def test_sentencepiece_errors() -> None:
    with pytest.raises(ConversionError, match="truncated"):
        parse_sentencepiece(sentencepiece_bytes(SPM_PIECES)[:-3], "t.model")
    with pytest.raises(ConversionError, match="unknown type 9"):
        parse_sentencepiece(sentencepiece_bytes([("x", 9)]), "t.model")
    with pytest.raises(ConversionError, match="holds no SentencePiece pieces"):
        parse_sentencepiece(b"", "t.model")


def test_unigram_tokenizer_json(tmp_path: Path) -> None:
    data = {
        "model": {
            "type": "Unigram",
            "vocab": [["<unk>", 0.0], ["▁a", -1.0], ["<0x0A>", 0.0]],
            "byte_fallback": True,
            "unk_id": 0,
        },
        "added_tokens": [{"id": 3, "content": "<blank>", "special": True}],
    }
    (tmp_path / "tokenizer.json").write_text(json.dumps(data))
    vocab = read_hf_tokenizer(tmp_path / "tokenizer.json")
    assert vocab.pieces == ["<unk>", "▁a", "<0x0A>", "<blank>"]
    assert vocab.types == [1, 0, 2, 1]
    assert (vocab.eou_id, vocab.eob_id) == (-1, -1)


@pytest.mark.parametrize(
    ("model", "added", "message"),
    [
        ({"type": "BPE", "vocab": {"a": 0, "b": 2}}, [], "no token with id 1"),
        ({"type": "BPE", "vocab": {"a": 0}}, [{"id": 0, "content": "b"}], "gives id 0 to both 'a' and 'b'"),
        ({"type": "BPE"}, [], "has no vocab"),
    ],
)
def test_tokenizer_json_errors(model: dict, added: list, message: str, tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": model, "added_tokens": added}))
    with pytest.raises(ConversionError, match=message):
        read_hf_tokenizer(tmp_path / "tokenizer.json")


def test_blank_may_be_an_extra_last_id() -> None:
    vocab = parse_sentencepiece(sentencepiece_bytes(SPM_PIECES), "t.model")
    check_against_joint(vocab, len(SPM_PIECES) + 1, len(SPM_PIECES), "t")  # NeMo: blank past the pieces
    check_against_joint(vocab, len(SPM_PIECES), 0, "t")  # HF: the blank has a piece
    with pytest.raises(ConversionError, match="blank last"):
        check_against_joint(vocab, len(SPM_PIECES) + 1, 0, "t")
