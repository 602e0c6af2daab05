"""Codex Desktop (0.144.x) writes each web search twice, as an ``event_msg``/``web_search_end`` and a
``response_item``/``web_search_call``, sometimes with the same id, sometimes the item with none: each search is
counted once (real-shaped sample in tests/fixtures/fidelity/codex)."""

from __future__ import annotations

from pathlib import Path

from mempald.normalize import codex
from mempald.normalize.format import Input
from mempald.normalize.model import Line

ROLLOUT = next((Path(__file__).resolve().parents[2] / "fixtures" / "fidelity" / "codex").glob("rollout-*.jsonl"))


def _lines(path: Path) -> list[Line]:
    out, off = [], 0
    for raw in path.read_bytes().splitlines(keepends=True):
        out.append(Line(off, raw.rstrip(b"\r\n")))
        off += len(raw)
    return out


def test_each_web_search_is_counted_once() -> None:
    parsed = codex.parse(Input(name=str(ROLLOUT), lines=_lines(ROLLOUT)))
    first, again = parsed.exchanges
    assert first.tools == ("web_search",) * 3  # a search, an opened page, a find in that page
    assert first.assistant == ("[tool: web_search] vite 8 node version requirement\n"
                               "[tool: web_search] https://vite.dev/guide/\n[tool: web_search] https://vite.dev/guide/\n"
                               "Vite 8 needs Node.js 20.19+ or 22.12+.")
    assert again.tools == ("web_search",) * 2  # the same query searched twice in one turn stays two searches
    counts = parsed.ledger.counts()
    assert counts["skipped: duplicate (web search already seen)"] == 4
    assert counts["skipped: duplicate (tool call already seen)"] == 1  # the pair that shares its id
    assert len(parsed.ledger.entries) == len(_lines(ROLLOUT))


def test_a_search_written_once_is_kept(formats_dir: Path) -> None:
    real = formats_dir / "codex" / "real2" / "rollout-2026-03-09T16-29-31-019cd4b8-43b8-78a3-9985-04f6307807de.jsonl"
    ex = codex.parse(Input(name=str(real), lines=_lines(real))).exchanges
    assert sum(e.tools.count("web_search") for e in ex) == 1  # its one web_search_call, no event beside it
