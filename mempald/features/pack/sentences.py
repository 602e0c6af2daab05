"""Sentences of a markdown file with the 1-based lines they come from.

Prose paragraphs, list items and block quotes are read; headings, code and tables are not. Each sentence's
text is copied from its source: a sentence on one line is a substring of that line (list markers and quote
marks aside); one that wraps over lines is its lines' text joined by single spaces.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mempald.features.pack.chunking import LIST_ITEM, Block

_BOUNDARY = re.compile(r"[.!?]+[\"'”’)\]*_]*\s+(?=[\"'“‘(\[*_`]*[A-Z0-9])")
_ABBREV_WORDS = (
    "e.g i.e etc vs mr mrs ms dr prof st no fig approx cf al jr sr inc ltd co dept est min max u.s u.k "
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun"
)
_ABBREV = frozenset(_ABBREV_WORDS.split())
_QUOTE = re.compile(r"^\s*(?:>\s?)+")


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    file: str
    line: int
    end_line: int
    kind: str  # text | list | quote
    order: tuple[int, int, int]  # (file index, line, offset): document order

    @property
    def words(self) -> int:
        return len(self.text.split())


def _units(block: Block) -> list[list[tuple[int, str]]]:
    """The block as units of (line number, stripped text): a paragraph, or one list item each."""
    if block.kind == "list":
        units: list[list[tuple[int, str]]] = []
        for k, line in enumerate(block.lines):
            m = LIST_ITEM.match(line)
            if m:
                units.append([(block.start + k, line[m.end() :].strip())])
            elif units:
                units[-1].append((block.start + k, line.strip()))
        return units
    if block.kind == "quote":
        return [[(block.start + k, _QUOTE.sub("", line).strip()) for k, line in enumerate(block.lines)]]
    return [[(block.start + k, line.strip()) for k, line in enumerate(block.lines)]]


def split_text(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences in ``text``."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        before = text[start : m.start()].split()
        last = before[-1].lower().rstrip(".") if before else ""
        if last in _ABBREV or re.fullmatch(r"[a-z]", last):  # "e.g.", "Dr.", an initial
            continue
        end = m.end() - len(m.group()) + len(m.group().rstrip())
        spans.append((start, end))
        start = m.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


def split_plain(text: str) -> list[str]:
    """Sentences of a plain string (a summary), whitespace-trimmed."""
    return [text[a:b].strip() for a, b in split_text(text) if text[a:b].strip()]


def file_sentences(blocks: Sequence[Block], file: str, file_index: int) -> list[Sentence]:
    out: list[Sentence] = []
    for block in blocks:
        if block.kind not in ("text", "list", "quote"):
            continue
        for unit in _units(block):
            parts = [(n, t) for n, t in unit if t]
            if not parts:
                continue
            offsets: list[int] = []
            pos = 0
            for _, t in parts:
                offsets.append(pos)
                pos += len(t) + 1
            joined = " ".join(t for _, t in parts)
            for a, b in split_text(joined):
                text = joined[a:b].strip()
                if not text:
                    continue
                first = parts[bisect.bisect_right(offsets, a) - 1][0]
                last = parts[bisect.bisect_right(offsets, max(a, b - 1)) - 1][0]
                out.append(Sentence(text, file, first, last, block.kind, (file_index, first, a)))
    return out
