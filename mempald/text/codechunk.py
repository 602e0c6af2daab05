"""Chunking for "projects" mode: files of code and notes become overlapping pieces (pure: stdlib only).

A chunk is about ``size`` characters, cut on a paragraph (blank line) when one falls in the second half
of the window, else on a line boundary. Consecutive chunks share about ``overlap`` characters, taken as
whole lines from the end of the previous chunk, or as the tail of its last line when that line alone is
longer than ``overlap``. A single line longer than ``size - overlap`` (minified code, a data blob) is
hard-split, preferring whitespace in the second half of the window. Chunks shorter than ``min_chars`` once stripped are
dropped. Line numbers are 1-based and count ``\\n`` only, as editors do.

The conversation path does not use this: exchanges are drawers, split only to the model's token budget
(``mempald.text.chunking``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(r"[^\n]*\n|[^\n]+")


@dataclass(frozen=True, slots=True)
class Chunk:
    index: int  # position among the kept chunks of the file, from 0
    text: str
    start_line: int  # first line with content, 1-based
    end_line: int  # last line with content, 1-based, inclusive


@dataclass(frozen=True, slots=True)
class _Seg:
    text: str  # with its "\n" when it ends a line
    line: int
    blank: bool


def _hard_split(line: str, size: int) -> list[str]:
    """Pieces of at most ``size`` characters; the line's own newline rides on the last piece (so that one
    may be ``size + 1``: never a piece that is only a newline)."""
    newline = "\n" if line.endswith("\n") else ""
    line = line[: len(line) - len(newline)]
    pieces: list[str] = []
    pos = 0
    while len(line) - pos > size:
        window = line[pos : pos + size]
        cut = max(window.rfind(" "), window.rfind("\t"))
        step = cut + 1 if cut >= size // 2 else size
        pieces.append(line[pos : pos + step])
        pos += step
    pieces.append(line[pos:] + newline)
    return pieces


def _segments(text: str, size: int) -> list[_Seg]:
    segs: list[_Seg] = []
    for lineno, m in enumerate(_LINE.finditer(text), start=1):
        line = m.group(0)
        blank = not line.strip()
        if len(line.rstrip("\n")) <= size:
            segs.append(_Seg(line, lineno, blank))
        else:
            # A piece is blank on its own merits: the tail of a long line may be only whitespace ("\r").
            segs.extend(_Seg(piece, lineno, not piece.strip()) for piece in _hard_split(line, size))
    return segs


def _overlap(body: list[_Seg], overlap: int) -> list[_Seg]:
    """The tail of ``body`` to repeat at the start of the next chunk."""
    if overlap <= 0 or not body:
        return []
    carry: list[_Seg] = []
    total = 0
    for seg in reversed(body):
        if total + len(seg.text) > overlap:
            break
        carry.insert(0, seg)
        total += len(seg.text)
    if not carry:
        last = body[-1]
        tail = last.text[-overlap:]
        space = tail.find(" ")
        if 0 <= space < len(tail) // 2:
            tail = tail[space + 1 :]
        carry = [_Seg(tail, last.line, not tail.strip())]
    while carry and carry[0].blank:
        carry.pop(0)
    return carry


def _emit(body: list[_Seg], min_chars: int, out: list[Chunk]) -> None:
    content = [s for s in body if not s.blank]
    if not content:
        return
    lead = 0
    for seg in body:  # drop leading blank lines, keep the first content line's indentation
        if not seg.blank:
            break
        lead += len(seg.text)
    text = "".join(s.text for s in body)[lead:].rstrip()
    if len(text.strip()) < min_chars:
        return
    out.append(Chunk(len(out), text, content[0].line, content[-1].line))


def chunk_text(text: str, size: int = 800, overlap: int = 100, min_chars: int = 50) -> list[Chunk]:
    """``text`` cut into chunks of about ``size`` characters with about ``overlap`` characters shared
    between neighbours; chunks under ``min_chars`` (stripped) are dropped."""
    if size < 1:
        raise ValueError(f"size must be positive, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"overlap must be in [0, size), got {overlap} with size {size}")
    # Long lines are cut to leave room for the overlap, so the pieces of one long line still overlap.
    segs = _segments(text, size - overlap)
    out: list[Chunk] = []
    carry: list[_Seg] = []
    start, n = 0, len(segs)
    while start < n:
        # The overlap must leave room for the next segment: trim it from the front (whole lines first).
        while carry and (excess := sum(len(s.text) for s in carry) + len(segs[start].text) - size) > 0:
            first = carry[0]
            if len(first.text) > excess and first.text[excess:].strip():
                carry[0] = _Seg(first.text[excess:], first.line, first.blank)
            else:
                carry.pop(0)
        total = sum(len(s.text) for s in carry)
        j = start
        while j < n and total + len(segs[j].text) <= size:
            total += len(segs[j].text)
            j += 1
        if j < n:
            # Prefer ending on a paragraph break in the second half of the window.
            acc = sum(len(s.text) for s in carry)
            best = 0
            for k in range(start, j):
                acc += len(segs[k].text)
                if segs[k].blank and acc >= size // 2 and k + 1 < j:
                    best = k + 1
            if best:
                j = best
        body = carry + segs[start:j]
        _emit(body, min_chars, out)
        if j >= n:
            break
        carry = _overlap(segs[start:j], overlap)
        start = j
    return out


# Control bytes that do not occur in text (everything below 0x20 except \t \n \v \f \r and ESC, plus DEL).
_TEXT_CONTROLS = frozenset(b"\t\n\x0b\x0c\r\x1b\x08")
_BINARY_RATIO = 0.30
_CONTROL_RATIO = 0.10


def is_probably_binary(head: bytes) -> bool:
    """Is a file that starts with ``head`` (its first few KiB) binary?

    A NUL byte says yes (UTF-16 text counts as binary here: it is not read anyway). Otherwise valid UTF-8
    (a multi-byte character cut at the end of ``head`` is allowed) is text unless over 10% of it is control
    characters; anything else is binary when over 30% of its bytes are controls or non-ASCII.
    """
    if not head:
        return False
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if (b < 0x20 and b not in _TEXT_CONTROLS) or b == 0x7F)
    try:
        head.decode("utf-8")
        utf8 = True
    except UnicodeDecodeError as exc:
        utf8 = exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    if utf8:
        return controls / len(head) > _CONTROL_RATIO
    high = sum(1 for b in head if b >= 0x80)
    return (controls + high) / len(head) > _BINARY_RATIO
