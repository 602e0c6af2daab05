"""Plain text and Markdown: the fallback for anything no other normalizer claims.

- A document with quoted turns (a line starting ``> ``; ``>`` alone is a blank line inside the quote) is read
  as a conversation: the quoted run is the human turn, the unquoted lines after it, up to the next quoted
  run, are the answer. This is exactly the shape ``Exchange.render`` writes, so saved exchanges read back.
  Text before the first quoted run becomes notes.
- Anything else is split into paragraph groups of at most ~800 characters: kind ``note``, user empty.

Never raises, for any bytes (undecodable bytes become U+FFFD). session_id is ``name``, keys are positions
(``turn:N`` / ``note:N``), so a rewritten file overwrites its drawers in place.
"""

from __future__ import annotations

import re
from dataclasses import replace

from mempald.normalize.format import Format, Input, Parsed, Probe
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, strip_injected

SOURCE_KIND = "text"
NOTE_CHARS = 800

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def _is_quote(line: str) -> bool:
    return line.startswith("> ") or line.rstrip() == ">"


def _unquote(line: str) -> str:
    return line[2:] if line.startswith("> ") else ""


def _hard_split(text: str, limit: int) -> list[str]:
    return [text[i : i + limit] for i in range(0, len(text), limit)]


def chunk_paragraphs(text: str, limit: int = NOTE_CHARS) -> list[str]:
    """Paragraphs (blank-line separated) packed into groups of at most ``limit`` characters.

    A paragraph longer than ``limit`` is split at line ends, and a line longer than ``limit`` at ``limit``.
    """
    pieces: list[str] = []
    for raw in re.split(r"\n\s*\n", text):
        para = raw.strip("\n")
        if not para.strip():
            continue
        if len(para) <= limit:
            pieces.append(para)
            continue
        buf = ""
        for line in para.split("\n"):
            for part in _hard_split(line, limit) or [""]:
                if buf and len(buf) + 1 + len(part) > limit:
                    pieces.append(buf)
                    buf = part
                else:
                    buf = f"{buf}\n{part}" if buf else part
        if buf.strip():
            pieces.append(buf)
    groups: list[str] = []
    cur = ""
    for piece in pieces:
        if cur and len(cur) + 2 + len(piece) > limit:
            groups.append(cur)
            cur = piece
        else:
            cur = f"{cur}\n\n{piece}" if cur else piece
    if cur.strip():
        groups.append(cur)
    return groups


def _title(lines: list[str], name: str) -> str | None:
    for line in lines[:50]:
        m = _HEADING.match(line)
        if m:
            return m.group(1)
    return name or None


def parse(inp: Input) -> Parsed:
    """Exchanges (quoted turns) or notes (paragraph groups) of any bytes; every line accounted for (``line N``).
    Never raises."""
    name = inp.name
    text = inp.data.decode("utf-8", errors="replace")
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    text = strip_injected(text)
    lines = text.split("\n")
    title = _title(lines, name)
    out: list[Exchange] = []
    ledger = Ledger()

    def note(body: list[tuple[int, str]]) -> None:
        first = len(out)
        for chunk in chunk_paragraphs("\n".join(ln for _, ln in body)):
            out.append(Exchange(source_kind=SOURCE_KIND, session_id=name, key=f"note:{len(out)}", user="",
                                assistant=chunk, title=title, position=len(out), kind="note"))
        at = first
        for n, ln in body:
            if not ln.strip():
                ledger.skipped(f"line {n}", "blank")
                continue
            probe = ln.strip()[:NOTE_CHARS]
            while at < len(out) - 1 and probe not in out[at].assistant:
                at += 1
            ledger.stored(f"line {n}", out[at].key if at < len(out) else "", "note")

    numbered = list(enumerate(lines, 1))
    if numbered and numbered[-1][1] == "":
        numbered.pop()  # the newline that ends the last line starts no line
    if not any(line.startswith("> ") for line in lines):
        note(numbered)
        return Parsed(out, ledger, replace(inp.context, format=SOURCE_KIND))

    preamble: list[tuple[int, str]] = []
    user: list[tuple[int, str]] | None = None
    answer: list[tuple[int, str]] = []

    def close() -> None:
        if user is None:
            return
        prompt = "\n".join(ln for _, ln in user).strip()
        reply = "\n".join(ln for _, ln in answer).strip()
        if prompt:
            key = f"turn:{len(out)}"
            out.append(Exchange(source_kind=SOURCE_KIND, session_id=name, key=key, user=prompt,
                                assistant=reply, title=title, position=len(out)))
            for n, ln in user + answer:
                if ln.strip() and ln.strip() != ">":
                    ledger.stored(f"line {n}", key, "turn")
                else:
                    ledger.skipped(f"line {n}", "blank")
        else:
            for n, _ in user:
                ledger.skipped(f"line {n}", "blank")
            note(answer)

    in_quote = False
    for n, line in numbered:
        if _is_quote(line):
            if user is None or not in_quote:
                if user is None:
                    note(preamble)
                close()
                user, answer, in_quote = [], [], True
            user.append((n, _unquote(line)))
        else:
            in_quote = False
            (answer if user is not None else preamble).append((n, line))
    if user is None:
        note(preamble)
    close()
    return Parsed(out, ledger, replace(inp.context, format=SOURCE_KIND))


def parse_document(data: bytes, name: str = "") -> list[Exchange]:
    """Exchanges (quoted turns) or notes (paragraph groups) of any bytes (``parse`` with a fresh context)."""
    return parse(Input(name=name, data=data, context=CursorContext(format=SOURCE_KIND))).exchanges


def detect(probe: Probe) -> bool:
    """Any text: the fallback for files no other format claims (JSON files in no known format excepted)."""
    return not probe.text.startswith(("{", "["))


FORMAT = Format(SOURCE_KIND, "document", detect, parse, suffixes=(".md", ".txt", ".markdown"),
                summary="plain text and Markdown notes (quoted '> ' turns read as exchanges)")
