"""Text lengths as the agents' hosts count them: Claude Code measures a hook's ``additionalContext`` (its 10,000
limit) as a JavaScript string's length, in UTF-16 code units, where a character outside the Basic Multilingual
Plane (an emoji, many CJK extension characters) counts two. Stdlib only: the hook (``mempal.hook``) and the
daemon's recall and cowork inbox count with it."""

from __future__ import annotations


def units(text: str) -> int:
    """The length of ``text`` in UTF-16 code units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def cut(text: str, limit: int) -> str:
    """The longest head of ``text`` of at most ``limit`` UTF-16 code units (never half a character)."""
    if units(text) <= limit:
        return text
    n = 0
    for i, ch in enumerate(text):
        n += 2 if ord(ch) > 0xFFFF else 1
        if n > limit:
            return text[:i]
    return text
