"""Compression: text in, a lossy AAAK ``Document`` out (deterministic: the same input gives the same one).

Pure: standard library only.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mempald.features.aaak.detect import (
    EMOTION_TRIGGERS,
    FLAG_MARKERS,
    STOPWORDS,
    detect_emotions,
    detect_flags,
    entity_code,
    norm_quotes,
    phrase_re,
)
from mempald.features.aaak.model import AAAKError, Document, Header, Tunnel, Zettel, is_entity_code

QUOTE_MAX = 120
TOPICS_PER_ZETTEL = 3
EMOTIONS_PER_ZETTEL = 3
SENTENCES_PER_ZETTEL = 5

_FLAG_WEIGHT: dict[str, int] = {
    "DECISION": 2, "ORIGIN": 1, "CORE": 2, "PIVOT": 2, "TECHNICAL": 0, "MILESTONE": 1, "PROBLEM": 1,
}
_INTENSITY = ("critical", "crucial", "important", "urgent", "major", "huge", "finally", "must", "never")
_INTENSITY_RE = phrase_re(_INTENSITY)

_PARA_SPLIT_RE = re.compile(r"\n[ \t]*\n")
_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])\s+")
_NAME_TOKEN_RE = re.compile(r"\b[^\W\d_]{3,}\b")
_WORD_RE = re.compile(r"[^\W\d_][\w-]*")
_APOS_SUFFIX_RE = re.compile(r"'[^\W\d_]*")
_SPACE_RE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class _Unit:
    """One passage that becomes one zettel."""

    text: str
    sentences: tuple[str, ...]
    source: str | None


def _segment(text: str, source: str | None) -> list[_Unit]:
    units: list[_Unit] = []
    for para in _PARA_SPLIT_RE.split(text.replace("\r\n", "\n")):
        sentences: list[str] = []
        for line in para.split("\n"):
            sentences.extend(s.strip() for s in _SENT_SPLIT_RE.split(line.strip()) if s.strip())
        sentences = [s for s in sentences if any(ch.isalnum() for ch in s)]
        for start in range(0, len(sentences), SENTENCES_PER_ZETTEL):
            group = tuple(sentences[start : start + SENTENCES_PER_ZETTEL])
            units.append(_Unit(" ".join(group), group, source))
    return units


def _is_name_token(tok: str) -> bool:
    return tok[0].isupper() and tok[1:].islower() and tok.lower() not in STOPWORDS


def _detect_names(units: Sequence[_Unit], exclude: set[str]) -> list[str]:
    """Capitalised words that look like names: seen at least once not at the start of a sentence.

    A heuristic: product names (Postgres) pass it too. Words of names in the people map are excluded.
    """
    order: dict[str, int] = {}
    mid_sentence: set[str] = set()
    lowercase_seen: set[str] = set()
    position = 0
    for unit in units:
        for sentence in unit.sentences:
            for index, m in enumerate(_NAME_TOKEN_RE.finditer(norm_quotes(sentence))):
                tok = m.group(0)
                position += 1
                if tok.islower():
                    lowercase_seen.add(tok)
                if not _is_name_token(tok) or tok in exclude:
                    continue
                order.setdefault(tok, position)
                if index > 0:
                    mid_sentence.add(tok)
    names = [t for t in order if t in mid_sentence and t.lower() not in lowercase_seen]
    return sorted(names, key=order.__getitem__)


def _name_re(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(name).replace(r"\ ", r"\s+") + r"(?!\w)")


def _words(text: str) -> list[str]:
    lowered = _APOS_SUFFIX_RE.sub("", norm_quotes(text).lower())
    return [w.strip("-") for w in _WORD_RE.findall(lowered)]


def _marker_words() -> frozenset[str]:
    words: set[str] = set()
    for phrases in itertools.chain(EMOTION_TRIGGERS.values(), FLAG_MARKERS.values()):
        for phrase in phrases:
            if " " not in phrase:
                words.add(phrase)
    return frozenset(words)


_MARKER_WORDS = _marker_words()


def _truncate(text: str, limit: int = QUOTE_MAX) -> str:
    text = _SPACE_RE.sub(" ", text).strip()
    if len(text) <= limit:
        return text
    cut = text[: limit + 1]
    space = cut.rfind(" ")
    cut = cut[:space] if space > limit // 2 else text[:limit]
    return cut.rstrip(" ,;:-") + "\u2026"


def _weight(flags: tuple[str, ...], emotions: tuple[str, ...], text: str) -> int:
    weight = 3 + sum(_FLAG_WEIGHT[f] for f in flags)
    if emotions:
        weight += 1
    if _INTENSITY_RE.search(text):
        weight += 1
    return max(1, min(10, weight))


def compress_many(
    texts: Sequence[tuple[str, str | None]],
    *,
    wing: str = "",
    room: str = "",
    people: Mapping[str, str] | None = None,
    date: str = "",
    title: str | None = None,
) -> Document:
    """Compress several texts (each with its drawer id, or None) into one lossy AAAK document.

    Each paragraph (or run of up to five sentences) becomes a zettel carrying the drawer id it came from.
    ``people`` maps names to entity codes; other capitalised names are detected and given codes by
    ``entity_code``. Deterministic: the same input gives the same document.
    """
    people = dict(people or {})
    entity_of: dict[str, str] = {}
    taken: set[str] = set()
    for name, given in people.items():
        code = given.upper()
        if not is_entity_code(code):
            raise AAAKError(f"invalid entity code {given!r} for {name!r}")
        if not name.strip():
            raise AAAKError("people names must be non-empty")
        if code in taken:
            raise AAAKError(f"entity code {code} given to two people")
        entity_of[name.strip()] = code
        taken.add(code)

    units = [u for text, source in texts for u in _segment(text, source)]
    person_words = {w for name in entity_of for w in name.split()}
    for name in _detect_names(units, person_words | set(entity_of)):
        code = entity_code(name, taken)
        entity_of[name] = code
        taken.add(code)
    name_patterns = [(name, code, _name_re(name)) for name, code in entity_of.items()]
    entity_words = {w.lower() for name in entity_of for w in name.split()}
    entity_words |= {c.lower() for c in entity_of.values()}

    def is_topic_word(w: str) -> bool:
        return len(w) >= 3 and w not in STOPWORDS and w not in entity_words and w not in _MARKER_WORDS

    unit_words = [[w for w in _words(u.text) if is_topic_word(w)] for u in units]
    vocabulary = {w for ws in unit_words for w in ws}

    def fold(w: str) -> str:  # count "sessions" as "session" when both occur
        if w.endswith("s") and not w.endswith("ss") and w[:-1] in vocabulary:
            return w[:-1]
        return w

    unit_words = [[fold(w) for w in ws] for ws in unit_words]
    corpus_counts: Counter[str] = Counter(w for ws in unit_words for w in ws)
    first_seen: dict[str, int] = {}
    for pos, w in enumerate(w for ws in unit_words for w in ws):
        first_seen.setdefault(w, pos)

    zettels: list[Zettel] = []
    mentioned: dict[str, tuple[int, int]] = {}  # code -> (first unit, first offset)
    for index, (unit, words) in enumerate(zip(units, unit_words, strict=True), start=1):
        hits: list[tuple[int, str]] = []
        for _name, code, pattern in name_patterns:
            m = pattern.search(unit.text)
            if m is not None:
                hits.append((m.start(), code))
                mentioned.setdefault(code, (index, m.start()))
        codes = tuple(dict.fromkeys(code for _, code in sorted(hits)))
        counts = Counter(words)
        topics = tuple(
            sorted(counts, key=lambda w: (-counts[w], -corpus_counts[w], -len(w), first_seen[w]))[
                :TOPICS_PER_ZETTEL
            ]
        )
        emotions = detect_emotions(unit.text, limit=EMOTIONS_PER_ZETTEL)
        flags = detect_flags(unit.text)

        def salience(sentence: str, topics: tuple[str, ...] = topics) -> int:
            score = sum(3 + 2 * _FLAG_WEIGHT[f] for f in detect_flags(sentence))
            score += 2 * len(detect_emotions(sentence))
            score += sum(1 for _, _, p in name_patterns if p.search(sentence))
            sentence_words = _words(sentence)
            score += sum(1 for t in topics if t in sentence_words)
            if len(sentence) < 15:
                score -= 2
            if len(sentence) > QUOTE_MAX:  # would be cut
                score -= 3
            return score

        best = max(unit.sentences, key=salience)  # max() keeps the first of equal scores
        zettels.append(
            Zettel(
                id=index,
                entities=codes,
                topics=topics,
                quote=_truncate(best),
                weight=_weight(flags, emotions, unit.text),
                emotions=emotions,
                flags=flags,
                source=unit.source,
            )
        )

    # Tunnels: for every shared entity or topic, link each zettel to the previous one that has it.
    pairs: dict[tuple[int, int], None] = {}
    last_with: dict[str, int] = {}
    for z in zettels:
        for key in itertools.chain(("E:" + c for c in z.entities), ("T:" + t for t in z.topics)):
            prev = last_with.get(key)
            if prev is not None:
                pairs.setdefault((prev, z.id), None)
            last_with[key] = z.id
    by_id = {z.id: z for z in zettels}
    tunnels: list[Tunnel] = []
    for a, b in sorted(pairs):
        za, zb = by_id[a], by_id[b]
        shared = [c for c in za.entities if c in zb.entities] + [t for t in za.topics if t in zb.topics]
        tunnels.append(Tunnel(a, b, "+".join(shared)))

    arc: list[str] = []
    for z in zettels:
        if z.emotions and (not arc or arc[-1] != z.emotions[0]):
            arc.append(z.emotions[0])

    code_to_name = {code: name for name, code in entity_of.items()}
    entity_map = tuple(
        (code, code_to_name[code]) for code in sorted(mentioned, key=mentioned.__getitem__)
    )
    if title is None:
        title = ", ".join(
            sorted(corpus_counts, key=lambda w: (-corpus_counts[w], first_seen[w]))[:TOPICS_PER_ZETTEL]
        )
    return Document(
        header=Header(wing=wing, room=room, date=date, title=title, entity_map=entity_map),
        zettels=tuple(zettels),
        tunnels=tuple(tunnels),
        arc=tuple(arc),
    )


def compress(
    text: str,
    *,
    wing: str = "",
    room: str = "",
    people: Mapping[str, str] | None = None,
    source: str | None = None,
    date: str = "",
    title: str | None = None,
) -> Document:
    """Compress one text into a lossy AAAK document (see ``compress_many``)."""
    return compress_many([(text, source)], wing=wing, room=room, people=people, date=date, title=title)
