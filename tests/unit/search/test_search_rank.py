"""``mempald.search.ranking.rank`` end to end on a hand-made corpus in a real EdgeStore (tmp_path).

Dense vectors come from a deterministic fake embedder (hashed bag of words), sparse ones from the real
BM25 encoder; drawers are indexed like the product does (previous drawer of the session as context).
"""

from __future__ import annotations

import hashlib
import math
import re
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mempald.embed.sparse import Bm25Encoder
from mempald.ingest.drawers import index_text
from mempald.search.ranking import HIT_FIELDS, SearchOptions, rank
from mempald.store.base import Filters, PointData, RankRequest
from mempald.store.edge import EdgeStore

DIM = 32
NOW = datetime(2023, 7, 1, tzinfo=UTC)

SESSIONS: dict[str, tuple[datetime, list[str]]] = {
    "s1": (
        datetime(2023, 5, 8, tzinfo=UTC),
        [
            "Ann: I adopted a puppy named Biscuit last week",
            "Bob: What breed is the puppy?",
            "Ann: A golden retriever, very playful",
            "Bob: I am repainting my kitchen blue",
        ],
    ),
    "s2": (
        datetime(2023, 6, 9, tzinfo=UTC),
        [
            "Bob: The marathon training is going well",
            "Ann: How far did you run on Sunday?",
            "Bob: Twenty kilometres along the river",
            "Ann: Biscuit chewed my running shoes",
        ],
    ),
    "s3": (
        datetime(2023, 6, 20, tzinfo=UTC),
        ["Ann: My sister visits in August", "Bob: Will she stay with you?", "Ann: Yes, for two weeks"],
    ),
}
_WORD = re.compile(r"[a-z]+")


def fake_embed(text: str) -> list[float]:
    v = [0.0] * DIM
    for w in _WORD.findall(text.lower()):
        v[int(hashlib.sha256(w.encode()).hexdigest(), 16) % DIM] += 1.0
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EdgeStore, Bm25Encoder]]:
    store = EdgeStore(Path(tmp_path_factory.mktemp("rank")) / "store", DIM)
    bm25 = Bm25Encoder()
    points = []
    for sid, (when, turns) in SESSIONS.items():
        prev = ""
        for pos, text in enumerate(turns):
            payload = {
                "wing": "w", "room": "r", "source_kind": "test", "session_id": sid, "exchange_key": f"{sid}:{pos}",
                "position": pos, "chunk_index": 0, "text": text, "ts": when.timestamp(), "status": "live",
            }
            if prev:
                payload["context"] = prev
            prev = text
            body = index_text(payload)
            pid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{sid}/{pos}"))
            points.append(PointData(pid, payload, bm25.document(body), fake_embed(body)))
    store.upsert(points)
    yield store, bm25
    store.close()


def search(corpus: tuple[EdgeStore, Bm25Encoder], query: str, limit: int = 5, **opts: float) -> list[str]:
    store, bm25 = corpus
    o = replace(SearchOptions(), **opts)
    hits = rank(store, RankRequest(fake_embed(query), bm25.query(query), query, Filters(wing=("w",)), o.candidates,
                                   limit, o, NOW.timestamp()))
    return [h["exchange_key"] for h in hits]


def test_answer_turn_ranks_first(corpus: tuple[EdgeStore, Bm25Encoder]) -> None:
    assert search(corpus, "How far did Bob run along the river?")[0] == "s2:2"


def test_turn_before_a_context_match_is_lifted(corpus: tuple[EdgeStore, Bm25Encoder]) -> None:
    # "repainting kitchen" is s1:3's own text; s1:2 only reaches it through the backward neighbour share, which
    # lifts it next to the hit: the two make the head (the hit's exchange). With no backward share s1:2 falls out.
    top = search(corpus, "who is repainting the kitchen", limit=3)
    assert set(top[:2]) == {"s1:3", "s1:2"}
    assert search(corpus, "who is repainting the kitchen", limit=3, neighbour_decay=0)[0] == "s1:3"
    assert "s1:2" not in search(corpus, "who is repainting the kitchen", limit=2, neighbour_decay=0)


def test_question_turn_is_pulled_in_by_its_answer(corpus: tuple[EdgeStore, Bm25Encoder]) -> None:
    # "golden retriever" is in s1:2 (and s1:3's context); the question it answers (s1:1) comes right after.
    top = search(corpus, "golden retriever", limit=3)
    assert top[0] == "s1:2"
    assert top[1] == "s1:1"  # the backward share (0.8); s1:3 gets none (no forward share by default)


def test_date_words_boost_the_matching_session(corpus: tuple[EdgeStore, Bm25Encoder]) -> None:
    # Biscuit appears in s1 (May) and s2 (June); "in June 2023" prefers the June session.
    plain = search(corpus, "What did Biscuit do in June 2023?", limit=8, temporal_boost=0)
    assert plain[0] == "s1:0"  # without the date cue the May mention wins
    boosted = search(corpus, "What did Biscuit do in June 2023?", limit=8)  # the default boost (x1.5)
    june = [k for k in plain if k.startswith("s2:")]
    assert all(boosted.index(k) <= plain.index(k) for k in june)  # every June drawer rises or stays
    assert any(boosted.index(k) < plain.index(k) for k in june)
    strong = search(corpus, "What did Biscuit do in June 2023?", limit=8, temporal_boost=1.0)
    assert strong[0].startswith("s2:")  # a stronger boost puts the June session first


def test_a_when_question_prefers_the_drawer_that_says_when(corpus: tuple[EdgeStore, Bm25Encoder]) -> None:
    # s3:1 ("Will she stay with you?") matches the question's words best; s3:0 says when ("in August").
    q = "When will Ann's sister stay with her?"
    plain = search(corpus, q, limit=6, when_boost=0)
    assert plain[0] == "s3:1"
    boosted = search(corpus, q, limit=6)
    assert boosted[0] == "s3:0"
    # within its session only: the sessions come in the same order
    sessions = list(dict.fromkeys(k[:2] for k in boosted))
    assert sessions == list(dict.fromkeys(k[:2] for k in plain))[: len(sessions)]
    # a question that does not ask when is not touched
    assert search(corpus, "Will Ann's sister stay with her?", limit=6) == search(
        corpus, "Will Ann's sister stay with her?", limit=6, when_boost=0)


def test_tail_is_spread_over_sessions(corpus: tuple[EdgeStore, Bm25Encoder]) -> None:
    keys = search(corpus, "Ann Bob", limit=11, spread_after=2)
    tail_sessions = [k.split(":")[0] for k in keys[2:]]
    firsts = list(dict.fromkeys(tail_sessions))
    # every session not in the head shows up before any second hit of a session already shown
    head_sessions = {k.split(":")[0] for k in keys[:2]}
    new = [s for s in firsts if s not in head_sessions]
    assert tail_sessions[: len(new)] == new


def test_hit_dict_fields_and_limit(corpus: tuple[EdgeStore, Bm25Encoder]) -> None:
    store, bm25 = corpus
    o = SearchOptions()
    q = "marathon training"
    hits = rank(store, RankRequest(fake_embed(q), bm25.query(q), q, Filters(wing=("w",)), o.candidates, 2, o,
                                   NOW.timestamp()))
    assert len(hits) == 2
    h = hits[0]
    assert h["exchange_key"] == "s2:0"
    assert set(h) >= {"drawer_id", "score", "text", "scores", "session_id", "position"}
    assert set(h["scores"]) == {"dense", "bm25", "keyword", "rarity", "relevance"}
    assert 0.0 <= h["relevance"] == h["scores"]["relevance"] <= 1.0
    assert all(k in HIT_FIELDS or k in {"drawer_id", "score", "text", "scores", "relevance"} for k in h)


def test_plain_options_still_rank(corpus: tuple[EdgeStore, Bm25Encoder]) -> None:
    keys = search(
        corpus, "sister visits in August", temporal_boost=0, neighbour_decay=0, neighbour_forward=0,
        session_weight=0, dedup_threshold=1.0, spread_after=-1,
    )
    assert keys[0] == "s3:0"


def test_the_store_process_ranks_exactly_as_in_process(corpus: tuple[EdgeStore, Bm25Encoder]) -> None:
    from mempald.store.hosted import HostedEdgeStore

    store, bm25 = corpus
    store.flush()
    copy = store.path.parent / "hosted-copy"
    shutil.copytree(store.path, copy)
    hosted = HostedEdgeStore(copy, DIM, ranker="mempald.search.ranking:rank")
    try:
        o = SearchOptions()
        for query in ("How far did Bob run along the river?", "repainting kitchen", "what happened last week"):
            req = RankRequest(fake_embed(query), bm25.query(query), query, Filters(wing=("w",)), o.candidates, 5, o,
                              NOW.timestamp())
            assert hosted.rank(req) == rank(store, req)
    finally:
        hosted.close()


def _unrelated_query() -> str:
    """Words sharing neither text nor (fake) meaning with the corpus: the fake embedder hashes words into
    only 32 buckets, so a query of arbitrary words often collides with a drawer's; these avoid every bucket used."""
    used = {int(hashlib.sha256(w.encode()).hexdigest(), 16) % DIM
            for _, turns in SESSIONS.values() for t in turns for w in _WORD.findall(t.lower())}
    words = [w for w in ("quantum", "chromodynamics", "lattice", "gauge", "zeolite", "xylophone", "fjord",
                         "basalt", "tungsten", "quasar", "nebula", "isotope", "cathode", "glacier", "sonnet")
             if int(hashlib.sha256(w.encode()).hexdigest(), 16) % DIM not in used]
    assert len(words) >= 2, "no unrelated words for this corpus: add candidates"
    return " ".join(words[:4])


def test_relevance_floor_drops_what_matches_nothing(corpus: tuple[EdgeStore, Bm25Encoder]) -> None:
    q = _unrelated_query()
    assert search(corpus, q) == []
    assert search(corpus, q, min_relevance=0.0)  # the floor, not the search
    store, bm25 = corpus
    o = SearchOptions()
    q = "golden retriever"
    hits = rank(store, RankRequest(fake_embed(q), bm25.query(q), q, Filters(wing=("w",)), o.candidates, 5, o,
                                   NOW.timestamp()))
    top = hits[0]
    assert top["exchange_key"] == "s1:2" and top["scores"]["keyword"] == 1.0 and top["scores"]["rarity"] > 0.5
    assert top["relevance"] > max(h["relevance"] for h in hits[1:] if h["scores"]["keyword"] == 0.0)


def test_the_idf_is_read_back_from_the_stores_own_scores(corpus: tuple[EdgeStore, Bm25Encoder]) -> None:
    from mempald.search import fusion
    from mempald.search.ranking import _query_idf

    store, bm25 = corpus
    q = bm25.query("Biscuit marathon sister")
    _, sparse_hits = store.query(None, q, Filters(), 50)
    points = {p.id: p for p in store.retrieve([h.id for h in sparse_hits], with_vectors=True)}
    n = store.count(Filters(include_deleted=True))
    idf, ceiling = _query_idf(q, sparse_hits, points, n)
    assert ceiling == fusion.bm25_idf(0, n)
    for term in q.indices:  # the truth: how many drawers hold the term
        df = sum(1 for p in points.values() if p.sparse is not None and term in p.sparse.indices)
        assert abs(idf[term] - fusion.bm25_idf(df, n)) < 1e-3
