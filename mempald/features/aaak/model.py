"""The AAAK document model: its fixed vocabularies (emotion codes, flags, entity codes) and its checks.

Pure: standard library only. Every ``Header``, ``Zettel``, ``Tunnel`` and ``Document`` is valid once built;
a value the model does not allow raises ``AAAKError``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class AAAKError(ValueError):
    """An AAAK text that does not follow the grammar, or a value the data model does not allow.

    ``line`` is the 1-based line number of the offending line when the error comes from ``parse``.
    """

    def __init__(self, reason: str, line: int | None = None) -> None:
        self.reason = reason
        self.line = line
        super().__init__(f"line {line}: {reason}" if line is not None else reason)



# --------------------------------------------------------------------------------------------------------
# Fixed vocabularies
# --------------------------------------------------------------------------------------------------------

#: Emotion name -> the short code written in AAAK. 29 entries; the codes are lowercase ASCII letters.
EMOTIONS: dict[str, str] = {
    "joy": "joy",
    "fear": "fear",
    "trust": "trust",
    "grief": "grief",
    "wonder": "wonder",
    "rage": "rage",
    "love": "love",
    "hope": "hope",
    "despair": "desp",
    "peace": "peace",
    "humor": "humor",
    "tension": "tens",
    "vulnerability": "vul",
    "pride": "pride",
    "shame": "shame",
    "relief": "relief",
    "anxiety": "anx",
    "curiosity": "curious",
    "gratitude": "grat",
    "frustration": "frust",
    "determination": "determ",
    "confusion": "confus",
    "excitement": "excite",
    "nostalgia": "nostal",
    "loneliness": "lonely",
    "awe": "awe",
    "doubt": "doubt",
    "satisfaction": "satis",
    "surprise": "surpr",
}

#: Every valid emotion code.
EMOTION_CODES: frozenset[str] = frozenset(EMOTIONS.values())

#: Importance flags, in the order they are written.
FLAGS: tuple[str, ...] = ("DECISION", "ORIGIN", "CORE", "PIVOT", "TECHNICAL", "MILESTONE", "PROBLEM")

_ENTITY_CODE_RE = re.compile(r"[A-Z][A-Z0-9]{2}\Z")


def is_entity_code(code: str) -> bool:
    """True for a valid entity code: an uppercase letter then two uppercase letters or digits."""
    return bool(_ENTITY_CODE_RE.match(code))


# --------------------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------------------


def _check_items(kind: str, items: tuple[str, ...]) -> None:
    if not isinstance(items, tuple):
        raise AAAKError(f"{kind} must be a tuple")
    for item in items:
        if not isinstance(item, str) or not item:
            raise AAAKError(f"{kind} items must be non-empty strings, got {item!r}")


@dataclass(frozen=True, slots=True)
class Header:
    """Where and when a document comes from, what it is about, and the code -> name map of its entities."""

    wing: str = ""
    room: str = ""
    date: str = ""
    title: str = ""
    entity_map: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for name in ("wing", "room", "date", "title"):
            if not isinstance(getattr(self, name), str):
                raise AAAKError(f"header {name} must be a string")
        seen: set[str] = set()
        for pair in self.entity_map:
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise AAAKError(f"entity_map entries must be (code, name) pairs, got {pair!r}")
            code, name = pair
            if not isinstance(code, str) or not is_entity_code(code):
                raise AAAKError(f"invalid entity code {code!r}")
            if code in seen:
                raise AAAKError(f"entity code {code} mapped twice")
            if not isinstance(name, str) or not name:
                raise AAAKError(f"entity {code} needs a non-empty name")
            seen.add(code)

    def names(self) -> dict[str, str]:
        """The entity map as a dict (code -> name)."""
        return dict(self.entity_map)


@dataclass(frozen=True, slots=True)
class Zettel:
    """One atomic memory: who, what about, a verbatim key quote, how much it matters and how it felt.

    ``source`` is the drawer id the zettel was extracted from, when known.
    """

    id: int
    entities: tuple[str, ...]
    topics: tuple[str, ...]
    quote: str
    weight: int
    emotions: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    source: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.id, bool) or not isinstance(self.id, int) or self.id < 1:
            raise AAAKError(f"zettel id must be an integer >= 1, got {self.id!r}")
        _check_items("entities", self.entities)
        for code in self.entities:
            if not is_entity_code(code):
                raise AAAKError(f"invalid entity code {code!r} in Z{self.id}")
        _check_items("topics", self.topics)
        if not isinstance(self.quote, str):
            raise AAAKError("quote must be a string")
        if isinstance(self.weight, bool) or not isinstance(self.weight, int) or not 1 <= self.weight <= 10:
            raise AAAKError(f"weight must be an integer 1..10, got {self.weight!r}")
        _check_items("emotions", self.emotions)
        for emo in self.emotions:
            if emo not in EMOTION_CODES:
                raise AAAKError(f"unknown emotion code {emo!r} in Z{self.id}")
        _check_items("flags", self.flags)
        for flag in self.flags:
            if flag not in FLAGS:
                raise AAAKError(f"unknown flag {flag!r} in Z{self.id}")
        if self.source is not None and (not isinstance(self.source, str) or not self.source):
            raise AAAKError("source must be None or a non-empty string")


@dataclass(frozen=True, slots=True)
class Tunnel:
    """A link between two zettels of the same document (``label`` says why; may be empty)."""

    a: int
    b: int
    label: str = ""

    def __post_init__(self) -> None:
        for end in (self.a, self.b):
            if isinstance(end, bool) or not isinstance(end, int) or end < 1:
                raise AAAKError(f"tunnel endpoints must be zettel ids >= 1, got {end!r}")
        if self.a == self.b:
            raise AAAKError(f"tunnel from Z{self.a} to itself")
        if not isinstance(self.label, str):
            raise AAAKError("tunnel label must be a string")


@dataclass(frozen=True, slots=True)
class Document:
    """A header, its zettels, the tunnels between them and the emotional arc across the document."""

    header: Header
    zettels: tuple[Zettel, ...] = ()
    tunnels: tuple[Tunnel, ...] = ()
    arc: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        ids: set[int] = set()
        for z in self.zettels:
            if z.id in ids:
                raise AAAKError(f"duplicate zettel id Z{z.id}")
            ids.add(z.id)
        for t in self.tunnels:
            for end in (t.a, t.b):
                if end not in ids:
                    raise AAAKError(f"tunnel refers to missing zettel Z{end}")
        _check_items("arc", self.arc)
        for emo in self.arc:
            if emo not in EMOTION_CODES:
                raise AAAKError(f"unknown emotion code {emo!r} in arc")

