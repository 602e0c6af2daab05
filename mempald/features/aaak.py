"""AAAK: a compact, line-oriented shorthand for memories that people and LLMs can read.

This module is pure: standard library only, no I/O, nothing imported from the rest of mempald.

What it is, honestly
--------------------
AAAK is a *lossy* summary format. ``compress`` keeps, per passage, the people involved (as 3-letter codes),
a few topic keywords, one verbatim key quote, a 1-10 weight, emotion codes and importance flags, plus
links ("tunnels") between passages that share a person or topic. Everything else in the source text is
dropped and cannot be recovered from the AAAK form. MemPal's own authors measured retrieval falling from
96.6% to 84.2% R@5 when searching AAAK instead of the raw text, so mempald stores the verbatim drawers and
uses AAAK only as an optional, compact view. How much smaller the AAAK form is depends on the text; measure
it with the tokenizer of the model that will read it (this module does not count tokens).

What *is* exact is the text format itself: ``parse(encode(doc)) == doc`` for every valid ``Document``.
The grammar is written down in ``docs/AAAK.md``. In short::

    H:<wing>|<room>|<date>|<title>
    E:ALC=Alice,BOB=Bob
    Z1:ALC,BOB|auth,postgres|"switched to Postgres: sessions weren't ACID"|W8|trust,relief|DECISION|@d1
    T:Z1<->Z2|ALC+postgres
    ARC:doubt->determ->relief

Free-text fields escape ``\\``, ``|``, newline and carriage return with a backslash (``\\\\``, ``\\|``,
``\\n``, ``\\r``); items of comma-separated lists also escape ``,`` as ``\\,``.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "EMOTIONS",
    "EMOTION_CODES",
    "EMOTION_TRIGGERS",
    "FLAGS",
    "FLAG_MARKERS",
    "STOPWORDS",
    "AAAKError",
    "Document",
    "Header",
    "Tunnel",
    "Zettel",
    "compress",
    "compress_many",
    "detect_emotions",
    "detect_flags",
    "encode",
    "entity_code",
    "is_entity_code",
    "parse",
]


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

#: Emotion code -> words and phrases that trigger it (matched case-insensitively as whole words).
EMOTION_TRIGGERS: dict[str, tuple[str, ...]] = {
    "joy": ("joy", "joyful", "happy", "happiness", "delighted", "glad", "cheerful"),
    "fear": ("fear", "feared", "afraid", "scared", "terrified", "frightened"),
    "trust": ("trust", "trusted", "trusting", "trustworthy", "rely on", "relied on", "count on"),
    "grief": ("grief", "grieve", "grieving", "mourn", "mourning", "mourned", "heartbroken"),
    "wonder": ("wonder", "wondered", "marvel", "marvelous", "magical"),
    "rage": ("rage", "furious", "angry", "anger", "livid", "outraged"),
    "love": ("love", "loved", "loving", "adore", "adored"),
    "hope": ("hope", "hoped", "hoping", "hopeful", "hopefully"),
    "desp": ("despair", "hopeless", "desperate", "gave up", "giving up"),
    "peace": ("peace", "peaceful", "calm", "serene", "at ease"),
    "humor": ("funny", "hilarious", "joke", "joked", "joking", "laughed", "lol", "haha"),
    "tens": ("tension", "tense", "strained", "friction", "argued", "argument", "heated"),
    "vul": ("vulnerable", "vulnerability", "opened up", "confessed", "admitted"),
    "pride": ("proud", "pride"),
    "shame": ("ashamed", "shame", "embarrassed", "embarrassing", "humiliated"),
    "relief": ("relief", "relieved", "phew"),
    "anx": ("anxious", "anxiety", "worried", "worry", "worrying", "nervous", "stressed"),
    "curious": ("curious", "curiosity", "intrigued", "wondering"),
    "grat": ("grateful", "gratitude", "thankful", "thanks", "thank you", "appreciate", "appreciated"),
    "frust": ("frustrated", "frustrating", "frustration", "annoyed", "annoying", "irritated", "fed up"),
    "determ": ("determined", "determination", "persevere", "persisted", "no matter what", "won't give up"),
    "confus": ("confused", "confusing", "confusion", "puzzled", "baffled"),
    "excite": ("excited", "exciting", "excitement", "thrilled", "can't wait"),
    "nostal": ("nostalgia", "nostalgic", "remember when", "back then", "old days"),
    "lonely": ("lonely", "loneliness", "alone", "isolated"),
    "awe": ("awe", "awestruck", "breathtaking", "stunning", "mind-blowing"),
    "doubt": ("doubt", "doubted", "doubtful", "unsure", "uncertain", "skeptical", "hesitant"),
    "satis": ("satisfied", "satisfying", "satisfaction", "pleased", "gratifying"),
    "surpr": ("surprised", "surprising", "surprise", "unexpected", "unexpectedly", "shocked", "wow"),
}

#: Importance flags, in the order they are written.
FLAGS: tuple[str, ...] = ("DECISION", "ORIGIN", "CORE", "PIVOT", "TECHNICAL", "MILESTONE", "PROBLEM")

#: Flag -> marker words and phrases (whole words, case-insensitive). TECHNICAL also fires on code-ish text.
FLAG_MARKERS: dict[str, tuple[str, ...]] = {
    "DECISION": ("decided", "decide", "decides", "deciding", "decision", "decisions", "chose", "chosen",
                 "went with", "going with", "settled on", "agreed to", "agreed on", "opted for"),
    "ORIGIN": ("started", "founded", "founding", "began", "kicked off", "inception", "from scratch"),
    "CORE": ("always", "core", "fundamental", "principle", "principles", "non-negotiable", "essential"),
    "PIVOT": ("pivot", "pivoted", "pivoting", "changed direction", "change of direction", "changed course",
              "switched to", "switching to"),
    "TECHNICAL": ("api", "schema", "endpoint", "refactor", "refactored", "regex", "compiler", "traceback",
                  "stack trace", "sql", "json", "http", "cli", "function", "database"),
    "MILESTONE": ("shipped", "released", "launched", "deployed", "went live", "merged", "milestone",
                  "completed"),
    "PROBLEM": ("bug", "bugs", "error", "errors", "crash", "crashed", "crashes", "failed", "failing",
                "failure", "broken", "broke", "exception", "regression", "incident", "incidents",
                "corrupted", "leak", "doesn't work", "does not work"),
}

_FLAG_WEIGHT: dict[str, int] = {
    "DECISION": 2, "ORIGIN": 1, "CORE": 2, "PIVOT": 2, "TECHNICAL": 0, "MILESTONE": 1, "PROBLEM": 1,
}
_INTENSITY = ("critical", "crucial", "important", "urgent", "major", "huge", "finally", "must", "never")

#: English function words and chat filler that are never topics or names.
_STOPWORDS_TEXT = """
    a about above after again against all also am an and any are aren as at be because been before being
    below between both but by can cannot could couldn did didn do does doesn doing don down during each
    few for from further had hadn has hasn have haven having he her here hers herself him himself his how
    i if in into is isn it its itself just let ll me more most much my myself no nor not now of off on
    once only or other ought our ours ourselves out over own re same shan she should shouldn so some such
    than that the their theirs them themselves then there these they this those through to too under
    until up ve very was wasn we were weren what when where which while who whom why will with won would
    wouldn you your yours yourself yourselves yes yeah okay ok sure well really actually basically maybe
    thing things stuff lot lots get got gets getting make made makes making like just one two three
    first second also still even ever every via per etc new use used using want wanted need needed know
    think thought going go goes went said say says see seen look looks way ways time times day days
    today tomorrow yesterday tonight however though although since already yet again back right left
    please thanks hello hey hi let's here's there's it's that's what's i'm you're we're they're
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december would could should might must shall can't won't don't
honestly literally ultimately afterward afterwards probably definitely certainly totally pretty quite
long kept keep keeps stayed stay tried try tries pushing pointing wrote write writes written told tell
whole entire tough big small good bad great nice lots kind sort able done doing says take took taken
come came comes gave give gives put puts let's hmm ah oh
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORDS_TEXT.split())

_ENTITY_CODE_RE = re.compile(r"[A-Z][A-Z0-9]{2}\Z")
_EMOTION_TRIGGER_RE: dict[str, re.Pattern[str]] = {}
_FLAG_RE: dict[str, re.Pattern[str]] = {}


def _phrase_re(phrases: Sequence[str]) -> re.Pattern[str]:
    ordered = sorted(phrases, key=len, reverse=True)
    alternatives = "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in ordered)
    return re.compile(rf"(?<![\w'])(?:{alternatives})(?![\w'])", re.IGNORECASE)


for _code, _triggers in EMOTION_TRIGGERS.items():
    _EMOTION_TRIGGER_RE[_code] = _phrase_re(_triggers)
for _flag, _markers in FLAG_MARKERS.items():
    _FLAG_RE[_flag] = _phrase_re(_markers)

_INTENSITY_RE = _phrase_re(_INTENSITY)
_CODEISH_RE = re.compile(
    r"`"
    r"|\b\w+\.(?:py|pyi|rs|ts|tsx|js|jsx|go|java|kt|c|h|cc|cpp|hpp|rb|php|cs|swift|toml|json|yaml|yml|sql|sh|ini|cfg)\b"
    r"|\b[a-z][a-z0-9]*_[a-z0-9_]+\b"
    r"|\b[a-z]+[A-Z]\w*\("
    r"|\w\(\)"
    r"|::|=>|\{\}|\[\]"
    r"|\b(?:def|fn|struct|impl|async def|SELECT|INSERT|UPDATE|CREATE TABLE)\s"
)


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


# --------------------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------------------

_ESCAPES = {"\\": "\\\\", "|": "\\|", "\n": "\\n", "\r": "\\r"}
_UNESCAPES = {"\\": "\\", "|": "|", ",": ",", "n": "\n", "r": "\r"}


def _esc(text: str, *, in_list: bool = False) -> str:
    out: list[str] = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif in_list and ch == ",":
            out.append("\\,")
        else:
            out.append(ch)
    return "".join(out)


def _esc_list(items: Sequence[str]) -> str:
    return ",".join(_esc(item, in_list=True) for item in items)


def encode(doc: Document) -> str:
    """Write a document in AAAK. The result ends with a newline; ``parse`` reads it back exactly."""
    h = doc.header
    lines = ["H:" + "|".join(_esc(v) for v in (h.wing, h.room, h.date, h.title))]
    if h.entity_map:
        lines.append("E:" + ",".join(f"{code}={_esc(name, in_list=True)}" for code, name in h.entity_map))
    for z in doc.zettels:
        fields = [
            ",".join(z.entities),
            _esc_list(z.topics),
            '"' + _esc(z.quote) + '"',
            f"W{z.weight}",
            ",".join(z.emotions),
            ",".join(z.flags),
        ]
        if z.source is not None:
            fields.append("@" + _esc(z.source))
        lines.append(f"Z{z.id}:" + "|".join(fields))
    lines.extend(f"T:Z{t.a}<->Z{t.b}|{_esc(t.label)}" for t in doc.tunnels)
    if doc.arc:
        lines.append("ARC:" + "->".join(doc.arc))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------------------

_ZETTEL_HEAD_RE = re.compile(r"Z([1-9][0-9]*):")
_TUNNEL_ENDS_RE = re.compile(r"Z([1-9][0-9]*)<->Z([1-9][0-9]*)\Z")
_WEIGHT_RE = re.compile(r"W(10|[1-9])\Z")


def _split(raw: str, sep: str, lineno: int) -> list[str]:
    """Split on unescaped ``sep``; the pieces keep their escapes."""
    parts: list[str] = []
    cur: list[str] = []
    it = iter(raw)
    for ch in it:
        if ch == "\\":
            nxt = next(it, None)
            if nxt is None:
                raise AAAKError("dangling backslash at end of line", lineno)
            cur.append(ch + nxt)
        elif ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _unesc(raw: str, lineno: int) -> str:
    out: list[str] = []
    it = iter(raw)
    for ch in it:
        if ch == "\\":
            nxt = next(it, None)
            if nxt is None:
                raise AAAKError("dangling backslash", lineno)
            if nxt not in _UNESCAPES:
                raise AAAKError(f"unknown escape \\{nxt}", lineno)
            out.append(_UNESCAPES[nxt])
        else:
            out.append(ch)
    return "".join(out)


def _list(raw: str, lineno: int) -> tuple[str, ...]:
    if raw == "":
        return ()
    items = tuple(_unesc(piece, lineno) for piece in _split(raw, ",", lineno))
    if any(item == "" for item in items):
        raise AAAKError("empty item in list", lineno)
    return items


def _codes(
    raw: str, allowed: frozenset[str] | None, what: str, lineno: int, sep: str = ","
) -> tuple[str, ...]:
    if raw == "":
        return ()
    items = tuple(raw.split(sep))
    for item in items:
        ok = is_entity_code(item) if allowed is None else item in allowed
        if not ok:
            raise AAAKError(f"invalid {what} {item!r}", lineno)
    return items


def _parse_zettel(zid: int, rest: str, lineno: int) -> Zettel:
    fields = _split(rest, "|", lineno)
    if len(fields) not in (6, 7):
        raise AAAKError(f"zettel needs 6 or 7 '|'-separated fields, got {len(fields)}", lineno)
    quote_raw = fields[2]
    if len(quote_raw) < 2 or not (quote_raw.startswith('"') and quote_raw.endswith('"')):
        raise AAAKError('quote must be wrapped in double quotes: "..."', lineno)
    weight = _WEIGHT_RE.match(fields[3])
    if weight is None:
        raise AAAKError(f"weight must be W1..W10, got {fields[3]!r}", lineno)
    source: str | None = None
    if len(fields) == 7:
        if not fields[6].startswith("@") or len(fields[6]) < 2:
            raise AAAKError("source must be written @<drawer id>", lineno)
        source = _unesc(fields[6][1:], lineno)
    return Zettel(
        id=zid,
        entities=_codes(fields[0], None, "entity code", lineno),
        topics=_list(fields[1], lineno),
        quote=_unesc(quote_raw[1:-1], lineno),
        weight=int(weight.group(1)),
        emotions=_codes(fields[4], EMOTION_CODES, "emotion code", lineno),
        flags=_codes(fields[5], frozenset(FLAGS), "flag", lineno),
        source=source,
    )


def _parse_entities(rest: str, lineno: int) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    for item in _split(rest, ",", lineno):
        code = item[:3]
        if len(item) < 5 or item[3] != "=" or not is_entity_code(code):
            raise AAAKError(f"entity map items look like ABC=Name, got {item!r}", lineno)
        pairs.append((code, _unesc(item[4:], lineno)))
    return tuple(pairs)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.split("\n"), start=1):
        yield number, line.removesuffix("\r")


class _Parser:
    """Line-by-line state of ``parse``."""

    def __init__(self) -> None:
        self.header: Header | None = None
        self.header_line = 0
        self.entity_map: tuple[tuple[str, str], ...] | None = None
        self.zettels: list[Zettel] = []
        self.zettel_ids: set[int] = set()
        self.tunnels: list[tuple[int, Tunnel]] = []
        self.arc: tuple[str, ...] | None = None

    def line(self, lineno: int, line: str) -> None:
        if self.header is None:
            if not line.startswith("H:"):
                raise AAAKError("expected the header line 'H:wing|room|date|title'", lineno)
            fields = _split(line[2:], "|", lineno)
            if len(fields) != 4:
                raise AAAKError(f"header needs 4 '|'-separated fields, got {len(fields)}", lineno)
            wing, room, date, title = (_unesc(f, lineno) for f in fields)
            self.header = Header(wing, room, date, title)
            self.header_line = lineno
        elif line.startswith("H:"):
            raise AAAKError("second header line", lineno)
        elif line.startswith("E:"):
            if self.entity_map is not None:
                raise AAAKError("second entity map line", lineno)
            self.entity_map = _parse_entities(line[2:], lineno)
            Header(entity_map=self.entity_map)  # check codes are unique, here where the line is known
        elif line.startswith("T:"):
            fields = _split(line[2:], "|", lineno)
            ends = _TUNNEL_ENDS_RE.match(fields[0])
            if len(fields) != 2 or ends is None:
                raise AAAKError("tunnel lines look like T:Z1<->Z2|label", lineno)
            tunnel = Tunnel(int(ends.group(1)), int(ends.group(2)), _unesc(fields[1], lineno))
            self.tunnels.append((lineno, tunnel))
        elif line.startswith("ARC:"):
            if self.arc is not None:
                raise AAAKError("second ARC line", lineno)
            self.arc = _codes(line[4:], EMOTION_CODES, "emotion code", lineno, sep="->")
        elif (head := _ZETTEL_HEAD_RE.match(line)) is not None:
            zid = int(head.group(1))
            if zid in self.zettel_ids:
                raise AAAKError(f"duplicate zettel id Z{zid}", lineno)
            self.zettels.append(_parse_zettel(zid, line[head.end() :], lineno))
            self.zettel_ids.add(zid)
        else:
            raise AAAKError(f"unknown line kind: {line[:20]!r}", lineno)

    def finish(self, last_line: int) -> Document:
        if self.header is None:
            raise AAAKError("missing header line", last_line)
        for lineno, tunnel in self.tunnels:
            for end in (tunnel.a, tunnel.b):
                if end not in self.zettel_ids:
                    raise AAAKError(f"tunnel refers to missing zettel Z{end}", lineno)
        h = self.header
        try:
            header = Header(h.wing, h.room, h.date, h.title, self.entity_map or ())
        except AAAKError as exc:
            raise AAAKError(exc.reason, self.header_line) from None
        return Document(header, tuple(self.zettels), tuple(t for _, t in self.tunnels), self.arc or ())


def parse(text: str) -> Document:
    """Read an AAAK document. Raises ``AAAKError`` (a ``ValueError``) with the line number on bad input.

    Lines are separated by ``\\n`` (a trailing ``\\r`` is dropped, so CRLF text reads too) and blank lines
    are ignored. The header line comes first; the other line kinds may come in any order, with at most
    one ``E:`` and one ``ARC:`` line.
    """
    parser = _Parser()
    last = 1
    for lineno, line in _lines(text):
        last = lineno
        if not line.strip():
            continue
        try:
            parser.line(lineno, line)
        except AAAKError as exc:
            if exc.line is None:  # raised by a dataclass check, which does not know the line
                raise AAAKError(exc.reason, lineno) from None
            raise
    return parser.finish(last)


# --------------------------------------------------------------------------------------------------------
# Detection helpers
# --------------------------------------------------------------------------------------------------------


def _norm_quotes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'")


def detect_emotions(text: str, *, limit: int = 3) -> tuple[str, ...]:
    """Emotion codes triggered in ``text``, in order of first occurrence (at most ``limit``)."""
    text = _norm_quotes(text)
    found: list[tuple[int, int, str]] = []
    for order, (code, pattern) in enumerate(_EMOTION_TRIGGER_RE.items()):
        m = pattern.search(text)
        if m is not None:
            found.append((m.start(), order, code))
    found.sort()
    return tuple(code for _, _, code in found[:limit])


def detect_flags(text: str) -> tuple[str, ...]:
    """Importance flags whose markers occur in ``text``, in ``FLAGS`` order."""
    text = _norm_quotes(text)
    out: list[str] = []
    for flag in FLAGS:
        hit = _FLAG_RE[flag].search(text) is not None
        if flag == "TECHNICAL" and not hit:
            hit = _CODEISH_RE.search(text) is not None
        if hit:
            out.append(flag)
    return tuple(out)


def _ascii_letters(name: str) -> str:
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(ch for ch in decomposed.upper() if "A" <= ch <= "Z")


def entity_code(name: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A 3-character uppercase code for ``name`` that is not in ``taken``.

    First choice: the first three letters (Alice -> ALI). On a clash: the first letter with two later
    letters in order (ALC, ALE, ...), then the first two letters and a digit, then the first letter and two
    digits. Accents are folded (Zoë -> ZOE); names with fewer than three letters are padded with X.
    """
    letters = _ascii_letters(name) or "X"
    letters = letters.ljust(3, "X")
    candidates: Iterator[str] = itertools.chain(
        (letters[:3],),
        (letters[0] + a + b for a, b in itertools.combinations(letters[1:], 2)),
        (letters[:2] + str(d) for d in range(2, 10)),
        (f"{letters[0]}{n:02d}" for n in range(100)),
        (f"{a}{n:02d}" for a in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" for n in range(100)),
    )
    for cand in candidates:
        if cand not in taken:
            return cand
    raise AAAKError("no free entity code left")


# --------------------------------------------------------------------------------------------------------
# Compression (lossy, deterministic)
# --------------------------------------------------------------------------------------------------------

QUOTE_MAX = 120
TOPICS_PER_ZETTEL = 3
EMOTIONS_PER_ZETTEL = 3
SENTENCES_PER_ZETTEL = 5

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
            for index, m in enumerate(_NAME_TOKEN_RE.finditer(_norm_quotes(sentence))):
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
    lowered = _APOS_SUFFIX_RE.sub("", _norm_quotes(text).lower())
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
