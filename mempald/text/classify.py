"""Keyword heuristics that label text without a model (pure: stdlib only, no I/O).

Three labellers live here (and, for the wake-up story, ``has_fix`` and ``key_sentence``):

* ``classify_memory``: the "general extractor". Each of the five memory types has a list of weighted
  regex markers; code (fenced blocks, indented blocks, inline spans) is stripped first so ``if error:``
  in a snippet is not a problem report. The best type wins if its confidence reaches the threshold.
* ``classify_room``: the conversation room, by counting keywords from an editable table (the taxonomy).
* ``room_for_path``: the room of a file in a code or notes repository, from its deepest recognised folder.

``importance`` gives a deterministic 0-5 weight from the memory type, length and emphasis words.
Everything is deterministic: same text, same answer, on every machine. The tables are data modules of their
own: ``memory_markers`` (the memory types and their markers) and ``room_tables`` (the room keywords and the
folder -> room table); the names above re-export them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

from mempald.text.literals import Prefiltered
from mempald.text.memory_markers import (
    BOILERPLATE,
    FILLER,
    MARKERS,
    MEMORY_TYPES,
    RESOLUTION,
    RESOLUTION_THRESHOLD,
)
from mempald.text.room_keywords import compile_table, default_table, starts_word, table_key
from mempald.text.room_tables import CONVO_ROOMS, DEFAULT_ROOM_KEYWORDS, FALLBACK_ROOM, FOLDER_ROOMS

__all__ = [
    "CONVO_ROOMS",
    "DEFAULT_ROOM_KEYWORDS",
    "FALLBACK_ROOM",
    "FOLDER_ROOMS",
    "MEMORY_TYPES",
    "classify_memory",
    "classify_room",
    "has_fix",
    "importance",
    "key_sentence",
    "memory_scores",
    "room_for_path",
    "room_scores",
    "strip_code",
]

# ---------------------------------------------------------------------------------------------------------
# Code stripping
# ---------------------------------------------------------------------------------------------------------

# A fenced block (``` or ~~~, three or more) up to a closing fence of the same kind, or to the end of the
# text when the fence is never closed (a truncated paste is still code, not prose).
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}(?!`)|~{3,}(?!~))[^\n]*\n.*?(?:^[ \t]{0,3}\1[`~]*[ \t]*$|\Z)", re.M | re.S)
# Maximal backtick runs on both sides (the look-arounds), so a long run of backticks costs linear time.
_INLINE = re.compile(r"(?<!`)(`{1,3})(?!`)[^`\n]+?(?<!`)\1(?!`)")
_INDENTED = re.compile(r"^(?: {4}|\t)")


@lru_cache(maxsize=8)
def strip_code(text: str, inline: bool = True) -> str:
    """``text`` without fenced code blocks, indented code blocks and (``inline``) inline code spans.

    An indented block counts as code only when it follows a blank line (or starts the text), as in
    Markdown: an indented continuation line of a list item stays prose. The last few results are kept: a
    drawer's room, memory type and importance each start from its stripped prose.
    """
    text = _FENCE.sub("\n", text)
    if inline:
        text = _INLINE.sub(" ", text)
    out: list[str] = []
    in_block = False
    prev_blank = True
    for line in text.split("\n"):
        blank = not line.strip()
        if blank:
            out.append("")
        elif in_block and _INDENTED.match(line):
            pass  # still inside the indented block
        elif prev_blank and _INDENTED.match(line):
            in_block = True
        else:
            in_block = False
            out.append(line)
        prev_blank = blank
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------------------
# The general extractor
# ---------------------------------------------------------------------------------------------------------



def _fast(pattern: str) -> Prefiltered:
    r"""Compile a marker for lower-cased text, its leading ``\b`` dropped and checked by ``_found``.

    A pattern that starts with ``\b`` (or with a case-insensitive flag) defeats the regex engine's
    literal-prefix scan, which makes the whole table ~30x slower on long texts. The strings the marker cannot
    match without are tested first (``literals``): most texts hold none of a marker's words.
    """
    return Prefiltered(re.compile(re.sub(r"(^|\|)\\b", r"\1", pattern)))


def _found(marker: Prefiltered, text: str) -> bool:
    """Does ``marker`` match ``text`` somewhere that does not start inside a word?"""
    if not marker.possible(text):
        return False
    rx = marker.rx
    pos = 0
    while (m := rx.search(text, pos)) is not None:
        start = m.start()
        if starts_word(text, start):
            return True
        pos = start + 1
    return False


_COMPILED: dict[str, list[tuple[Prefiltered, float]]] = {
    t: [(_fast(p), w) for p, w in marks] for t, marks in MARKERS.items()
}

# A weight total of _SATURATION gives confidence 1 - 1/e (about 0.63): one strong marker alone passes the
# default threshold, one weak marker ("because", "by default") alone does not.
_SATURATION = 2.5
# Words before the score is damped: a long exchange collects incidental markers.
_DAMP_WORDS = 300


def _scores(low: str) -> dict[str, float]:
    return {t: sum(w for rx, w in marks if _found(rx, low)) for t, marks in _COMPILED.items()}


@lru_cache(maxsize=8)
def _low_prose(text: str) -> str:
    """The prose of ``text`` (code stripped), lower-cased: what the markers and keywords are matched on."""
    return strip_code(text).lower()


def memory_scores(text: str) -> dict[str, float]:
    """Raw weighted marker score per memory type, on the prose of ``text`` (code stripped)."""
    return _scores(_low_prose(text))


def classify_memory(text: str, threshold: float = 0.3) -> tuple[str | None, float]:
    """The memory type of ``text`` and a confidence in 0..1; ``(None, conf)`` below ``threshold``.

    Confidence grows with the winning type's marker weight (saturating) and shrinks when a second type
    scores close to it (an ambiguous text is a weak label). Ties go to the earlier type in MEMORY_TYPES.
    """
    prose = strip_code(text)
    scores = _scores(_low_prose(text))
    ranked = sorted(MEMORY_TYPES, key=lambda t: -scores[t])
    best, second = scores[ranked[0]], scores[ranked[1]]
    if best <= 0:
        return None, 0.0
    words = len(prose.split())
    damp = max(1.0, math.sqrt(words / _DAMP_WORDS))
    strength = 1.0 - math.exp(-(best / damp) / _SATURATION)
    margin = math.sqrt(best / (best + second))
    conf = round(min(1.0, max(0.0, strength * margin)), 4)
    if conf < threshold:
        return None, conf
    return ranked[0], conf


_RESOLUTION = [(_fast(p), w) for p, w in RESOLUTION]


def has_fix(text: str) -> bool:
    """Does this exchange (its prose: code stripped) say what fixed or caused a problem, not only that there is
    one? A problem with its fix is worth remembering; a complaint alone is not."""
    low = _low_prose(text)
    return sum(w for rx, w in _RESOLUTION if _found(rx, low)) >= RESOLUTION_THRESHOLD


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9*`\"'(\[])")
_FILLER = re.compile(FILLER, re.I)
_MIN_SENTENCE, _MAX_SENTENCE = 24, 320
_QUOTED = re.compile(r"^\s*>\s?")


def _sentences(text: str) -> list[tuple[bool, str]]:
    """``(said_by_the_user, sentence)`` for the prose sentences of an exchange's text (the user's prompt is quoted
    with ``> ``); tool summaries, injected context, tables and headings are left out."""
    out: list[tuple[bool, str]] = []
    for raw in strip_code(text, inline=False).splitlines():  # inline code names what was changed: keep it
        user = bool(_QUOTED.match(raw))
        line = _QUOTED.sub("", raw).strip().lstrip("#-*• ").strip()
        low = line.lower()
        if not line or line.startswith("|") or low.startswith(BOILERPLATE):
            continue
        for piece in _SENTENCE.split(line):
            sent = _FILLER.sub("", piece.strip()).strip()
            # a sentence that ends in a colon only announces what follows
            if len(sent) >= _MIN_SENTENCE and not sent.endswith(":") and not sent.lower().startswith(BOILERPLATE):
                out.append((user, sent))
    return out


def key_sentence(text: str, memory_type: str | None, limit: int = 220) -> str | None:
    """The sentence of an exchange that states its decision, preference, outcome or fix, or None.

    Every sentence of the prose is scored with the markers of ``memory_type`` (for a problem, the ``RESOLUTION``
    markers: the line is the fix, not the complaint); the best one that scores at all wins, the assistant's
    reply before the user's prompt on a tie for problems and milestones (the outcome is in the reply) and the
    user's words first for preferences (they are the user's). ``None`` when no sentence carries a marker: such
    an exchange has no statement to quote, whatever its label.
    """
    if memory_type == "problem":
        marks = _RESOLUTION
    elif memory_type in _COMPILED:
        marks = _COMPILED[memory_type]
    else:
        return None
    best: tuple[float, str] | None = None
    for n, (user, sent) in enumerate(_sentences(text)):
        if len(sent) > _MAX_SENTENCE:
            continue
        low = _INLINE.sub(" ", sent).lower()  # markers count in prose, as in classify_memory
        score = sum(w for rx, w in marks if _found(rx, low))
        if score <= 0:
            continue
        if memory_type == "preference":
            score += 0.5 * user
        elif memory_type in ("problem", "milestone"):
            score += 0.5 * (not user)
        score -= n * 1e-4  # earlier first on a tie
        if best is None or score > best[0]:
            best = (score, sent)
    if best is None:
        return None
    line = " ".join(best[1].replace("**", "").split())
    if len(line) > limit:
        line = line[:limit].rsplit(" ", 1)[0] + "…"
    return line


_TYPE_WEIGHT: dict[str | None, int] = {
    "decision": 3,
    "preference": 3,
    "milestone": 3,
    "problem": 2,
    "emotional": 2,
    None: 1,
}
# Matched on lower-cased prose, the left word boundary checked as in ``_found`` (see ``_fast`` for why).
_EMPHASIS = re.compile(
    r"(?:important|importantly|remember|always|never|critical|crucial|must|essential|"
    r"don'?t forget|do not forget|note to self|key point|for the record)\b",
)


def _emphasis_words(low: str) -> set[str]:
    out: set[str] = set()
    pos = 0
    while (m := _EMPHASIS.search(low, pos)) is not None:
        start = m.start()
        if starts_word(low, start):
            out.add(m.group(0))
            pos = m.end()
        else:
            pos = start + 1
    return out


def importance(text: str, memory_type: str | None) -> int:
    """A deterministic importance in 0..5.

    Base weight by memory type (decisions, preferences and milestones 3; problems and emotional moments 2;
    unlabelled 1), +1 for emphasis words ("important", "remember", "always", ...), +1 more when two or
    more distinct ones appear, -1 for a very short text, +1 for a substantial one. Empty text is 0.
    """
    if not text.strip():
        return 0
    score = _TYPE_WEIGHT.get(memory_type, 1)
    emphasis = _emphasis_words(_low_prose(text))
    if emphasis:
        score += 1
    if len(emphasis) >= 2:
        score += 1
    words = len(text.split())
    if words < 8:
        score -= 1
    elif words >= 150:
        score += 1
    return max(0, min(5, score))


# ---------------------------------------------------------------------------------------------------------
# Conversation rooms
# ---------------------------------------------------------------------------------------------------------


_MAX_PER_KEYWORD = 3


_CODE_ROOM = "technical"
_CODE_BLOCK = re.compile(r"^[ \t]{0,3}(?:`{3,}|~{3,})", re.M)


def room_scores(text: str, keywords: Mapping[str, Sequence[str]] | None = None) -> dict[str, int]:
    """Keyword hits per room, on the prose of ``text`` (each keyword counted at most three times).

    Keywords inside code are not counted (``raise Error`` is not a conversation about problems); instead
    each fenced code block counts one hit for the "technical" room, when the table has one.
    """
    table = default_table() if keywords is None else compile_table(table_key(keywords))
    out = table.scores(_low_prose(text), _MAX_PER_KEYWORD)
    if _CODE_ROOM in out and ("```" in text or "~~~" in text):
        fences = len(_CODE_BLOCK.findall(text))
        out[_CODE_ROOM] += (fences + 1) // 2  # an opening and a closing fence per block
    return out


def classify_room(text: str, keywords: Mapping[str, Sequence[str]] | None = None) -> str:
    """The room whose keywords occur most in ``text``; ties go to the room listed first in the table;
    "general" when nothing scores. ``keywords`` replaces the default taxonomy when given."""
    best, best_score = FALLBACK_ROOM, 0
    for room, score in room_scores(text, keywords).items():
        if score > best_score:
            best, best_score = room, score
    return best


# ---------------------------------------------------------------------------------------------------------
# Folder rooms (projects mode)
# ---------------------------------------------------------------------------------------------------------


_NAME_PARTS = re.compile(r"[-_. ]+")


def _normalise_table(table: Mapping[str, str]) -> dict[tuple[str, ...], str]:
    out: dict[tuple[str, ...], str] = {}
    for pattern, room in table.items():
        parts = tuple(p for p in pattern.replace("\\", "/").lower().split("/") if p)
        if parts:
            out[parts] = room
    return out


_DEFAULT_FOLDERS = _normalise_table(FOLDER_ROOMS)


def room_for_path(rel_path: str, table: Mapping[str, str] | None = None) -> str:
    """The room of the file at ``rel_path`` (relative to the repository root; the last segment is the file
    name and is not a folder). The deepest folder that matches wins; at one depth a multi-folder pattern
    ("src/components") beats a single name, and an exact name beats a match through its parts
    ("web-ui" -> "ui"). No match: "general"."""
    folders = _DEFAULT_FOLDERS if table is None else _normalise_table(table)
    longest = max((len(k) for k in folders), default=1)
    parts = [p for p in rel_path.replace("\\", "/").lower().split("/") if p and p != "."][:-1]
    for depth in range(len(parts) - 1, -1, -1):
        for n in range(min(longest, depth + 1), 0, -1):
            room = folders.get(tuple(parts[depth - n + 1 : depth + 1]))
            if room is not None:
                return room
        for token in _NAME_PARTS.split(parts[depth]):
            room = folders.get((token,)) if token else None
            if room is not None:
                return room
    return FALLBACK_ROOM
