"""Progressive disclosure: a compact index of search hits, whole drawers by id, and a drawer's place in its
session; every answer says how many model tokens it holds.

Agents pay for every token a tool returns, so the pattern is index first (``search(format="index")``: one line a
hit, at most ``INDEX_TOKENS`` model tokens, carrying the full drawer's token count), then ``get`` for the drawers
worth reading, then ``timeline`` for what came before and after. ``tokens`` in an answer counts the text it
carries for reading (hit texts, index lines, drawer texts, timeline exchanges and outline), with the embedding
model's tokenizer. Index searches record in the ledger the tokens they held and what the full hits would have
cost; ``get`` records what was fetched after.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from mempal.methods.drawer import RECORD, having
from mempald.embed.embedder import Embedder
from mempald.errors import InvalidInput, NotFound
from mempald.features.ledger import TokenLedger
from mempald.features.viewer import SessionBrowser, drawer_record
from mempald.store.gateway import StoreGateway

INDEX_TOKENS = 60  # model tokens of one index line at most
TITLE_CHARS = 120
MAX_GET = 50
NEIGHBOUR_TOKENS = 40  # what a timeline keeps of each neighbour at least, when the centre is long
DRAWER_FIELDS = ("drawer_id", *having(RECORD))  # what ``get`` returns of a drawer (``mempal.methods.drawer``)


def title_of(payload: Mapping[str, Any]) -> str:
    """One line for a drawer: the first line of the user's prompt (quoted with '> '), else of the text."""
    lines = [ln.strip() for ln in str(payload.get("text") or "").splitlines()]
    quoted = [ln[1:].strip() for ln in lines if ln.startswith(">")]
    for candidate in (*quoted, *lines):
        line = " ".join(candidate.split())
        if line and not line.startswith(("[tool:", "-> ")):
            return line[:TITLE_CHARS]
    return " ".join(str(payload.get("title") or "").split())[:TITLE_CHARS] or "(no text)"


def date_of(payload: Mapping[str, Any]) -> str:
    stamp = str(payload.get("timestamp") or "")
    if len(stamp) >= 10:
        return stamp[:10]
    ts = payload.get("ts")
    if isinstance(ts, (int, float)) and ts > 0:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d")
    return "undated"


def cut_tokens(embedder: Embedder, text: str, tokens: int) -> str:
    """``text`` cut to at most ``tokens`` model tokens, the ellipsis that marks a cut included."""
    if tokens <= 0:
        return ""
    if embedder.count_tokens(text) <= tokens:
        return text
    room = tokens - 1
    while room > 0:
        cut = embedder.fit_tokens(text, room).rstrip() + "…"
        if embedder.count_tokens(cut) <= tokens:
            return cut
        room -= 1
    return ""


def index_line(embedder: Embedder, hit: Mapping[str, Any], full_tokens: int) -> tuple[str, str, int]:
    """(line, title, its tokens): ``id | date | wing/room | score | N tok | title``, at most INDEX_TOKENS."""
    head = (f"{hit.get('drawer_id')} | {date_of(hit)} | {hit.get('wing', '?')}/{hit.get('room', '?')} | "
            f"{float(hit.get('score') or 0):.2f} | {full_tokens} tok | ")
    title = title_of(hit)
    room = INDEX_TOKENS - embedder.count_tokens(head)
    cut = cut_tokens(embedder, title, room)
    line = head + cut
    tokens = embedder.count_tokens(line)
    while tokens > INDEX_TOKENS and cut:
        room -= tokens - INDEX_TOKENS
        cut = cut_tokens(embedder, title, room)
        line = head + cut
        tokens = embedder.count_tokens(line)
    return line, cut, tokens


class Disclosure:
    def __init__(self, store: StoreGateway, embedder: Embedder, sessions: SessionBrowser,
                 ledger: TokenLedger) -> None:
        self.store = store
        self.embedder = embedder
        self.sessions = sessions
        self.ledger = ledger

    async def _run(self, fn: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args)

    async def count(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        counts: list[int] = await self._run(self.embedder.count_tokens_batch, list(texts))
        return counts

    async def search_answer(self, result: dict[str, Any], fmt: str) -> dict[str, Any]:
        """A search result with token counts (each hit's full text, the answer's); ``index``: compact hits."""
        hits: list[dict[str, Any]] = result.get("hits", [])
        full = await self.count([str(h.get("text") or "") for h in hits])
        if fmt != "index":
            for hit, n in zip(hits, full, strict=True):
                hit["tokens"] = n
            result["tokens"] = sum(full)
            return result

        def build() -> list[dict[str, Any]]:
            out = []
            for hit, n in zip(hits, full, strict=True):
                line, title, tokens = index_line(self.embedder, hit, n)
                out.append({"drawer_id": hit.get("drawer_id"), "title": title, "wing": hit.get("wing"),
                            "room": hit.get("room"), "date": date_of(hit), "score": round(float(hit.get("score")
                            or 0), 3), "tokens": n, "line": line, "line_tokens": tokens})
            return out

        entries: list[dict[str, Any]] = await self._run(build)
        held = sum(e["line_tokens"] for e in entries)
        result["hits"] = entries
        result["format"] = "index"
        result["tokens"] = held
        result["tokens_full"] = sum(full)
        await self.ledger.add("index", held)
        await self.ledger.add("saved", sum(full) - held)
        return result

    async def get(self, ids: Sequence[str], max_tokens: int) -> dict[str, Any]:
        wanted = list(dict.fromkeys(ids))
        if len(wanted) > MAX_GET:
            raise InvalidInput(f"get takes at most {MAX_GET} drawer ids at a time, got {len(wanted)}")
        points = {pt.id: pt for pt in await self.store.retrieve(wanted)}
        live = [points[i] for i in wanted if i in points and points[i].payload.get("status") != "deleted"]
        texts = [str(pt.payload.get("text") or "") for pt in live]
        if max_tokens:
            texts = await self._run(lambda: [cut_tokens(self.embedder, t, max_tokens) for t in texts])
        counts = await self.count(texts)
        drawers = []
        for pt, text, n in zip(live, texts, counts, strict=True):
            record = {k: v for k, v in drawer_record(pt).items() if k in DRAWER_FIELDS}
            drawers.append({**record, "text": text, "tokens": n})
        missing = [i for i in wanted if i not in {pt.id for pt in live}]
        await self.ledger.add("get", sum(counts))
        return {"drawers": drawers, "missing": missing, "tokens": sum(counts)}

    async def timeline(self, drawer_id: str, before: int, after: int, max_tokens: int,
                       outline: int) -> dict[str, Any]:
        half = outline // 2
        window = await self.sessions.session_drawers(drawer_id, None, 0, max(before, half), max(after, half),
                                                     False)
        anchor = window["anchor"]
        if anchor is None:
            raise NotFound(f"no drawer {drawer_id}")
        pos = int(anchor.get("position") or 0)
        exchanges: dict[int, list[dict[str, Any]]] = {}
        for d in window["drawers"]:
            exchanges.setdefault(int(d.get("position") or 0), []).append(d)
        near = [p for p in sorted(exchanges) if pos - before <= p <= pos + after]
        texts = {p: "\n".join(str(d.get("text") or "") for d in sorted(
            exchanges[p], key=lambda d: int(d.get("chunk_index") or 0))) for p in near}

        def fit() -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
            others = [p for p in near if p != pos]
            floor = min(NEIGHBOUR_TOKENS, max_tokens // (2 * len(others))) if others else 0
            centre = cut_tokens(self.embedder, texts.get(pos, ""), max_tokens - floor * len(others))
            left = max_tokens - self.embedder.count_tokens(centre)
            each = left // len(others) if others else 0
            rows = []
            for p in near:
                text = centre if p == pos else cut_tokens(self.embedder, texts[p], each)
                first = exchanges[p][0]
                rows.append({"position": p, "drawer_id": first["drawer_id"], "timestamp": first.get("timestamp", ""),
                             "title": title_of(first), "current": p == pos, "text": text,
                             "drawer_ids": [d["drawer_id"] for d in exchanges[p]],
                             "tokens": self.embedder.count_tokens(text)})
            order = sorted(exchanges)
            start = max(0, order.index(pos) - half)
            lines = []
            for p in order[start:start + outline]:
                first = exchanges[p][0]
                lines.append({"position": p, "drawer_id": first["drawer_id"], "date": date_of(first),
                              "title": title_of(first), "current": p == pos})
            outline_tokens = sum(self.embedder.count_tokens_batch([f"{o['position']} {o['date']} {o['title']}"
                                                                   for o in lines])) if lines else 0
            return rows, lines, outline_tokens

        rows, lines, outline_tokens = await self._run(fit)
        return {
            "drawer_id": drawer_id, "session_id": window["session_id"], "source_path": anchor.get("source_path", ""),
            "wing": anchor.get("wing", ""), "session_title": anchor.get("title", ""), "position": pos,
            "exchanges": rows, "outline": lines, "session_drawers": window["total"],
            "earlier": window["earlier"], "later": window["later"],
            "tokens": sum(r["tokens"] for r in rows) + outline_tokens,
        }
