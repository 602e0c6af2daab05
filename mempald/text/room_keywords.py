"""Room keywords compiled: the patterns a keyword matches, and the word index that counts most of them at once.

A room's score is the hits of its keywords in a text's prose (``classify.room_scores``). A keyword of one word
matches that word and its simple inflections as a whole word (``test``: tests, tested, testing), so its hits
are counted from the text's words in one scan; a phrase keeps its pattern, searched only where all its words
occur. Each keyword's pattern stays the reference the word counts are tested against
(``tests/unit/text/test_classify.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

from mempald.text.literals import Prefiltered
from mempald.text.room_tables import DEFAULT_ROOM_KEYWORDS


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"  # what \w matches


def starts_word(text: str, at: int) -> bool:
    """Does a match at ``at`` not start inside a word? (The left boundary the keyword and marker patterns leave
    out of the regex, where a leading ``\\b`` would cost the engine its literal-prefix scan.)"""
    return at == 0 or not (_is_word(text[at]) and _is_word(text[at - 1]))


_SUFFIXES = ("", "s", "es", "ed", "d", "ing")  # the simple inflections a single-word keyword also matches
_WORD = re.compile(r"\w+")


def _single_word(keyword: str) -> str | None:
    """The keyword lower-cased when it is one word of letters (it then matches its inflections), else None."""
    kw = keyword.strip().lower()
    return kw if kw and " " not in kw and kw.isalpha() else None


def keyword_regex(keyword: str) -> Prefiltered:
    kw = keyword.strip().lower()
    body = r"\s+".join(re.escape(w) for w in kw.split())
    # Single words also match their simple inflections: test/tests/tested/testing.
    suffix = "(?:" + "|".join(s for s in _SUFFIXES if s) + ")?" if _single_word(keyword) else ""
    # Matched on lower-cased text; the left word boundary is checked in count_hits (see classify._fast for why).
    return Prefiltered(re.compile(rf"{body}{suffix}(?!\w)"))


def count_hits(keyword: Prefiltered, text: str, cap: int) -> int:
    if not keyword.possible(text):
        return 0
    n = 0
    for m in keyword.rx.finditer(text):
        if starts_word(text, m.start()):
            n += 1
            if n >= cap:
                break
    return n


Table = tuple[tuple[str, tuple[str, ...]], ...]


class RoomTable:
    """A room table compiled: each keyword's pattern, and for the single-word keywords (most of them) the word
    forms they match. Such a keyword's match is a whole word (it starts where a word starts and ends where one
    ends), so its hits are the counts of its forms among the text's words: one scan of the text finds them all,
    where each pattern would be a search of its own. ``patterns`` is the reference the word index must agree with
    (``tests/unit/text/test_classify.py``)."""

    __slots__ = ("forms", "kw_room", "others", "patterns", "rooms")

    def __init__(self, items: Table) -> None:
        self.rooms = tuple(room for room, _kws in items)
        self.patterns = tuple((room, tuple(keyword_regex(k) for k in kws if k.strip())) for room, kws in items)
        forms: dict[str, list[int]] = {}
        kw_room: list[int] = []
        others: list[tuple[int, Prefiltered, tuple[str, ...]]] = []
        for r, (_room, kws) in enumerate(items):
            for k, rx in zip((k for k in kws if k.strip()), self.patterns[r][1], strict=True):
                word = _single_word(k)
                if word is None:
                    parts = k.strip().lower().split()
                    others.append((r, rx, tuple(parts) if all(map(str.isalpha, parts)) else ()))
                    continue
                for form in dict.fromkeys(word + suffix for suffix in _SUFFIXES):
                    forms.setdefault(form, []).append(len(kw_room))
                kw_room.append(r)
        self.forms = {form: tuple(ks) for form, ks in forms.items()}
        self.kw_room = tuple(kw_room)
        self.others = tuple(others)

    def scores(self, prose: str, cap: int) -> dict[str, int]:
        """Keyword hits per room in ``prose`` (lower-cased), each keyword counted at most ``cap`` times."""
        found = _WORD.findall(prose)
        words = set(found)
        hits = [0] * len(self.kw_room)
        forms = self.forms
        for word in forms.keys() & words:
            n = found.count(word)
            for k in forms[word]:
                hits[k] += n
        totals = [0] * len(self.rooms)
        for k, n in enumerate(hits):
            if n:
                totals[self.kw_room[k]] += min(n, cap)
        for r, rx, parts in self.others:
            # A phrase of words matches only where each of its words is a whole word of the text.
            if all(p in words for p in parts):
                totals[r] += count_hits(rx, prose, cap)
        return dict(zip(self.rooms, totals, strict=True))


@lru_cache(maxsize=32)
def compile_table(items: Table) -> RoomTable:
    return RoomTable(items)


@lru_cache(maxsize=1)
def default_table() -> RoomTable:
    return compile_table(table_key(DEFAULT_ROOM_KEYWORDS))


def table_key(keywords: Mapping[str, Sequence[str]]) -> Table:
    return tuple((str(room), tuple(str(k) for k in kws)) for room, kws in keywords.items())
