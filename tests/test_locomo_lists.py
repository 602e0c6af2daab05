"""``bench/locomo_lists.py``: a store's candidate lists recomputed in Python give the store's own lists.

A real embedded store in a temp dir and the real packaged model; the drawers are short conversation turns written
for this test, in two wings and three sessions, indexed the way the product indexes them (the drawer before each
one as its context: BM25 over both, the dense vector of both within the token budget).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import locomo_lists

from mempald.config import EmbedSettings
from mempald.embed.embedder import Embedder
from mempald.embed.sparse import Bm25Encoder
from mempald.ingest.drawers import index_text
from mempald.search.ranking import RANK_FIELDS
from mempald.store.base import Filters, PointData, StoredPoint
from mempald.store.edge import EdgeStore

SESSIONS = {
    ("w-a", "s1"): ["Ana: I adopted a grey cat last week.", "Ben: What is she called?",
                    "Ana: Pixel. She sleeps on my keyboard all day.", "Ben: Cats love warm laptops."],
    ("w-a", "s2"): ["Ben: I ran the Berlin marathon in four hours.", "Ana: That is fast! How was the weather?",
                    "Ben: Cold rain for the last ten kilometres."],
    ("w-b", "s3"): ["Cleo: I started learning the cello in March.", "Dev: Which piece are you playing?",
                    "Cleo: A Bach suite, slowly.", "Dev: My cat hates the sound of my violin."],
}
QUERIES = ["what is the cat called", "Berlin marathon time", "cello piece Bach", "rain weather kilometres",
           "laptop keyboard sleeping"]


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(models_dir=tmp_path_factory.mktemp("models"), threads=2)


@pytest.fixture(scope="module")
def store(embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> EdgeStore:
    bm25 = Bm25Encoder()
    budget = EmbedSettings().max_tokens
    points = []
    n = 0
    for (wing, session), turns in SESSIONS.items():
        for pos, text in enumerate(turns):
            payload = {"wing": wing, "session_id": session, "source_kind": "locomo", "position": pos,
                       "chunk_index": 0, "text": text, "context": turns[pos - 1] if pos else ""}
            dense = embedder.embed_query(embedder.with_context(str(payload["context"]), text, budget))
            n += 1
            points.append(PointData(f"00000000-0000-0000-0000-{n:012d}", payload, bm25.document(index_text(payload)),
                                    dense.tolist()))
    edge = EdgeStore(tmp_path_factory.mktemp("store"), embedder.dim)
    edge.upsert(points)
    return edge


@pytest.mark.parametrize("wing", [(), ("w-a",), ("w-b",)])
def test_the_default_encoding_and_context_give_the_stores_lists(store: EdgeStore, embedder: Embedder,
                                                                wing: tuple[str, ...], tmp_path: Path) -> None:
    points = locomo_lists.all_points(store)
    assert len(points) == sum(len(t) for t in SESSIONS.values())
    keyword = locomo_lists.KeywordList(points, locomo_lists.KeywordEncoding())
    dense = locomo_lists.DenseList(points, 1, embedder, tmp_path)
    bm25 = Bm25Encoder()
    filters = Filters(wing=wing)
    found = 0
    for q in QUERIES:
        qd, qs = embedder.embed_query(q).tolist(), bm25.query(q)
        want_d, want_s = store.query(qd, qs, filters, 5, fields=RANK_FIELDS)
        got_s = keyword.search(qs, filters, 5, RANK_FIELDS)
        got_d = dense.search(qd, filters, 5, RANK_FIELDS)
        found += len(want_s)
        assert [h.id for h in got_s] == [h.id for h in want_s], q
        assert [h.score for h in got_s] == pytest.approx([h.score for h in want_s], rel=1e-4), q
        assert [h.id for h in got_d] == [h.id for h in want_d], q
        assert [h.score for h in got_d] == pytest.approx([h.score for h in want_d], abs=1e-4), q
        assert [h.payload for h in got_d] == [h.payload for h in want_d]  # the ranking's keys, as the store gives
    assert found >= 4  # the keyword list found something for most queries in every wing
    assert (tmp_path / "dense-context-1.npz").is_file()  # the vectors are kept for the next run
    again = locomo_lists.DenseList(points, 1, embedder, tmp_path)
    assert np.array_equal(again.vectors, dense.vectors)


def test_a_wider_context_reads_the_drawers_before_in_the_same_session_only(store: EdgeStore, embedder: Embedder,
                                                                            tmp_path: Path) -> None:
    points = locomo_lists.all_points(store)
    prev = {own: before for before, own in locomo_lists.with_previous(points, 2)}
    assert prev["Ana: I adopted a grey cat last week."] == []
    assert prev["Ben: What is she called?"] == ["Ana: I adopted a grey cat last week."]
    assert prev["Ben: Cats love warm laptops."] == ["Ben: What is she called?",
                                                    "Ana: Pixel. She sleeps on my keyboard all day."]
    assert prev["Ben: I ran the Berlin marathon in four hours."] == []  # another session begins
    # With two drawers of context, "Pixel" (two turns before the query's match) now reaches the last turn of s1.
    wide = locomo_lists.KeywordList(points, locomo_lists.KeywordEncoding(context=2))
    narrow = locomo_lists.KeywordList(points, locomo_lists.KeywordEncoding())
    q = Bm25Encoder().query("Pixel warm laptops")
    text = {p.id: str(p.payload["text"]) for p in points}
    assert text[wide.search(q, Filters(), 1, None)[0].id] == "Ben: Cats love warm laptops."
    assert [text[h.id] for h in narrow.search(q, Filters(), 10, None)].count("Ben: Cats love warm laptops.") == 1
    two = locomo_lists.DenseList(points, 2, embedder, tmp_path)
    assert (tmp_path / "dense-context-2.npz").is_file()
    one = locomo_lists.DenseList(points, 1, embedder, tmp_path)
    firsts = [i for i, p in enumerate(points) if p.payload["position"] in (0, 1)]
    later = [i for i, p in enumerate(points) if int(p.payload["position"]) >= 2]
    assert np.allclose(two.vectors[firsts], one.vectors[firsts], atol=1e-5)  # at most one drawer before them
    assert not np.allclose(two.vectors[later], one.vectors[later], atol=1e-3)


def test_encodings_parse_and_other_filters_are_refused(store: EdgeStore) -> None:
    enc = locomo_lists.KeywordEncoding.parse("k=0.9, avg_len=128,context=0")
    assert enc == locomo_lists.KeywordEncoding(k=0.9, b=0.75, avg_len=128.0, context=0)
    assert enc.label == "k=0.9,b=0.75,avg_len=128,context=0"
    for bad in ("k", "depth=3", "k=fast", "context=-1"):
        with pytest.raises(ValueError):
            locomo_lists.KeywordEncoding.parse(bad)
    points: list[StoredPoint] = locomo_lists.all_points(store)
    keyword = locomo_lists.KeywordList(points, locomo_lists.KeywordEncoding(context=0))
    q = Bm25Encoder().query("cello")
    assert keyword.search(q, Filters(wing=("w-b",)), 3, None)
    with pytest.raises(ValueError, match="wing filter only"):
        keyword.search(q, Filters(wing=("w-b",), room=("r",)), 3, None)
