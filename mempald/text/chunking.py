"""Split a drawer's text into pieces the embedding model reads whole (pure).

MiniLM reads 256 tokens including [CLS] and [SEP]; anything longer would be silently truncated, so an
exchange longer than ``max_tokens`` becomes several drawers. Cuts fall on paragraph, then line, then
sentence, then word boundaries. ``count`` is the model's own token counter, passed in so this module stays
pure and testable with any counter.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Counter = Callable[[str], int]

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# Below this many characters a text cannot exceed the budget (a WordPiece token covers at least one char,
# and we budget 1 char per token as the worst case only for very short texts).
_FAST_PATH_RATIO = 1


def split_tokens(text: str, max_tokens: int, count: Counter) -> list[str]:
    """Pieces of ``text`` each at most ``max_tokens`` tokens, concatenating back to the words of ``text``."""
    text = text.strip()
    if not text:
        return []
    if len(text) <= max_tokens * _FAST_PATH_RATIO or count(text) <= max_tokens:
        return [text]
    return _pack(_units(text, max_tokens, count, level=0), max_tokens, count)


def _split_level(text: str, level: int) -> list[str]:
    if level == 0:
        return [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    if level == 1:
        return [p for p in text.split("\n") if p.strip()]
    if level == 2:
        return [p for p in _SENTENCE.split(text) if p.strip()]
    return text.split()


_JOIN = ("\n\n", "\n", " ", " ", "")


def _units(text: str, max_tokens: int, count: Counter, level: int) -> list[tuple[str, int, int]]:
    """Break ``text`` into (unit, joiner-level, tokens) pieces each within the budget; each unit is counted
    once."""
    if level > 3:
        # A single "word" longer than the budget (a URL, base64): hard-split by characters.
        step = max(16, max_tokens)
        parts = [text[i : i + step] for i in range(0, len(text), step)]
        return [(p, 4, count(p)) for p in parts]
    out: list[tuple[str, int, int]] = []
    for part in _split_level(text, level):
        n = count(part)
        if n <= max_tokens:
            out.append((part, level, n))
        else:
            out.extend(_units(part, max_tokens, count, level + 1))
    return out


def _pack(units: list[tuple[str, int, int]], max_tokens: int, count: Counter) -> list[str]:
    """Greedy packing on summed unit counts (exact for WordPiece, which splits on whitespace first), with a
    final recount of each piece as the guarantee; linear in the number of units."""
    pieces: list[str] = []
    cur = ""
    cur_n = 0
    for unit, level, n in units:
        if cur and cur_n + n > max_tokens:
            pieces.append(cur)
            cur, cur_n = unit, n
        else:
            cur = unit if not cur else cur + _JOIN[level] + unit
            cur_n += n
    if cur:
        pieces.append(cur)
    out: list[str] = []
    for piece in pieces:
        if count(piece) <= max_tokens:
            out.append(piece)
        else:  # a counter that is not additive: fall back to the slow, exact packing for this piece
            out.extend(_pack_exact(_units(piece, max_tokens, count, 0), max_tokens, count))
    return out


def _pack_exact(units: list[tuple[str, int, int]], max_tokens: int, count: Counter) -> list[str]:
    pieces: list[str] = []
    cur = ""
    for unit, level, _n in units:
        cand = unit if not cur else cur + _JOIN[level] + unit
        if cur and count(cand) > max_tokens:
            pieces.append(cur)
            cur = unit
        else:
            cur = cand
    if cur:
        pieces.append(cur)
    return pieces
