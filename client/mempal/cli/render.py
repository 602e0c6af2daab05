"""Human-readable output for the CLI (plain text; no dependencies)."""

from __future__ import annotations

import shutil
import textwrap
import time
from typing import Any


def reading_line(r: dict[str, Any]) -> str:
    """How far a database read batch after batch (an editor's store being backfilled) has come."""
    name = "/".join(str(r.get("path") or "").replace("\\", "/").split("/")[-2:])  # globalStorage/state.vscdb
    took = max(0.0, time.time() - float(r.get("started") or time.time()))
    return (f"reading {name}: {float(r.get('percent') or 0):.0f} % of its rows ({r.get('done')} of {r.get('of')}), "
            f"{r.get('exchanges')} exchanges stored, for {int(took)} s")


def _width() -> int:
    return max(60, min(shutil.get_terminal_size((100, 20)).columns, 120))


def citation(hit: dict[str, Any]) -> str:
    where = hit.get("source_path") or "?"
    bits = [f"{hit.get('wing', '?')}/{hit.get('room', '?')}"]
    if hit.get("timestamp"):
        bits.append(str(hit["timestamp"])[:19].replace("T", " "))
    if hit.get("session_id"):
        bits.append(f"session {str(hit['session_id'])[:12]}")
    if hit.get("machine"):
        bits.append(f"on {hit['machine']}")  # (several machines: a shared store or a sync folder)
    pos = hit.get("position")
    loc = f"{where}" + (f" #{pos}" if pos not in (None, "") else "")
    return f"{' · '.join(bits)}\n    from {loc}  [drawer {hit.get('drawer_id', '?')}]"


WEAK = 0.3  # calibrated relevance under which a hit is marked weak


def relevance(hit: dict[str, Any]) -> str:
    """The hit's calibrated relevance (an estimated probability that it bears on the query, comparable across
    queries), not the fusion score that only orders one query's hits."""
    rel = hit.get("relevance")
    if not isinstance(rel, (int, float)):
        return f"score {float(hit.get('score') or 0):.3f}"
    return f"relevance {rel:.2f}" + (" (weak)" if rel < WEAK else "")


def search_results(result: dict[str, Any], max_chars: int = 600) -> str:
    hits = result.get("hits", [])
    if not hits:
        return f"No memories match {result.get('query', '')!r}." + (f" ({result['note']})" if result.get("note")
                                                                    else "")
    width = _width()
    out = []
    for i, hit in enumerate(hits, 1):
        text = str(hit.get("text", "")).strip()
        if len(text) > max_chars:
            text = text[: max_chars - 1].rstrip() + "…"
        body = "\n".join(
            textwrap.fill(line, width=width - 4, initial_indent="    ", subsequent_indent="    ",
                          break_on_hyphens=False, break_long_words=False) if line else ""
            for line in text.splitlines()
        )
        out.append(f"[{i}] {relevance(hit)}  {citation(hit)}\n{body}")
    rels = [h["relevance"] for h in hits if isinstance(h.get("relevance"), (int, float))]
    if rels and max(rels) < WEAK:
        out.append(f"No hit is likely to bear on the query (best relevance {max(rels):.2f}): nothing stored seems to "
                   "be about it.")
    tunnels = result.get("tunnels")
    if tunnels:
        out.append("Related wings: " + "; ".join(f"{room}: {', '.join(w)}" for room, w in tunnels.items()))
    return "\n\n".join(out)


def _count(n: Any) -> str:
    """A figure of the store's; unknown while a server does not answer (the warnings say why)."""
    return "unknown (the store does not answer)" if n is None else str(n)


def status(st: dict[str, Any]) -> str:
    lines = [
        f"mempald {st.get('version')} (pid {st.get('pid')}, up {st.get('uptime_s')}s)"
        + ("" if st.get("ready") else " - starting"),
        f"  model: {st.get('model')}",
        f"  store: {st.get('store')}" + (f"   machine: {st['machine']}" if st.get("machine") else ""),
        f"  drawers: {_count(st.get('drawers'))}   dense backlog: {st.get('dense_backlog')}"
        f"   file backlog: {st.get('file_backlog')}",
    ]
    index = st.get("index") or {}
    if index.get("state") == "building":
        lines.append("  index: building in a separate process (search stays available)")
    elif index.get("builds"):
        last = index.get("last") or {}
        lines.append(f"  index: built {index['builds']}x, last in {last.get('build_s')} s")
    if index.get("last_error"):
        lines.append(f"  index: last build failed: {index['last_error']}")
    archive = st.get("archive") or {}
    if archive.get("files") or archive.get("paused"):  # the transcript archive (mempal archive status)
        size = archive.get("bytes_on_disk", 0) / 1048576
        lines.append(f"  archive: {archive.get('sessions')} sessions, {size:.1f} MB"
                     + (" - paused" if archive.get("paused") else ""))
    wings = st.get("wings") or {}
    if wings:
        lines.append("  wings: " + ", ".join(f"{k} ({v})" for k, v in sorted(wings.items(), key=lambda t: -t[1])))
    rooms = st.get("rooms") or {}
    if rooms:
        lines.append("  rooms: " + ", ".join(f"{k} ({v})" for k, v in sorted(rooms.items(), key=lambda t: -t[1])))
    agents = st.get("agents") or []
    if agents:
        lines.append("  agents:")
        for a in agents:
            if not a.get("found"):
                continue
            where = "watched" if a.get("watched") else "found, not watched"
            counts = f" - {a.get('files')} files, {a.get('exchanges')} exchanges" if a.get("watched") else ""
            lines.append(f"    {a.get('agent')}: {a.get('path')} ({where}){counts}")
        absent = sorted({str(a.get("agent")) for a in agents if not a.get("found")}
                        - {str(a.get("agent")) for a in agents if a.get("found")})
        if absent:  # (each is watched for: read as soon as its folder appears; status --json lists the paths)
            lines.append("    not found (watched for): " + ", ".join(absent))
    lines.append("  sources:")
    for s in st.get("sources", []):
        state = "" if s.get("exists", True) else "  (missing)"
        backlog = ""
        if s.get("backlog_files") or s.get("backlog_bytes"):
            backlog = f", backlog {s.get('backlog_files')} files / {s.get('backlog_bytes')} bytes"
        extra = ""
        if s.get("redactions"):
            extra += f", {s['redactions']} secrets redacted"
        if s.get("errors"):
            extra += f", {s['errors']} errors (last: {s.get('last_error')})"
        lines.append(f"    {s.get('mode')}: {s.get('path')}{state} - {s.get('files')} files, "
                     f"{s.get('exchanges')} exchanges{backlog}{extra}")
        if s.get("refused"):  # files the last scan would not read (special files, over the size cap, ...)
            lines.append("      not read: " + ", ".join(f"{n} {why}" for why, n in sorted(s["refused"].items()))
                         + "".join(f"\n        {path} ({why})" for path, why in (s.get("refused_paths") or {}).items()))
        for r in s.get("reading") or []:  # a database read batch after batch (an editor's store's backfill)
            lines.append("      " + reading_line(r))
        if s.get("skipped"):  # parts of files read but not stored, by reason
            lines.append("      skipped: " + ", ".join(f"{n} {why}" for why, n in sorted(s["skipped"].items())))
    for w in st.get("warnings", []):
        lines.append(f"  warning: {w}")
    return "\n".join(lines)
