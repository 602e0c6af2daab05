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

from mempald.normalize.model import Exchange, strip_injected

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


def parse_document(data: bytes, name: str = "") -> list[Exchange]:
    """Exchanges (quoted turns) or notes (paragraph groups) of any bytes. Never raises."""
    text = data.decode("utf-8", errors="replace")
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    text = strip_injected(text)
    lines = text.split("\n")
    title = _title(lines, name)
    out: list[Exchange] = []

    def note(body: str) -> None:
        for chunk in chunk_paragraphs(body):
            out.append(Exchange(source_kind=SOURCE_KIND, session_id=name, key=f"note:{len(out)}", user="",
                                assistant=chunk, title=title, position=len(out), kind="note"))

    if not any(line.startswith("> ") for line in lines):
        note(text)
        return out

    preamble: list[str] = []
    user: list[str] | None = None
    answer: list[str] = []

    def close() -> None:
        if user is None:
            return
        prompt = "\n".join(user).strip()
        reply = "\n".join(answer).strip()
        if prompt:
            out.append(Exchange(source_kind=SOURCE_KIND, session_id=name, key=f"turn:{len(out)}", user=prompt,
                                assistant=reply, title=title, position=len(out)))
        elif reply:
            note(reply)

    in_quote = False
    for line in lines:
        if _is_quote(line):
            if user is None or not in_quote:
                if user is None:
                    note("\n".join(preamble))
                close()
                user, answer, in_quote = [], [], True
            user.append(_unquote(line))
        else:
            in_quote = False
            (answer if user is not None else preamble).append(line)
    if user is None:
        note("\n".join(preamble))
    close()
    return out
