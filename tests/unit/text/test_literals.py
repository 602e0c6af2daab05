"""The literal prefilter: every match of a pattern holds one of its needles, and the classifiers' answers do not
change with it (real transcripts, the repository's own documents, generated patterns and texts)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mempald.text import classify, room_keywords
from mempald.text.literals import Prefiltered, required
from tests.conftest import FORMATS

REPO = Path(__file__).resolve().parents[3]


def _texts() -> list[str]:
    """1,500-character slices of the shared fixtures (when present) and of this repository's markdown."""
    files = sorted(REPO.rglob("*.md"))
    if FORMATS.is_dir():
        files += sorted(p for p in FORMATS.rglob("*") if p.is_file() and p.stat().st_size < 2_000_000)
    out = []
    for p in files:
        if ".venv" in p.parts or ".git" in p.parts:
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        out += [text[i : i + 1500] for i in range(0, len(text), 1500)]
    return out


TEXTS = _texts()


def _all_patterns() -> list[Prefiltered]:
    found = [m for marks in classify._COMPILED.values() for m, _w in marks]
    found += [m for m, _w in classify._RESOLUTION]
    rooms = room_keywords.default_table()
    found += [p for _room, ps in rooms.patterns for p in ps]
    return found


@pytest.mark.parametrize(("pattern", "needles"), [
    (r"we(?: have|'ve)? decided\b", {" decided"}),
    (r"(?:went|going) with\b", {" with"}),
    (r"(?:always|never) (?:do|write)\b", {"always", "never"}),
    (r"cho(?:se|sen) \w+ over", {"chose"}),
    (r"abc|x", {"abc", "x"}),
    (r"a\bb", {"ab"}),  # a zero-width anchor does not split a run
    (r"(?:abc)+d", {"abc"}),
    (r"[a-z]+", None),  # a class requires no literal
    (r"(?:abc)?", None),  # an optional part requires nothing
    (r"abc|[x-z]", None),  # one branch with no literal: nothing is required
    (r"abc|[xy]", {"abc", "x", "y"}),  # a class that lists its characters requires one of them
    ("[❤♥]", {"❤", "♥"}),
    (r"ugh+\b|argh+\b", {"ugh", "argh"}),  # a repeated character continues the run by its least count
    (r"!{2,}", {"!!"}),
    (r"a{2}b", {"aab"}),
    (r"ab{1,3}c", {"ab"}),
    (r"ab*c", {"a"}),
    (r"(?i)abc", None),  # case-insensitive: not prefiltered
    (r"a(?=bc)", {"a"}),  # a look-ahead's text is not required by the match itself
    (r"", None),
])
def test_required_finds_the_literals_a_match_cannot_do_without(pattern: str, needles: set[str] | None) -> None:
    got = required(pattern)
    assert (None if got is None else set(got)) == needles


def test_every_match_of_every_marker_and_room_keyword_holds_a_needle() -> None:
    patterns = _all_patterns()
    assert len(patterns) > 200
    assert sum(1 for p in patterns if p.needles) >= len(patterns) - 2  # all but a class of emoji have needles
    matched = 0
    for text in TEXTS:
        low = text.lower()
        for p in patterns:
            for m in p.rx.finditer(low):
                matched += 1
                assert not p.needles or any(n in m.group(0) for n in p.needles), (p, m.group(0))
    assert matched > 1000  # the texts exercise the table


def test_the_classifiers_answer_the_same_with_and_without_the_prefilter(monkeypatch: pytest.MonkeyPatch) -> None:
    def answers() -> list[object]:
        classify.strip_code.cache_clear()
        return [(classify.classify_memory(t), classify.room_scores(t), classify.importance(t, None),
                 classify.has_fix(t), classify.key_sentence(t, "decision"), classify.key_sentence(t, "problem"))
                for t in TEXTS[:1500]]

    fast = answers()
    monkeypatch.setattr(Prefiltered, "possible", lambda _self, _text: True)
    assert answers() == fast
    assert any(a[0] != (None, 0.0) for a in fast)  # some texts are labelled at all


_ALPHA = "abc dé"
_atom = st.one_of(
    st.sampled_from(list("abcd ")),
    st.sampled_from([r"\b", r"\w", "[ab]", ".", r"\s", "a+", "b{2}", "a{1,2}", "[ac]", "é", "[éb]"]),
)


@st.composite
def _patterns(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 5 if depth < 2 else 0))
        if kind <= 1:
            parts.append(draw(_atom))
        elif kind == 2:
            parts.append("(?:" + "|".join(draw(st.lists(_patterns(depth + 1), min_size=1, max_size=3))) + ")")
        elif kind == 3:
            parts.append("(?:" + draw(_patterns(depth + 1)) + ")" + draw(st.sampled_from(["?", "*", "+", "{2}",
                                                                                           "{0,2}", "{1,3}"])))
        elif kind == 4:
            parts.append("(" + draw(_patterns(depth + 1)) + ")")
        else:
            parts.append(draw(st.sampled_from(["ab", "cd", "a b"])))
    return "".join(parts)


@settings(max_examples=400, deadline=None)
@given(_patterns(), st.lists(st.text(alphabet=_ALPHA, max_size=30), min_size=1, max_size=6))
def test_generated_patterns_never_match_a_text_without_their_needles(pattern: str, texts: list[str]) -> None:
    rx = re.compile(pattern)
    p = Prefiltered(rx)
    for text in texts:
        if rx.search(text) is not None:
            assert p.possible(text), (pattern, text, p.needles)
        for m in rx.finditer(text):
            assert not p.needles or any(n in m.group(0) for n in p.needles), (pattern, m.group(0), p.needles)
