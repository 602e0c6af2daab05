"""Read a folder of markdown and cut it into chunks at headings and paragraph boundaries.

A chunk never crosses a file or a level-1 heading; the sections below one are packed together while they
fit in ``chunk_size`` tokens, and a chunk that would overflow ends before the heading or paragraph that
overflows it (never right after a heading). A block larger than ``chunk_size`` is cut at line
boundaries, and a single line at sentence boundaries, so every piece keeps its 1-based source line.
Fenced code, tables and front matter are recognised so a ``#`` inside code is never a heading.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mempald.features.pack.result import PackError, Skipped, TokenCounter
from mempald.sources.reader import TOO_LARGE, Refused, read_capped
from mempald.text.chunking import split_tokens

MD_SUFFIXES = (".md", ".markdown")
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})
HARD_BREAK_LEVEL = 1  # headings at this level or above always start a chunk
SIGNATURE = "packed by mempal"  # in the header of every file we write: never pack our own output
# What pack reads, in bounded memory (issue 47: a sparse 1.5 GB huge.md grew the daemon to 23 GB): a markdown
# file over MAX_FILE_BYTES is skipped, and once the files read reach MAX_TOTAL_BYTES the rest are skipped (each
# named in the result with its reason, as a FIFO, a device or a file of /proc is).
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_TOTAL_BYTES = 64 * 1024 * 1024

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^\s{0,3}(#{1,6})(?:\s+(.*?))?\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_THEMATIC = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


@dataclass(frozen=True, slots=True)
class SourceFile:
    index: int  # position in sorted order: the document order across files
    path: str  # relative to the root, POSIX separators
    text: str
    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Block:
    kind: str  # heading | text | list | quote | table | code
    start: int  # 1-based line of its first line
    lines: tuple[str, ...]
    level: int = 0  # heading level

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def end(self) -> int:
        return self.start + len(self.lines) - 1


Heading = tuple[int, str]  # (level, text); level 0 is a front-matter title or the file name


@dataclass(frozen=True, slots=True)
class Chunk:
    file: str
    file_index: int
    start_line: int
    end_line: int
    context: tuple[str, ...]  # headings above the chunk's first block, outermost first
    headings: tuple[Heading, ...]  # (level, text): the context plus every heading inside the chunk
    blocks: tuple[Block, ...]
    tokens: int

    @property
    def text(self) -> str:
        return "\n\n".join(b.text for b in self.blocks)

    @property
    def order(self) -> tuple[int, int]:
        return (self.file_index, self.start_line)


def discover(root: Path) -> list[Path]:
    """Markdown files under ``root``, sorted by relative path; hidden and vendored folders skipped."""
    if not root.is_dir():
        raise PackError(f"{root} is not a directory")
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
        found.extend(Path(dirpath) / f for f in filenames if f.lower().endswith(MD_SUFFIXES) and not f.startswith("."))
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def is_own_output(text: str) -> bool:
    head = text.lstrip("\ufeff").split("\n", 4)[:4]
    return any(line.startswith(">") and SIGNATURE in line.lower() for line in head)


def read_sources(root: Path, max_file_bytes: int = MAX_FILE_BYTES,
                 max_total_bytes: int = MAX_TOTAL_BYTES) -> tuple[list[SourceFile], list[Skipped]]:
    """Every markdown file under ``root`` except packs we wrote ourselves, newlines normalised, and the files
    not read with their reason: the ingest's refusals (``fifo``, ``socket``, ``device``, ``pseudo_file``,
    ``too_large``: ``mempald.sources.reader``, never waited on), ``unreadable`` for any other error."""
    out: list[SourceFile] = []
    skipped: list[Skipped] = []
    total = 0
    for path in discover(root):
        rel = path.relative_to(root).as_posix()
        past = f"the files read before it reach the pack's {max_total_bytes:,} bytes"
        try:
            size = path.stat().st_size  # (a FIFO's is 0: read_capped refuses it without waiting)
            if size <= max_file_bytes and total + size > max_total_bytes:
                raise Refused(path, TOO_LARGE, past)
            raw = read_capped(path, max_file_bytes, limit="the pack's file limit")
            if total + len(raw) > max_total_bytes:  # (it grew since its stat)
                raise Refused(path, TOO_LARGE, past)
        except Refused as exc:
            skipped.append(Skipped(rel, exc.reason, exc.detail))
            continue
        except OSError as exc:
            skipped.append(Skipped(rel, "unreadable", exc.strerror or str(exc)))
            continue
        total += len(raw)
        text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
        del raw
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if is_own_output(text):
            continue
        out.append(SourceFile(len(out), rel, text, tuple(text.split("\n"))))
    return out, skipped


def clean_heading(text: str) -> str:
    text = _LINK.sub(r"\1", text)
    text = re.sub(r"[*_`]+", "", text)
    return re.sub(r"\s+", " ", text).strip().rstrip(":").strip()


def humanize_stem(path: str) -> str:
    stem = Path(path).stem
    stem = re.sub(r"^\d+[-_ ]*", "", stem) or stem
    words = re.sub(r"[-_]+", " ", stem).strip()
    return words[:1].upper() + words[1:] if words else path


def parse_blocks(lines: Sequence[str]) -> tuple[list[Block], str | None]:
    """Blocks of a markdown file and the front matter's ``title`` if it has one."""
    blocks: list[Block] = []
    title: str | None = None
    n = len(lines)
    i = 0
    if n and lines[0].strip() == "---":
        for j in range(1, min(n, 200)):
            if lines[j].strip() in ("---", "..."):
                for fm in lines[1:j]:
                    m = re.match(r"title:\s*(.+)", fm.strip())
                    if m:
                        title = clean_heading(m.group(1).strip().strip("\"'"))
                i = j + 1
                break
    cur: list[str] = []
    cur_kind = ""
    cur_start = 0

    def flush() -> None:
        nonlocal cur, cur_kind
        if cur:
            blocks.append(Block(cur_kind, cur_start, tuple(cur)))
        cur, cur_kind = [], ""

    while i < n:
        line = lines[i]
        stripped = line.strip()
        fence = _FENCE.match(line)
        if fence:
            flush()
            marker = fence.group(1)
            start = i
            i += 1
            while i < n:
                s = lines[i].strip()
                if s.startswith(marker[0] * len(marker)) and set(s) == {marker[0]}:
                    break
                i += 1
            end = min(i, n - 1)
            blocks.append(Block("code", start + 1, tuple(lines[start : end + 1])))
            i = end + 1
            continue
        if not stripped:
            flush()
            i += 1
            continue
        if stripped.startswith("<!--"):
            flush()
            while i < n and "-->" not in lines[i]:
                i += 1
            i += 1
            continue
        atx = _ATX.match(line)
        if atx and (atx.group(2) or "").strip("# "):
            flush()
            blocks.append(Block("heading", i + 1, (line,), level=len(atx.group(1))))
            i += 1
            continue
        if cur and cur_kind == "text" and _SETEXT.match(line):
            level = 1 if "=" in stripped else 2
            blocks.append(Block("heading", cur_start, (*cur, line), level=level))
            cur, cur_kind = [], ""
            i += 1
            continue
        if _THEMATIC.match(line):
            flush()
            i += 1
            continue
        if stripped.startswith("|"):
            kind = "table"
        elif stripped.startswith(">"):
            kind = "quote"
        elif LIST_ITEM.match(line):
            kind = "list"
        else:
            kind = "list" if cur_kind == "list" else "text"  # a list item's continuation line
        if cur and kind != cur_kind:
            flush()
        if not cur:
            cur_kind, cur_start = kind, i + 1
        cur.append(line)
        i += 1
    flush()
    return blocks, title


def heading_text(block: Block) -> str:
    if len(block.lines) > 1:  # setext: the underline is the last line
        return clean_heading(" ".join(s.strip() for s in block.lines[:-1]))
    m = _ATX.match(block.lines[0])
    raw = (m.group(2) or "") if m else block.lines[0]
    return clean_heading(re.sub(r"\s+#+\s*$", "", raw))


def _split_oversized(block: Block, tokens: int, count: TokenCounter, chunk_size: int) -> list[tuple[Block, int]]:
    if tokens <= chunk_size:
        return [(block, tokens)]
    if len(block.lines) > 1:
        out: list[tuple[Block, int]] = []
        for k, line in enumerate(block.lines):
            if line.strip():
                sub = Block(block.kind, block.start + k, (line,), block.level)
                out.extend(_split_oversized(sub, count(line), count, chunk_size))
        return out
    pieces = split_tokens(block.lines[0], chunk_size, count)
    return [(Block(block.kind, block.start, (p,), block.level), count(p)) for p in pieces]


@dataclass(slots=True)
class _Piece:
    block: Block
    tokens: int
    context: tuple[Heading, ...]
    hard: bool  # a chunk must start here


def chunk_file(src: SourceFile, count: TokenCounter, chunk_size: int) -> list[Chunk]:
    blocks, title = parse_blocks(src.lines)
    stack: list[tuple[int, str]] = [(0, title)] if title else []
    pieces: list[_Piece] = []
    for b in blocks:
        context = tuple(stack)
        hard = False
        if b.kind == "heading":
            while stack and stack[-1][0] >= b.level:
                stack.pop()
            context = tuple(stack)
            stack.append((b.level, heading_text(b)))
            hard = b.level <= HARD_BREAK_LEVEL
        for k, (sub, tokens) in enumerate(_split_oversized(b, count(b.text), count, chunk_size)):
            pieces.append(_Piece(sub, tokens, context, hard and k == 0))
    fallback: tuple[Heading, ...] = ((0, humanize_stem(src.path)),)
    chunks: list[Chunk] = []
    cur: list[_Piece] = []
    cur_tokens = 0

    def emit() -> None:
        if not any(p.block.kind != "heading" for p in cur) and chunks:
            return  # an empty section at the end of a file: nothing to say
        first = cur[0]
        headings = list(first.context)
        for p in cur:
            if p.block.kind == "heading":
                headings.append((p.block.level, heading_text(p.block)))
        blocks_t = tuple(p.block for p in cur)
        text = "\n\n".join(b.text for b in blocks_t)
        chunks.append(
            Chunk(
                file=src.path,
                file_index=src.index,
                start_line=first.block.start,
                end_line=cur[-1].block.end,
                context=tuple(h for _, h in first.context or fallback),
                headings=tuple(dict.fromkeys(headings)) or fallback,
                blocks=blocks_t,
                tokens=count(text),
            )
        )

    for idx, p in enumerate(pieces):
        need = p.tokens
        if p.block.kind == "heading" and idx + 1 < len(pieces):
            need += pieces[idx + 1].tokens  # never leave a heading dangling at the end of a chunk
        only_headings = all(q.block.kind == "heading" for q in cur)
        if cur and not only_headings and (p.hard or cur_tokens + need > chunk_size):
            emit()
            cur, cur_tokens = [], 0
        cur.append(p)
        cur_tokens += p.tokens
    if cur:
        emit()
    return chunks


def chunk_sources(sources: Sequence[SourceFile], count: TokenCounter, chunk_size: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    for src in sources:
        chunks.extend(chunk_file(src, count, chunk_size))
    return chunks
