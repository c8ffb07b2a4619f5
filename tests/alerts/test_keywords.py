from __future__ import annotations

from captionist.alerts.keywords import MAX_KEYWORDS, MAX_WORDS, KeywordList, normalize


def test_normalize_ignores_case_and_surrounding_punctuation_only() -> None:
    assert normalize("Alice,") == "alice"
    assert normalize("«ALICE»") == "alice"
    assert normalize("O'Neil.") == "o'neil"
    assert normalize("...") == ""
    assert normalize("Straße") == "strasse"


def test_parse_drops_blanks_and_repeats_and_keeps_what_the_user_wrote() -> None:
    keywords = KeywordList.parse(["Alice", "  ", "alice!", "budget   review", "...", "Bob"])
    assert [k.text for k in keywords.keywords] == ["Alice", "budget review", "Bob"]
    assert keywords.keywords[1].words == ("budget", "review")
    assert not KeywordList.parse([]) and not KeywordList.parse([" ", "?"])
    assert len(KeywordList.parse([f"k{i}" for i in range(200)]).keywords) == MAX_KEYWORDS
    assert len(KeywordList.parse([" ".join(["w"] * 20)]).keywords[0].words) == MAX_WORDS


def test_marks_whole_words_and_phrases() -> None:
    keywords = KeywordList.parse(["alice", "budget review"])
    words = ["Alice,", "the", "budget", "review", "and", "Alicia's", "budget", "now", "ALICE"]
    assert keywords.marks(words) == [True, False, True, True, False, False, False, False, True]
    assert keywords.marks([]) == []
    assert KeywordList().marks(["alice"]) == [False]


def test_ending_at_finds_the_keywords_a_word_completes() -> None:
    keywords = KeywordList.parse(["review", "budget review", "two"])
    assert {k.text for k in keywords.ending_at(["the", "Budget", "review."])} == {"review", "budget review"}
    assert keywords.ending_at(["twenty"]) == []
    assert keywords.ending_at([]) == []
