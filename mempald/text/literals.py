"""The literal strings a regular expression cannot match without: a cheap test before the regex runs.

``required(pattern)`` gives a set of strings such that every match of ``pattern`` contains at least one of
them, or None when no such set is known (then the regex must always run). ``Prefiltered`` pairs a compiled
pattern with that set: ``possible(text)`` is a few C substring searches, and only a text that holds one of the
strings is handed to the regex engine. The classifiers run about a hundred marker patterns over every drawer
of a backfill (``classify.classify_memory``, ``classify.room_scores``); most texts hold none of a marker's
words, and a substring search is many times cheaper than a regex search that fails.

The set is found from the parsed pattern (``re._parser``, the standard library's own parser): a run of
literal characters is a required string; a group requires what its body requires; an alternation requires one
of what its branches require (none if any branch requires nothing); a repeat requires what its body does when
it must occur at least once, and a repeated character (``h+``, ``!{2,}``) continues a run by its least count;
a class that lists a few characters (``[❤♥]``) requires one of them; zero-width anchors (``\\b``, ``^``) sit
inside a run without breaking it. Anything else (ranges and categories, ``.``, look-arounds, back-references,
case-insensitive parts) requires nothing, which is always safe: the regex then runs as before. Of a sequence's
candidates, the one whose shortest string is longest is kept. ``tests/unit/text/test_literals.py`` checks the
soundness on every marker and room keyword and on generated patterns and texts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_parser: Any = getattr(re, "_parser", None)  # Python 3.11+: sre_parse moved here (the old name warns)
_constants: Any = getattr(re, "_constants", None)

Needles = frozenset[str] | None
_MAX_CLASS = 16  # a listed class up to this size is that many one-character needles


def _better(a: Needles, b: Needles) -> Needles:
    """The more selective of two candidate sets (None: no constraint, always the worse)."""
    if a is None:
        return b
    if b is None:
        return a
    ka, kb = (min(map(len, a)), -len(a)), (min(map(len, b)), -len(b))
    return b if kb > ka else a


def _seq(items: Iterable[tuple[Any, Any]], flags: int) -> Needles:
    c = _constants
    best: Needles = None
    run: list[str] = []

    def close() -> None:
        nonlocal best
        if run:
            best = _better(best, frozenset(["".join(run)]))
            run.clear()

    for op, av in items:
        if op is c.LITERAL and not flags & re.IGNORECASE:
            run.append(chr(av))
            continue
        if op is c.AT:  # zero width: the characters on both sides are next to each other in the match
            continue
        repeated = _repeated_literal(op, av, flags)
        if repeated is not None:  # "h+", "!{2,}": the run goes on through its least count of the character
            char, low, high = repeated
            run.append(char * low)
            if high != low:
                close()
            continue
        close()
        best = _better(best, _item(op, av, flags))
    close()
    return best


def _repeated_literal(op: Any, av: Any, flags: int) -> tuple[str, int, int] | None:
    """(the character, least and most count) for a repeat of one literal character that must occur."""
    c = _constants
    if op not in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)) or flags & re.IGNORECASE:
        return None
    low, high, body = av
    if low < 1 or len(body) != 1 or body[0][0] is not c.LITERAL:
        return None
    return chr(body[0][1]), low, high


def _item(op: Any, av: Any, flags: int) -> Needles:
    c = _constants
    if op is c.SUBPATTERN:
        _group, add_flags, del_flags, body = av
        return _seq(body, (flags | add_flags) & ~del_flags)
    if op is c.BRANCH:
        sets = [_seq(branch, flags) for branch in av[1]]
        if any(s is None for s in sets):
            return None
        return frozenset().union(*(s for s in sets if s is not None))
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
        low, _high, body = av
        return _seq(body, flags) if low >= 1 else None
    if op is getattr(c, "ATOMIC_GROUP", None):
        return _seq(av, flags)
    listed = op is c.IN and 0 < len(av) <= _MAX_CLASS and all(o is c.LITERAL for o, _v in av)
    if listed and not flags & re.IGNORECASE:  # a class of a few listed characters ("[❤♥😀]"): one of them
        return frozenset(chr(v) for _o, v in av)
    return None


def required(pattern: str | re.Pattern[str]) -> Needles:
    """Strings one of which every match of ``pattern`` contains; None when unknown (the regex must run)."""
    if _parser is None or _constants is None:
        return None
    source, flags = (pattern.pattern, pattern.flags) if isinstance(pattern, re.Pattern) else (pattern, 0)
    if not isinstance(source, str):
        return None
    try:
        parsed = _parser.parse(source, flags)
    except (re.error, TypeError, ValueError):
        return None
    found = _seq(parsed, parsed.state.flags)
    if found is not None and (not found or "" in found):
        return None
    return found


class Prefiltered:
    """A compiled pattern and the strings it needs: ``possible(text)`` is False only when it cannot match."""

    __slots__ = ("needles", "non_ascii", "one", "rx")

    def __init__(self, rx: re.Pattern[str]) -> None:
        self.rx = rx
        found = required(rx)
        self.needles: tuple[str, ...] = tuple(sorted(found, key=len, reverse=True)) if found else ()
        self.one = self.needles[0] if len(self.needles) == 1 else None  # the common case, tested without a loop
        # Needles that are all non-ASCII (emoji) are in no ASCII text, and str.isascii() is a flag, not a scan.
        self.non_ascii = bool(self.needles) and not any(n.isascii() for n in self.needles)

    def possible(self, text: str) -> bool:
        one = self.one
        if one is not None:
            return one in text
        if self.non_ascii and text.isascii():
            return False
        for needle in self.needles:
            if needle in text:
                return True
        return not self.needles

    def __repr__(self) -> str:
        return f"Prefiltered({self.rx.pattern!r}, needles={self.needles!r})"
