"""Ranking: dense (MiniLM) and BM25 candidates from one store query, fused and rescored in Python.

Pure apart from its store calls, so it runs wherever the store is: in the store's own process for the
daemon's embedded store (``mempald.store.host``), on the store's worker thread otherwise.

Pipeline (each default kept only where its gain holds on both halves of LoCoMo's conversations, see
``mempald.search.fusion`` and ``bench/locomo_ablate.py``):
1. one batched store query: ``candidates`` dense hits and ``candidates`` BM25 hits under the filters, with only
   the payload keys the ranking reads (``RANK_FIELDS``; the hits returned get ``HIT_FIELDS`` at the end);
   drawers are indexed with the drawer before them in their session (``context``);
2. min-max normalised score fusion with ``dense_weight`` (plain RRF measured worse);
3. temporal cue: drawers stamped inside the window a query's date words name get a soft boost;
4. neighbours: a strong hit lifts the drawer before it in its session (a drawer is indexed with the one
   before it, so a context match points back) and, when the hit asks something, the drawer after it (the
   answer follows its question); only among the candidates (fetching the top hits' missing neighbours as well
   lost on LoCoMo's temporal questions and on its messaging cut, ``bench/RESEARCH_locomo.md``, eighth round);
5. answer type: a query that asks *when* lifts, within each session, the drawers that say when ("yesterday",
   "last week", a date), never past the session's best drawer (it picks the drawer, not the session);
6. speaker (off by default: LoCoMo's adversarial questions lose by it, ``bench/RESEARCH_locomo.md``): drawers
   said by someone the query names rise;
7. session strength (off by default: it failed the fold check, ``bench/RESEARCH_locomo.md``): drawers of
   sessions with several good hits rise;
8. below the first ``spread_after`` hits, each not-yet-shown session's best hit comes first;
9. near-identical hits are de-duplicated (checked until ``limit`` hits are kept);
10. relevance: each hit kept gets one calibrated score (``fusion.relevance``, a probability) from its dense
   cosine and its keyword evidence (the IDF-weighted share of the query's terms it holds, and how rare they
   are); the IDFs are read back from the store's own BM25 scores.  A hit lifted by a neighbour inherits the
   neighbour's relevance times the same share.  Hits below ``min_relevance`` are dropped: a query that
   matches nothing returns nothing.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from mempal.methods.drawer import HIT, RANK, having
from mempald.search import answers, fusion, speakers, temporal
from mempald.store.base import Filters, Hit, RankRequest, SparseVec, Store, StoredPoint

HIT_FIELDS = having(HIT)  # a hit's fields, in the order it returns them (``mempal.methods.drawer``)
RANK_FIELDS = having(RANK)
"""What the ranking reads of its candidates: the rest of a hit's fields (``HIT_FIELDS``) is read for the hits
returned only (at 100k drawers, 200 candidates with these six keys cost 2.5 ms less than with all 30)."""
IDF_SAMPLE = 24  # sparse hits whose vectors are read to recover the IDF of the query's terms


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """Every option of search; the defaults are the benchmark's choice."""

    dense_weight: float = fusion.DEFAULT_DENSE_WEIGHT
    candidates: int = fusion.DEFAULT_DEPTH
    temporal_boost: float = fusion.DEFAULT_TEMPORAL_BOOST
    speaker_boost: float = speakers.DEFAULT_SPEAKER_BOOST  # to drawers said by someone the query names
    neighbour_decay: float = fusion.DEFAULT_NEIGHBOUR_DECAY  # to the drawer before a hit
    neighbour_forward: float = fusion.DEFAULT_NEIGHBOUR_FORWARD  # to the drawer after a hit
    question_forward: float = fusion.DEFAULT_QUESTION_FORWARD  # to the drawer after a hit that asks something
    when_boost: float = answers.DEFAULT_WHEN_BOOST  # a query asking when: to drawers that say when, in-session
    session_weight: float = fusion.DEFAULT_SESSION_WEIGHT
    session_top: int = fusion.DEFAULT_SESSION_TOP
    dedup_threshold: float = fusion.DEFAULT_DEDUP_THRESHOLD
    spread_after: int = fusion.DEFAULT_SPREAD_AFTER  # below this rank, new sessions first (-1: off)
    min_relevance: float = fusion.DEFAULT_MIN_RELEVANCE  # the floor (0: every hit, whatever its relevance)


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
    dense_hits, sparse_hits = store.query(request.dense, request.sparse, filters, request.candidates,
                                          fields=RANK_FIELDS)
    payloads: dict[str, Mapping[str, Any]] = {h.id: h.payload for h in dense_hits}
    payloads.update({h.id: h.payload for h in sparse_hits})
    raw_dense = {h.id: h.score for h in dense_hits}
    raw_sparse = {h.id: h.score for h in sparse_hits}
    ranked = fusion.fuse(_cands(dense_hits), _cands(sparse_hits), opts.dense_weight)

    window = temporal.temporal_window(query, now)
    if window is not None and opts.temporal_boost > 0:
        stamps = {i: datetime.fromtimestamp(float(p.get("ts") or 0), UTC) for i, p in payloads.items() if p.get("ts")}
        ranked = fusion.temporal_boost(ranked, stamps, window, opts.temporal_boost)

    asks: set[str] = set()
    neighbours = _neighbours_on(opts) and bool(ranked)
    positions = {i: (_session_key(p), _seq(p)) for i, p in payloads.items()}
    adjacent = _adjacent(positions)
    if neighbours:
        asks = {i for i, _ in ranked if _asks(payloads[i])}
        ranked = fusion.neighbour_boost(
            ranked, adjacent, opts.neighbour_decay, forward_decay=opts.neighbour_forward,
            questions=asks, question_forward=opts.question_forward,
        )
    if opts.when_boost > 0 and answers.asks_when(query):
        ranked = answers.when_boost(ranked, {i: str(p.get("text", "")) for i, p in payloads.items()},
                                    {i: pos[0] for i, pos in positions.items()}, query, opts.when_boost, reach=limit)
    if opts.speaker_boost > 0:  # off by default: it fails the fold check (bench/RESEARCH_locomo.md)
        ranked = speakers.speaker_boost(ranked, {i: str(p.get("text", "")) for i, p in payloads.items()}, query,
                                      opts.speaker_boost)
    if opts.session_weight > 0:
        ranked = fusion.session_boost(ranked, positions, opts.session_weight, opts.session_top)
    if opts.spread_after >= 0:
        ranked = fusion.spread_sessions(ranked, positions, opts.spread_after)
    if opts.dedup_threshold < 1:
        head = ranked[: limit * 5]
        texts = {i: str(payloads[i].get("text", "")) for i, _ in head}
        ranked = fusion.dedup(head, texts, opts.dedup_threshold, keep=limit) + ranked[limit * 5 :]
    top = ranked[:limit]
    rel = _relevance(store, request, [i for i, _ in top], sparse_hits, raw_dense, adjacent, asks)
    kept = [(i, s) for i, s in top if rel.get(i, _NO_EVIDENCE)["relevance"] >= opts.min_relevance]
    shown = {p.id: p.payload for p in store.retrieve([i for i, _ in kept], fields=HIT_FIELDS)}
    return [hit_dict(i, s, {**payloads[i], **shown.get(i, {})}, raw_dense.get(i), raw_sparse.get(i), rel.get(i))
            for i, s in kept]


def _neighbours_on(opts: SearchOptions) -> bool:
    return opts.neighbour_decay > 0 or opts.neighbour_forward > 0 or opts.question_forward > 0


def _asks(payload: Mapping[str, Any]) -> bool:
    """Whether a drawer asks something (its text holds a question mark): the drawer after it is its answer."""
    return "?" in str(payload.get("text", ""))


_NO_EVIDENCE = {"dense": 0.0, "keyword": 0.0, "rarity": 0.0, "relevance": 0.0}


Evidence = dict[str, float]


def _relevance(store: Store, request: RankRequest, ids: list[str], sparse_hits: list[Hit],
               raw_dense: Mapping[str, float], adjacent: Mapping[str, tuple[Hashable, int]],
               asks: set[str]) -> dict[str, Evidence]:
    """Each hit's evidence (dense cosine, keyword coverage and rarity) and calibrated relevance; ``adjacent``:
    each known drawer's place in its session (``_adjacent``)."""
    if not ids:
        return {}
    opts: SearchOptions = request.options
    at = {pos: i for i, pos in adjacent.items()}
    shares: dict[str, list[tuple[str, float]]] = {}
    if _neighbours_on(opts):
        for i in ids:
            pos = adjacent.get(i)
            if pos is None:
                continue
            sess, n = pos
            before = at.get((sess, n - 1))
            forward = max(opts.neighbour_forward, opts.question_forward) if before in asks else opts.neighbour_forward
            for other, share in ((at.get((sess, n + 1)), opts.neighbour_decay), (before, forward)):
                if other is not None and share > 0:
                    shares.setdefault(i, []).append((other, share))
    sample = sparse_hits[:IDF_SAMPLE]
    wanted = list(dict.fromkeys([*ids, *(o for lst in shares.values() for o, _ in lst), *(h.id for h in sample)]))
    points = {p.id: p for p in store.retrieve(wanted, with_vectors=True, with_payload=False)}  # payloads: known
    n_total = _point_count(store)
    idf, ceiling = _query_idf(request.sparse, sample, points, n_total)
    query_total = sum(idf.values())
    cosines = _cosines(request.dense, {i: p.dense for i, p in points.items() if i not in raw_dense})

    def own(i: str) -> dict[str, float]:
        p = points.get(i)
        if p is None:
            return dict(_NO_EVIDENCE)
        dense = raw_dense.get(i)
        if dense is None:
            dense = cosines.get(i, 0.0)
        terms = set(p.sparse.indices) if p.sparse is not None else set()
        coverage, rarity = fusion.keyword_evidence((w for t, w in idf.items() if t in terms), query_total, ceiling)
        return {"dense": round(dense, 4), "keyword": round(coverage, 4), "rarity": round(rarity, 4),
                "relevance": round(fusion.relevance(dense, coverage, rarity), 4)}

    cache: dict[str, dict[str, float]] = {}
    out: dict[str, dict[str, float]] = {}
    for i in ids:
        ev = cache.setdefault(i, own(i))
        best = ev["relevance"]
        for other, share in shares.get(i, ()):
            best = max(best, share * cache.setdefault(other, own(other))["relevance"])
        out[i] = {**ev, "relevance": round(best, 4)}
    return out


def _point_count(store: Store) -> int:
    """Every point of the store, the N of its IDF (deleted drawers are points too)."""
    return max(1, store.count(Filters(include_deleted=True)))


def _query_idf(query: SparseVec, sample: list[Hit], points: Mapping[str, StoredPoint],
               n_total: int) -> tuple[dict[int, float], float]:
    """The IDF of each query term, recovered from the store's BM25 scores of ``sample``: a hit's score is
    ``sum_t idf_t * q_t * d_t`` over the terms it shares with the query, so with the hits' term weights
    ``d_t`` the IDFs are the least-squares solution of one such equation per hit.  A term no sampled hit
    holds is as rare as a word can be: the IDF of a term found nowhere (also returned, as the ceiling)."""
    ceiling = fusion.bm25_idf(0, n_total)
    q = dict(zip(query.indices, query.values, strict=False))
    rows: list[dict[int, float]] = []
    scores: list[float] = []
    for h in sample:
        p = points.get(h.id)
        if p is None or p.sparse is None:
            continue
        d = dict(zip(p.sparse.indices, p.sparse.values, strict=False))
        row = {t: q[t] * d[t] for t in q if t in d and q[t] * d[t] > 0}
        if row:
            rows.append(row)
            scores.append(h.score)
    terms = sorted({t for r in rows for t in r})
    idf = {t: ceiling for t in q}
    if terms:
        col = {t: k for k, t in enumerate(terms)}
        a = np.zeros((len(rows), len(terms)))
        for r, row in enumerate(rows):
            for t, v in row.items():
                a[r, col[t]] = v
        solved, *_ = np.linalg.lstsq(a, np.asarray(scores), rcond=None)
        floor = fusion.bm25_idf(n_total, n_total)
        for t, k in col.items():
            idf[t] = float(min(ceiling, max(floor, solved[k])))
    return idf, ceiling


def _cosines(query: Sequence[float], vectors: Mapping[str, Sequence[float] | None]) -> dict[str, float]:
    """The cosine of ``query`` with each of ``vectors`` (0 for a missing or zero vector), in one product."""
    have = [(i, v) for i, v in vectors.items() if v]
    if not have:
        return {}
    m = np.asarray([v for _, v in have], dtype=float)
    q = np.asarray(query, dtype=float)
    den = np.linalg.norm(m, axis=1) * float(np.linalg.norm(q))
    dots = m @ q
    cos = np.divide(dots, den, out=np.zeros_like(dots), where=den > 0)
    return {i: float(c) for (i, _), c in zip(have, cos, strict=True)}


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
                # a gap in the sequence (a drawer not among the candidates) breaks adjacency
                n += 1 if _next_to(prev_seq, seq) else 2
            out[i] = (sess, n)
            prev_seq = seq
    return out


def _next_to(a: int, b: int) -> bool:
    pa, ca = divmod(a, 1000)
    pb, cb = divmod(b, 1000)
    return (pa == pb and cb == ca + 1) or (pb == pa + 1 and cb == 0)


def hit_dict(
    drawer_id: str, score: float, payload: Mapping[str, Any], dense: float | None = None, sparse: float | None = None,
    evidence: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """A hit as search returns it: ``score`` orders the list (fused, relative to this query); ``relevance`` is
    the calibrated probability that it bears on the query (comparable across queries: the floor applies to it);
    ``scores`` holds the evidence: raw dense cosine, raw BM25, keyword coverage and rarity."""
    out: dict[str, Any] = {"drawer_id": drawer_id, "score": round(score, 6), "text": payload.get("text", "")}
    for key in HIT_FIELDS:
        if key in payload:
            out[key] = payload[key]
    ev = evidence or _NO_EVIDENCE
    out["relevance"] = ev["relevance"]
    out["scores"] = {"dense": dense if dense is not None else ev["dense"], "bm25": sparse,
                     "keyword": ev["keyword"], "rarity": ev["rarity"], "relevance": ev["relevance"]}
    return out
