"""Pick the sentences worth keeping verbatim: specific, self-contained, traceable.

A sentence scores for each kind of specific it carries: proper nouns and acronyms, numbers, dates, code or
paths, and imperative or preference language ("always", "must", "prefers", "Run ..."). Sentences that
lean on what came before ("However, this ...", "It should be noted ...", "This means ...") are dropped,
as are questions, lead-ins ending in a colon, and fragments. Up to ``max_facts`` per topic, best first,
near-repeats removed, returned in document order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from mempald.features.pack.result import Fact
from mempald.features.pack.sentences import Sentence

MAX_FACTS = 10
MIN_WORDS = 4
MAX_WORDS = 60
MIN_SCORE = 1.0
REPEAT_JACCARD = 0.8

_TRANSITION = re.compile(
    r"^(?:however|moreover|furthermore|additionally|also|besides|thus|hence|therefore|consequently|"
    r"meanwhile|nevertheless|nonetheless|anyway|overall|then|so|but|and|"
    r"in (?:addition|conclusion|summary|short|general|other words|any case|fact)|"
    r"on the other hand|that (?:said|being said)|having said that|"
    r"as (?:mentioned|noted|discussed|described|stated|shown|seen)(?: (?:above|earlier|before|below|previously))?|"
    r"it (?:should|must|can) be (?:noted|said|mentioned)|it is (?:worth|important to) not(?:e|ing)|"
    r"it is worth mentioning|note that|needless to say|of course)\b",
    re.IGNORECASE,
)
_VAGUE_SUBJECT = re.compile(
    r"^(?:this|that|these|those|it|they|such|which)\s+"
    r"(?:is|are|was|were|means|meant|makes|made|will|would|can|could|should|has|have|had|also|"
    r"helps|allows|seems|way|one|happens|works|did|does|do)\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:always|never|must|mustn't|should|shouldn't|prefers?|preferred|preference|avoids?|don't|"
    r"do not|does not|doesn't|requires?|required|remember|make sure|needs? to|no more than|at least|"
    r"at most|instead of|by default|rule|only)\b",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(
    r"^(?:use|run|keep|add|check|write|put|set|call|avoid|never|always|don't|do not|make|prefer|"
    r"remember|start|stop|ask|read|review|test|commit|push|install|update|pin|book|pay|eat|drink|sleep|"
    r"walk|take|bring|pack|log|track|save|send|schedule|stretch|limit|skip|open|close|rotate|renew|"
    r"file|tag|rebase|merge|squash|document|measure|warm up|cool down|buy|sell|transfer|water|prune|"
    r"plant|clean|replace|lubricate|inflate|carry|wear|ship|deploy|release|restart|reboot)\b",
    re.IGNORECASE,
)
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATE = re.compile(
    rf"\b(?:\d{{4}}-\d{{2}}(?:-\d{{2}})?|(?:19|20)\d{{2}}s?|{_MONTH}\.? \d{{1,2}}|\d{{1,2}} {_MONTH}|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|q[1-4])\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d")
_CODE = re.compile(r"`[^`]+`|\b[\w-]+\.(?:py|md|toml|json|yaml|yml|txt|sh|js|ts|rs|go|sql|cfg|ini)\b|~?/[\w.-]+/")
_WORD = re.compile(r"[A-Za-z][\w'’-]*")
_COMMON_CAPS_WORDS = (
    "I A An The This That These Those It If In On At For To Of And But Or So My Our We You He She They Be "
    "When Where What Why How Who Which Then There Here Not No Yes Do Don't Also Each Every All Any Some "
    "Once After Before During Until While"
)
_COMMON_CAPS = frozenset(_COMMON_CAPS_WORDS.split())


def is_vague(text: str) -> bool:
    t = text.lstrip("\"'“‘(*_ ")
    return bool(_TRANSITION.match(t) or _VAGUE_SUBJECT.match(t))


def _proper_nouns(text: str) -> int:
    words = _WORD.findall(text)
    n = 0
    for k, w in enumerate(words):
        if len(w) >= 2 and w.isupper():
            n += 1  # an acronym: API, NHS, CI
        elif k > 0 and w[0].isupper() and w not in _COMMON_CAPS:
            n += 1
        elif any(c.isupper() for c in w[1:]) and w[0].islower():
            n += 1  # camelCase identifier
    return n


def fact_score(s: Sentence) -> float:
    """0 for a sentence that is not a fact; otherwise higher for more specific content."""
    text = s.text
    words = s.words
    if words < MIN_WORDS or words > MAX_WORDS or text.endswith((":", "?")) or is_vague(text):
        return 0.0
    score = 0.0
    if _PREFERENCE.search(text):
        score += 1.5
    if _IMPERATIVE.match(text.lstrip("*_`\"' ")):
        score += 1.0
    if _DATE.search(text):
        score += 1.0
    if _NUMBER.search(text):
        score += 1.0
    if _CODE.search(text):
        score += 1.0
    score += min(2.0, 0.75 * _proper_nouns(text))
    return round(score, 2) if score >= MIN_SCORE else 0.0


def _word_set(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def near_repeat(a: frozenset[str], b: frozenset[str], threshold: float = REPEAT_JACCARD) -> bool:
    if not a or not b:
        return a == b
    return len(a & b) / len(a | b) >= threshold


def candidates(sentences: Iterable[Sentence]) -> list[tuple[float, Sentence]]:
    """Every sentence that qualifies, with its score, best first (ties in document order)."""
    scored = [(fact_score(s), s) for s in sentences]
    return sorted(((sc, s) for sc, s in scored if sc > 0), key=lambda x: (-x[0], x[1].order))


def select_facts(ranked: Sequence[tuple[float, Sentence]], max_facts: int = MAX_FACTS, exclude: str = "") -> list[Fact]:
    """The best ``max_facts`` of ``ranked`` that do not repeat each other or appear in ``exclude``."""
    chosen: list[tuple[Sentence, float]] = []
    seen: list[frozenset[str]] = []
    for score, s in ranked:
        if len(chosen) >= max_facts:
            break
        if exclude and s.text in exclude:
            continue
        ws = _word_set(s.text)
        if any(near_repeat(ws, other) for other in seen):
            continue
        chosen.append((s, score))
        seen.append(ws)
    chosen.sort(key=lambda x: x[0].order)
    return [Fact(s.text, s.file, s.line, s.end_line, score) for s, score in chosen]
