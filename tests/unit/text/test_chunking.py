from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mempald.text.chunking import split_tokens


def words(text: str) -> int:
    return len(text.split())


def test_short_text_is_one_piece() -> None:
    assert split_tokens("hello world", 10, words) == ["hello world"]


def test_splits_on_paragraphs_then_lines() -> None:
    text = "\n\n".join(" ".join(f"w{i}_{j}" for j in range(8)) for i in range(5))
    pieces = split_tokens(text, 20, words)
    assert all(words(p) <= 20 for p in pieces)
    assert " ".join(" ".join(pieces).split()) == " ".join(text.split())
    assert len(pieces) == 3


def test_giant_word_is_hard_split() -> None:
    pieces = split_tokens("a" * 1000, 50, lambda t: len(t) // 2)
    assert all(len(p) // 2 <= 50 for p in pieces) and "".join(pieces) == "a" * 1000


@given(st.text(max_size=2000), st.integers(min_value=16, max_value=100))
def test_never_over_budget_and_nothing_lost(text: str, budget: int) -> None:
    pieces = split_tokens(text, budget, words)
    assert all(words(p) <= budget for p in pieces)
    assert "".join("".join(pieces).split()) == "".join(text.split())
