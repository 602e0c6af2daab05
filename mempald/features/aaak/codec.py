"""The AAAK text format: ``encode`` writes a ``Document``, ``parse`` reads one back exactly.

Pure: standard library only. The grammar is written down in ``docs/AAAK.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from mempald.features.aaak.model import (
    EMOTION_CODES,
    FLAGS,
    AAAKError,
    Document,
    Header,
    Tunnel,
    Zettel,
    is_entity_code,
)

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

