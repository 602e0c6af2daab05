"""Ranking: dense (MiniLM) and BM25 candidates from one store query, fused and rescored in Python.

Pure apart from its store calls, so it runs wherever the store is: in the store's own process for the
daemon's embedded store (``mempald.store.host``), on the store's worker thread otherwise.

Pipeline (each step and its default chosen by the retrieval benchmark, see ``mempald.search.fusion`` and
``bench/locomo.py``):
1. one batched store query: ``candidates`` dense hits and ``candidates`` BM25 hits under the filters;
   drawers are indexed with the drawer before them in their session (``context``);
2. min-max normalised score fusion with ``dense_weight`` (plain RRF measured worse);
3. temporal cue: drawers stamped inside the window a query's date words name get a soft boost;
4. neighbours: a strong hit lifts the drawers next to it in its session (fetched when not among the
   candidates), so a hit expands to its exchange; the drawer before a hit gets more than the one after
   (a drawer is indexed with the one before it, so a context match points back);
5. session strength: drawers of sessions with several good hits rise;
6. below the first ``spread_after`` hits, each not-yet-shown session's best hit comes first;
7. near-identical hits are de-duplicated (checked until ``limit`` hits are kept).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mempald.search import fusion, temporal
from mempald.store.base import Filters, Hit, RankRequest, Store

HIT_FIELDS = (
    "wing", "room", "memory_type", "source_kind", "source_path", "session_id", "agent", "timestamp",
    "position", "exchange_key", "chunk_index", "importance", "title", "cwd", "git_branch", "machine", "kind",
)
NEIGHBOUR_HITS = 10  # how many top hits fetch their missing neighbours


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """Every option of search; the defaults are the benchmark's choice."""

    dense_weight: float = fusion.DEFAULT_DENSE_WEIGHT
    candidates: int = fusion.DEFAULT_DEPTH
    temporal_boost: float = fusion.DEFAULT_TEMPORAL_BOOST
    neighbour_decay: float = fusion.DEFAULT_NEIGHBOUR_DECAY  # to the drawer before a hit
    neighbour_forward: float = fusion.DEFAULT_NEIGHBOUR_FORWARD  # to the drawer after a hit
    session_weight: float = fusion.DEFAULT_SESSION_WEIGHT
    session_top: int = fusion.DEFAULT_SESSION_TOP
    dedup_threshold: float = fusion.DEFAULT_DEDUP_THRESHOLD
    spread_after: int = fusion.DEFAULT_SPREAD_AFTER  # below this rank, new sessions first (-1: off)


def _cands(hits: list[Hit]) -> list[fusion.Candidate]:
    return [fusion.Candidate(h.id, h.score) for h in hits]


def _session_key(payload: Mapping[str, Any]) -> Hashable:
    return (payload.get("source_kind"), payload.get("session_id"))


def _seq(payload: Mapping[str, Any]) -> int:
    """Order of a drawer in its session: exchange position, then chunk."""
    return int(payload.get("position", 0) or 0) * 1000 + int(payload.get("chunk_index", 0) or 0)


def rank(store: Store, request: RankRequest) -> list[dict[str, Any]]:
    """The whole ranking, blocking: the store's ranker (``Store.rank``), run wherever the store is."""
    opts: SearchOptions = request.options
    query, filters, limit = request.query, request.filters, request.limit
    now = datetime.fromtimestamp(request.now, UTC)
    dense_hits, sparse_hits = store.query(request.dense, request.sparse, filters, request.candidates)
    payloads: dict[str, Mapping[str, Any]] = {h.id: h.payload for h in dense_hits}
    payloads.update({h.id: h.payload for h in sparse_hits})
    raw_dense = {h.id: h.score for h in dense_hits}
    raw_sparse = {h.id: h.score for h in sparse_hits}
    ranked = fusion.fuse(_cands(dense_hits), _cands(sparse_hits), opts.dense_weight)

    window = temporal.temporal_window(query, now)
    if window is not None and opts.temporal_boost > 0:
        stamps = {i: datetime.fromtimestamp(float(p.get("ts") or 0), UTC) for i, p in payloads.items() if p.get("ts")}
        ranked = fusion.temporal_boost(ranked, stamps, window, opts.temporal_boost)

    if (opts.neighbour_decay > 0 or opts.neighbour_forward > 0) and ranked:
        _add_neighbours(store, ranked[:NEIGHBOUR_HITS], payloads, filters)
        positions = {i: (_session_key(p), _seq(p)) for i, p in payloads.items()}
        ranked = fusion.neighbour_boost(
            ranked, _adjacent(positions), opts.neighbour_decay, forward_decay=opts.neighbour_forward
        )
    positions = {i: (_session_key(p), _seq(p)) for i, p in payloads.items()}
    if opts.session_weight > 0:
        ranked = fusion.session_boost(ranked, positions, opts.session_weight, opts.session_top)
    if opts.spread_after >= 0:
        ranked = fusion.spread_sessions(ranked, positions, opts.spread_after)
    if opts.dedup_threshold < 1:
        head = ranked[: limit * 5]
        texts = {i: str(payloads[i].get("text", "")) for i, _ in head}
        ranked = fusion.dedup(head, texts, opts.dedup_threshold, keep=limit) + ranked[limit * 5 :]
    return [hit_dict(i, s, payloads[i], raw_dense.get(i), raw_sparse.get(i)) for i, s in ranked[:limit]]


def _adjacent(positions: Mapping[str, tuple[Hashable, int]]) -> dict[str, tuple[Hashable, int]]:
    """Re-number each session's known drawers 0..n in order, so 'next to' means adjacent in the session."""
    by_session: dict[Hashable, list[tuple[int, str]]] = {}
    for i, (sess, seq) in positions.items():
        by_session.setdefault(sess, []).append((seq, i))
    out: dict[str, tuple[Hashable, int]] = {}
    for sess, items in by_session.items():
        items.sort()
        prev_seq: int | None = None
        n = 0
        for seq, i in items:
            if prev_seq is not None:
                # a gap in the sequence (a drawer we did not fetch) breaks adjacency
                n += 1 if _next_to(prev_seq, seq) else 2
            out[i] = (sess, n)
            prev_seq = seq
    return out


def _next_to(a: int, b: int) -> bool:
    pa, ca = divmod(a, 1000)
    pb, cb = divmod(b, 1000)
    return (pa == pb and cb == ca + 1) or (pb == pa + 1 and cb == 0)


def _add_neighbours(store: Store, top: list[tuple[str, float]], payloads: dict[str, Mapping[str, Any]],
                    filters: Filters) -> None:
    """Fetch the drawers just before and after each top hit in its session (same filters), in one store call."""
    around = []
    for hit_id, _score in top:
        p = payloads[hit_id]
        session = p.get("session_id")
        pos = p.get("position")
        if not session or not isinstance(pos, (int, float)):
            continue
        around.append(Filters(source_kind=(str(p.get("source_kind")),), session_id=(str(session),),
                              position_min=float(pos) - 1, position_max=float(pos) + 1))
    if not around:
        return
    flt = Filters(wing=filters.wing, room=filters.room, since=filters.since, until=filters.until,
                  any_of=tuple(around))
    page, _ = store.scroll(flt, 64 * len(around))
    for nb in page:
        payloads.setdefault(nb.id, nb.payload)


def hit_dict(
    drawer_id: str, score: float, payload: Mapping[str, Any], dense: float | None = None, sparse: float | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"drawer_id": drawer_id, "score": round(score, 6), "text": payload.get("text", "")}
    for key in HIT_FIELDS:
        if key in payload:
            out[key] = payload[key]
    out["scores"] = {"dense": dense, "bm25": sparse}
    return out
