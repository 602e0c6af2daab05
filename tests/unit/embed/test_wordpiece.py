"""The ASCII token counter gives the tokenizer's own count, on real transcripts and on generated text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from mempald.embed.embedder import assemble_default_model
from mempald.embed.wordpiece import WordPieceCounter

FIXTURES = Path(__file__).resolve().parents[4] / "shared" / "fixtures" / "formats"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[WordPieceCounter, Tokenizer]:
    path = assemble_default_model(tmp_path_factory.mktemp("models")) / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    counter = WordPieceCounter.from_file(path, lambda text: rust(tok, text))
    assert counter is not None
    return counter, tok


def rust(tok: Tokenizer, text: str) -> int:
    return len(tok.encode(text, add_special_tokens=False).ids)


def strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def test_counts_match_on_real_transcripts(pair: tuple[WordPieceCounter, Tokenizer]) -> None:
    counter, tok = pair
    files = sorted(FIXTURES.rglob("*.jsonl"))
    if not files:
        pytest.skip(f"no transcript fixtures under {FIXTURES}")
    checked = 0
    for f in files:
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                texts = strings(json.loads(line))
            except ValueError:
                texts = [line]
            for text in texts:
                assert counter.count(text) == rust(tok, text), text[:200]
                checked += 1
    assert checked > 1000
    assert len(counter.cache) > 100


def test_plain_ascii_is_counted_without_the_tokenizer(pair: tuple[WordPieceCounter, Tokenizer]) -> None:
    _counter, tok = pair
    asked: list[str] = []
    counter = WordPieceCounter(_counter.vocab, _counter.prefix, _counter.max_chars, _counter.specials,
                               lambda t: asked.append(t) or rust(tok, t))
    text = "The deploy FAILED (exit 1): see https://ci.example/run?id=42 \u2026 caf\u00e9 [CLS] done."
    assert counter.count(text) == rust(tok, text)
    assert sorted(asked) == sorted(["\u2026", "caf\u00e9", "[CLS]"])  # each once, in no particular order


def test_edges(pair: tuple[WordPieceCounter, Tokenizer]) -> None:
    counter, tok = pair
    for text in ("caf\u00e9 au lait", "a [CLS] b", "bell\x07 x\x0by", "\u03a3\u039f\u03a3 \u4e2d\u6587", "", "  \n ",
                 "a\u200bb", "nbsp\u00a0here", "x" * 150, "a\x1cb c\x0cd e\x1f f\x0b"):
        assert counter.count(text) == rust(tok, text), repr(text)
    assert counter.count("x" * 150) == 1  # longer than WordPiece reads: one [UNK]


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300)
       | st.text(alphabet=st.characters(min_codepoint=9, max_codepoint=126), max_size=300)
       | st.lists(st.sampled_from(["deploy", "DEPLOYED", "re-ran", "x86_64", "qdrant", "(foo)", "#42", "\n\n",
                                   "tokenizer's", "https://a.b/c?d=e", "[SEP]", "[sep]", "zzzzqqq", "  ",
                                   "a" * 101, "naïve"]), max_size=60).map(" ".join))
def test_counts_match_on_generated_text(pair: tuple[WordPieceCounter, Tokenizer], text: str) -> None:
    counter, tok = pair
    assert counter.count(text) == rust(tok, text)
