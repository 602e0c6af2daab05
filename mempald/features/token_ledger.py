"""Token accounting: what the hooks injected and what index-first searches saved, per day (for ``status``).

Figures are estimated LLM tokens (``mempal.tokens``: the count every response states), kept as counters in
the state database (source ``tokens``, name ``<YYYY-MM-DD>:<what>``, the daemon's local date), so they survive
restarts. ``what`` is ``injected:<hook event>``, ``index`` (tokens the index answers held), ``saved`` (the full
drawers' tokens minus the index's, per index search) or ``get`` (tokens fetched with ``get`` afterwards: the net
saving is ``saved - get``).
"""

from __future__ import annotations

import time
from typing import Any

from mempal import tokens as llm
from mempald.state.gateway import StateGateway

SOURCE = "tokens"
DAYS_SHOWN = 14
CACHE_S = 1.0


def today() -> str:
    return time.strftime("%Y-%m-%d", time.localtime())


class TokenLedger:
    def __init__(self, state: StateGateway) -> None:
        self.state = state
        self._cache: tuple[float, dict[str, Any]] | None = None  # status asks often: one read a second

    async def add(self, what: str, tokens: int) -> None:
        """Count ``tokens`` for today (``saved`` may be negative: an index of tiny drawers costs more than they)."""
        if tokens > 0 or (what == "saved" and tokens):
            name = f"{today()}:{what}"
            await self.state.bump(SOURCE, name, int(tokens))
            self._cache = None

    async def figures(self, days: int = DAYS_SHOWN) -> dict[str, Any]:
        """``{days: {date: {injected: {event: n, total: n}, index, saved, get}}, totals: {...}}``, newest first."""
        if self._cache is not None and time.monotonic() - self._cache[0] < CACHE_S:
            return self._cache[1]
        counters = (await self.state.counters()).get(SOURCE, {})
        per_day: dict[str, dict[str, Any]] = {}
        totals: dict[str, Any] = {"injected": 0, "index": 0, "saved": 0, "get": 0}
        for name, value in counters.items():
            day, _, what = name.partition(":")
            entry = per_day.setdefault(day, {"injected": {"total": 0}, "index": 0, "saved": 0, "get": 0})
            if what.startswith("injected:"):
                event = what.split(":", 1)[1]
                entry["injected"][event] = entry["injected"].get(event, 0) + value
                entry["injected"]["total"] += value
                totals["injected"] += value
            elif what in ("index", "saved", "get"):
                entry[what] += value
                totals[what] += value
        shown = dict(sorted(per_day.items(), reverse=True)[:days])
        figures = {"today": today(), "days": shown, "totals": totals,
                   "unit": llm.UNIT}
        self._cache = (time.monotonic(), figures)
        return figures
