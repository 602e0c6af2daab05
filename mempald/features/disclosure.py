"""Progressive disclosure: a compact index of search hits, whole drawers by id, and a drawer's place in its
session; every answer says how many (LLM) tokens it holds.

Agents pay for every token a tool returns, so the pattern is index first (``search(format="index")``: one line a
hit, at most ``INDEX_TOKENS`` tokens, carrying the full drawer's token count), then ``get`` for the drawers
worth reading, then ``timeline`` for what came before and after. ``tokens`` in an answer counts the text it
carries for reading (hit texts, index lines, drawer texts, timeline exchanges and outline), in the unit an agent
pays: estimated LLM tokens (``mempal.tokens``), not the embedding model's word pieces (another unit).
Index searches record in the ledger the tokens they held and what the full hits would have cost; ``get`` records
what was fetched after.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from mempal import tokens as llm
from mempal.methods.drawer import RECORD, having
from mempald.embed.embedder import Embedder
from mempald.errors import InvalidInput, NotFound
from mempald.features.token_ledger import TokenLedger
from mempald.features.viewer import SessionBrowser, drawer_record
from mempald.store.base import Filters
from mempald.store.gateway import StoreGateway

INDEX_TOKENS = 60  # tokens of one index line at most
TITLE_CHARS = 120
MAX_GET = 50
ID_ZERO = "00000000-0000-0000-0000-000000000000"  # a drawer id's shape, its lowest value
PREFIX_CANDIDATES = 10  # drawers an ambiguous id start lists
NEIGHBOUR_TOKENS = 40  # what a timeline keeps of each neighbour at least, when the centre is long
DRAWER_FIELDS = ("drawer_id", *having(RECORD))  # what ``get`` returns of a drawer (``mempal.methods.drawer``)


def title_of(payload: Mapping[str, Any]) -> str:
    """One line for a drawer: the first line of the user's prompt (quoted with '> '), else of the text; for a
    drawer of tool calls only, the session's title, else what the tools did (``Edit src/app.py; Bash ...``)."""
    lines = [ln.strip() for ln in str(payload.get("text") or "").splitlines()]
    quoted = [ln[1:].strip() for ln in lines if ln.startswith(">")]
    for candidate in (*quoted, *lines):
        line = " ".join(candidate.split())
        if line and not line.startswith(("[tool:", "-> ")):
            return line[:TITLE_CHARS]
    title = " ".join(str(payload.get("title") or "").split())
    if title:
        return title[:TITLE_CHARS]
    tools = [" ".join(ln[len("[tool:"):].replace("]", "", 1).split()) for ln in lines if ln.startswith("[tool:")]
    return "; ".join(t for t in tools if t)[:TITLE_CHARS] or "(no text)"


def date_of(payload: Mapping[str, Any]) -> str:
    stamp = str(payload.get("timestamp") or "")
    if len(stamp) >= 10:
        return stamp[:10]
    ts = payload.get("ts")
    if isinstance(ts, (int, float)) and ts > 0:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d")
    return "undated"


def cut_tokens(_embedder: Embedder | None, text: str, tokens: int) -> str:
    """``text`` cut to at most ``tokens`` (estimated LLM) tokens, the ellipsis that marks a cut included."""
    if tokens <= 0:
        return ""
    if llm.estimate(text) <= tokens:
        return text
    room = tokens - 1
    while room > 0:
        cut = llm.fit(text, room).rstrip() + "…"
        if llm.estimate(cut) <= tokens:
            return cut
        room -= 1
    return ""


def index_line(embedder: Embedder, hit: Mapping[str, Any], full_tokens: int) -> tuple[str, str, int]:
    """(line, title, its tokens): ``id | date | wing/room | relevance | N tok | title``, at most INDEX_TOKENS."""
    rel = hit.get("relevance")  # the calibrated relevance (0..1) where the search gave one, else the score
    shown = float(rel if isinstance(rel, (int, float)) else hit.get("score") or 0)
    head = (f"{hit.get('drawer_id')} | {date_of(hit)} | {hit.get('wing', '?')}/{hit.get('room', '?')} | "
            f"{shown:.2f} | {full_tokens} tok | ")
    title = title_of(hit)
    room = INDEX_TOKENS - llm.estimate(head)
    cut = cut_tokens(embedder, title, room)
    line = head + cut
    tokens = llm.estimate(line)
    while tokens > INDEX_TOKENS and cut:
        room -= tokens - INDEX_TOKENS
        cut = cut_tokens(embedder, title, room)
        line = head + cut
        tokens = llm.estimate(line)
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
        counts: list[int] = await self._run(lambda: [llm.estimate(t) for t in texts])
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
                            or 0), 3), "relevance": hit.get("relevance"), "tokens": n, "line": line,
                            "line_tokens": tokens})
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

    async def resolve(self, drawer_id: str) -> str:
        """The drawer id that ``drawer_id`` starts (the 8 characters ``wake-up`` and ``recall`` print, or any
        unique start): the store lists points in id order, so the few from the prefix padded with zeros show
        every id it starts. A full id, or a start no drawer has, comes back as it is (then reported missing);
        a start several drawers have is refused with the candidates."""
        if len(drawer_id) >= len(ID_ZERO):
            return drawer_id
        start = drawer_id + ID_ZERO[len(drawer_id):]
        page, _ = await self.store.scroll(Filters(include_deleted=True), PREFIX_CANDIDATES + 1, start)
        found = [pt.id for pt in page if pt.id.startswith(drawer_id)]
        if len(found) > 1:
            shown = ", ".join(found[:PREFIX_CANDIDATES]) + (", ..." if len(found) > PREFIX_CANDIDATES else "")
            raise InvalidInput(f"drawer id {drawer_id!r} is ambiguous: it is the start of {shown}; give more of it")
        return found[0] if found else drawer_id

    async def get(self, ids: Sequence[str], max_tokens: int) -> dict[str, Any]:
        wanted = list(dict.fromkeys([await self.resolve(i) for i in ids]))
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
        drawer_id = await self.resolve(drawer_id)
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
            left = max_tokens - llm.estimate(centre)
            each = left // len(others) if others else 0
            rows = []
            for p in near:
                text = centre if p == pos else cut_tokens(self.embedder, texts[p], each)
                first = exchanges[p][0]
                rows.append({"position": p, "drawer_id": first["drawer_id"], "timestamp": first.get("timestamp", ""),
                             "title": title_of(first), "current": p == pos, "text": text,
                             "drawer_ids": [d["drawer_id"] for d in exchanges[p]],
                             "tokens": llm.estimate(text)})
            order = sorted(exchanges)
            start = max(0, order.index(pos) - half)
            lines = []
            for p in order[start:start + outline]:
                first = exchanges[p][0]
                lines.append({"position": p, "drawer_id": first["drawer_id"], "date": date_of(first),
                              "title": title_of(first), "current": p == pos})
            outline_tokens = sum(llm.estimate(f"{o['position']} {o['date']} {o['title']}") for o in lines)
            return rows, lines, outline_tokens

        rows, lines, outline_tokens = await self._run(fit)
        return {
            "drawer_id": drawer_id, "session_id": window["session_id"], "source_path": anchor.get("source_path", ""),
            "wing": anchor.get("wing", ""), "session_title": anchor.get("title", ""), "position": pos,
            "exchanges": rows, "outline": lines, "session_drawers": window["total"],
            "earlier": window["earlier"], "later": window["later"],
            "tokens": sum(r["tokens"] for r in rows) + outline_tokens,
        }
