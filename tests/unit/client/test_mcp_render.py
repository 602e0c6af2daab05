"""The MCP answers' token budget (``mempal.mcp_render``) on the largest answers the daemon may give: a search of
200 hits in full, a ``get`` of 50 long drawers, a long timeline; each stays within the budget and names the rest."""

from __future__ import annotations

import uuid
from typing import Any

from mempal import mcp_render
from mempal.tokens import estimate

PARAGRAPH = ("The nightly export failed because the partition writer buffered every row group in memory; we capped "
             "the buffer at 64 MB and now stream row groups to disk (see exporter/partition.py). ")


def hit(i: int) -> dict[str, Any]:
    return {"drawer_id": str(uuid.UUID(int=i + 1)), "wing": "heron", "room": "problems",
            "timestamp": "2026-03-01T10:00:00", "agent": "claude", "score": 0.5, "source_path": f"/t/{i}.jsonl",
            "position": i, "text": f"{i}: " + PARAGRAPH * 12, "tokens": 500}


def test_a_search_of_200_full_hits_fits_the_default_budget_and_lists_the_rest() -> None:
    hits = [hit(i) for i in range(200)]
    text = mcp_render.search({"query": "export", "hits": hits})
    assert estimate(text) <= mcp_render.DEFAULT_BUDGET < 25_000
    shown = text.count("[drawer ")
    assert 0 < shown < 200 and text.startswith(f"200 hits, {shown} shown · about ")
    tail = text.splitlines()[-1]
    assert tail.startswith(f"{200 - shown} more hits not shown (the answer's budget is 20000 tokens)")
    assert hits[shown]["drawer_id"] in tail and hits[shown - 1]["drawer_id"] not in tail


def test_a_lowered_budget_holds_for_every_renderer() -> None:
    hits = [hit(i) for i in range(60)]
    drawers = [{**h, "tokens": 500} for h in hits[:50]]
    answers = {
        "search": {"query": "export", "hits": hits},
        "index": {"query": "export", "format": "index", "tokens": 3000, "tokens_full": 30000,
                  "hits": [{"drawer_id": h["drawer_id"], "line": f"{h['drawer_id']} | 2026-03-01 | heron/problems "
                            f"| 0.50 | 500 tok | {PARAGRAPH[:150]}"} for h in hits]},
        "get": {"drawers": drawers, "missing": ["0000"], "tokens": 25000},
        "timeline": {"session_id": "s", "exchanges": [{"position": i, "drawer_id": h["drawer_id"], "text": h["text"]}
                                                      for i, h in enumerate(hits)], "tokens": 30000},
        "status": {"wings": {f"wing{i}": i for i in range(3000)}},
    }
    for budget in (500, 2000):
        for name, result in answers.items():
            render = mcp_render.RENDERERS.get(name if name != "index" else "search", mcp_render.dump)
            text = render(result, budget)
            assert estimate(text) <= budget, (name, budget)
            assert "not shown" in text or "answer cut at about" in text, name
    got = mcp_render.get(answers["get"], 2000)
    assert got.startswith("2 of 50 drawer(s)") or " of 50 drawer(s) · " in got.splitlines()[0]
    assert "missing (unknown or deleted): 0000" in got


def test_small_answers_are_left_whole() -> None:
    result = {"query": "export", "hits": [hit(1)]}
    assert mcp_render.search(result) == mcp_render.search(result, 100_000)
    assert "not shown" not in mcp_render.search(result) and PARAGRAPH.strip() in mcp_render.search(result)
