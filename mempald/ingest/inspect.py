"""What reading a file would do, without storing anything (blocking; the daemon runs it in a worker thread).

``inspect_unit`` reads a unit exactly as the ingest does (the same format registry, context, parse and drawer
building, redaction included) and reports: the line accounting (every line or record stored in which
exchange, folded into one, or skipped with its reason; consecutive lines with the same fate in one row), the
exchanges it would store, and how many drawers. ``mempal inspect FILE`` prints it; ``mempal mine --dry-run``
sums it over the files it would read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mempald.ingest.drawers import BuildStats, SourceInfo, build_drawers, clean_text
from mempald.ingest.live_copies import LiveCopies
from mempald.ingest.projects import project_exchanges
from mempald.ingest.reading import UNKNOWN, parse_document
from mempald.ingest.units import folder_wing, format_for, gather, prepare
from mempald.normalize.format import Input, Parsed
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange
from mempald.sources.reader import open_regular, read_capped, read_lines
from mempald.sources.roots import Source

PROMPT_CHARS = 300  # of each exchange's prompt shown


@dataclass(frozen=True, slots=True)
class Reading:
    """How drawers would be built: the settings the ingest would use."""

    count_tokens: Callable[[str], int]
    max_tokens: int
    machine: str
    user: str
    redact: bool = True
    extract: bool = True
    max_line: int = 16 * 1024 * 1024
    room_keywords: dict[str, list[str]] | None = None
    max_drawers: int = 0  # ingest.max_drawers_per_exchange (0: no cap)
    max_file: int = 512 * 1024 * 1024  # ingest.max_file_bytes: a document is read whole
    live: LiveCopies | None = None  # copies of sessions read from their agents' own files: skipped (as ingested)


def _parse(path: Path, source: Source, max_line: int, max_file: int,
           live: LiveCopies | None = None) -> tuple[str, Parsed | None, dict[int, int], int]:
    """(format name, parse, line numbers by offset, long lines skipped) of a unit."""
    unit = source.unit_of(path)
    found = unit.fmt if unit is not None else format_for(path, source.fmt)
    if found is None:
        return UNKNOWN, None, {}, 0
    if unit is not None or found.unit == "database":
        where = unit.path if unit is not None else path
        ctx = prepare(where, found, CursorContext(format=found.name))
        return found.name, found.parse(gather(where, found, ctx)), {}, 0
    ctx = prepare(path, found, CursorContext(format=found.name))
    if found.change == "appended":
        size = path.stat().st_size
        rr = read_lines(path, 0, None, None, budget=size + 1, max_line=max_line)
        numbers = _line_numbers(path)
        return found.name, found.parse(Input(name=str(path), context=ctx, lines=rr.lines)), numbers, rr.skipped_long
    parsed = parse_document(found, read_capped(path, max_file), str(path), ctx)
    if found.mirrors and live is not None:
        parsed = live.drop(parsed, fresh=True)  # (asked by a person: the folders as they are now)
    return found.name, parsed, {}, 0


def _line_numbers(path: Path) -> dict[int, int]:
    out: dict[int, int] = {}
    off = 0
    with open_regular(path) as fh:
        for n, raw in enumerate(fh, 1):
            out[off] = n
            off += len(raw)
    return out


def _rows(ledger: Ledger, numbers: dict[int, int], positions: dict[str, int]) -> list[dict[str, Any]]:
    """The ledger as rows; consecutive lines with the same outcome, exchange and reason make one row."""
    rows: list[dict[str, Any]] = []
    for a in sorted(ledger.entries, key=lambda a: _order(a.ref, numbers)):
        line = numbers.get(a.ref) if isinstance(a.ref, int) else (
            int(a.ref[5:]) if isinstance(a.ref, str) and a.ref[5:].isdigit() and a.ref.startswith("line ") else None)
        where = positions.get(a.exchange)
        last = rows[-1] if rows else None
        if (line is not None and last is not None and last["to"] is not None and last["to"] + 1 == line and
                (last["outcome"], last["exchange"], last["what"]) == (a.outcome, where, a.what)):
            last["to"] = line
            last["records"] += 1
            continue
        ref = None if line is not None else clean_text(str(a.ref))
        rows.append({"from": line, "to": line, "ref": ref, "records": 1, "outcome": a.outcome, "exchange": where,
                     "what": a.what})
    return rows


def _order(ref: int | str, numbers: dict[int, int]) -> tuple[int, str]:
    if isinstance(ref, int):
        return numbers.get(ref, ref), ""
    if ref.startswith("line ") and ref[5:].split("#", 1)[0].isdigit():
        return int(ref[5:].split("#", 1)[0]), ref
    return 1 << 62, ref


def _exchange(e: Exchange, wing: str, drawers: int, capped_chars: int) -> dict[str, Any]:
    c = clean_text
    return {"position": e.position, "key": c(e.key), "session": c(e.session_id), "kind": e.kind,
            "agent": e.agent or "", "wing": wing,
            "prompt": c(e.user[:PROMPT_CHARS]), "prompt_chars": len(e.user), "answer_chars": len(e.assistant),
            "tools": len(e.tools), "files": [c(f) for f in e.files], "parent": c(e.parent),
            "title": c(e.title or ""), "timestamp": c(e.timestamp or ""), "drawers": drawers,
            # cut to ingest.max_drawers_per_exchange: its drawers hold the start, the file the whole text
            "capped": capped_chars > 0, "text_chars": capped_chars}


def inspect_unit(path: Path, source: Source, how: Reading, *, rows: bool = True) -> dict[str, Any]:
    """The accounting and exchanges of one unit (a file, or the Slack export it is in), nothing stored."""
    out: dict[str, Any] = {"path": str(path), "format": "", "records": 0, "accounted": {}, "exchanges": [],
                           "prompts": 0, "answers": 0, "drawers": 0, "capped": 0, "redactions": {}, "rows": []}
    if source.mode == "projects":
        chunks, skipped = project_exchanges(path, source.root, path.stat().st_size)
        parsed: Parsed | None = Parsed(chunks, Ledger(), CursorContext(format="project"))
        numbers: dict[int, int] = {}
        fmt_name, long_lines = "project", 0
        out["accounted"] = {f"skipped: {skipped}": 1} if skipped else {f"chunked into {len(chunks)} drawers": 1}
    else:
        fmt_name, parsed, numbers, long_lines = _parse(path, source, how.max_line, how.max_file, how.live)
    out["format"] = fmt_name
    if parsed is None:
        out["accounted"] = {f"skipped: {UNKNOWN}": 1}
        return out
    if source.mode != "projects":
        out["accounted"] = parsed.ledger.counts()
        out["records"] = len(parsed.ledger.entries) + long_lines
    if long_lines:
        out["accounted"]["skipped: line too long"] = long_lines
    info = SourceInfo(kind=fmt_name, path=str(path), source_key=source.key, machine=how.machine, user=how.user,
                      wing=source.wing, redact=how.redact, extract=how.extract, room_keywords=how.room_keywords,
                      default_wing=folder_wing(path, source.root), max_drawers=how.max_drawers)
    if source.mode == "projects":
        info = replace(info, wing=source.wing or source.root.name)
    stats = BuildStats()
    drawers = build_drawers(parsed.exchanges, info, how.count_tokens, how.max_tokens, stats)
    per: dict[str, int] = {}
    wings: dict[str, str] = {}
    capped: dict[str, int] = {}  # exchange key -> its length in characters, for those cut to the cap
    for d in drawers:
        per[d.payload["exchange_key"]] = per.get(d.payload["exchange_key"], 0) + 1
        wings.setdefault(d.payload["exchange_key"], d.payload["wing"])
        if d.payload.get("capped"):
            capped[d.payload["exchange_key"]] = int(d.payload["text_chars"])
    out["drawers"] = len(drawers)
    out["capped"] = len(capped)
    out["redactions"] = dict(stats.redactions)
    out["exchanges"] = [_exchange(e, wings.get(e.key, ""), per.get(e.key, 0), capped.get(e.key, 0))
                        for e in parsed.exchanges]
    out["prompts"] = sum(1 for e in parsed.exchanges if e.kind == "exchange" and e.user)
    out["answers"] = sum(1 for e in parsed.exchanges if e.assistant.strip())
    if rows and source.mode != "projects":
        out["rows"] = _rows(parsed.ledger, numbers, {e.key: e.position for e in parsed.exchanges})
    return out
