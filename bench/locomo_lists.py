"""A LoCoMo store's candidate lists recomputed in Python, so that an encoding can be measured without a new ingest.

``bench/locomo_ablate.py --keyword ENCODING`` and ``--dense-context N`` use it (``bench/RESEARCH_locomo.md``, ninth
round). Both lists are computed from the store's own points:

- the keyword list: every drawer's indexed text re-encoded by Qdrant Edge's ``Bm25`` under another ``Bm25Config``
  (``k``, ``b``, ``avg_len``) and, with ``context`` other than 1, with its previous ``context`` drawers of the session
  instead of the one the product indexes; scored with the store's IDF formula over the whole collection;
- the dense list: every drawer embedded by the product's embedder with its previous N drawers as context (within
  the dense worker's token budget), searched exactly by cosine.

With the defaults (``k=1.2,b=0.75,avg_len=256,context=1``; N = 1) both give the store's own lists (tested). Only a
wing filter is understood: that is all the LoCoMo benchmark asks with. The ranking's relevance step still reads the
stored keyword vectors of its IDF sample, so under another keyword encoding a hit's relevance, and which hits the
relevance floor drops, are approximate (on LoCoMo the floor moves turn R@10 by 0.001 at most, fourth round).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from mempald.config import EmbedSettings
from mempald.embed.embedder import Embedder
from mempald.embed.sparse import pretokenize
from mempald.ingest.drawers import index_text
from mempald.search import fusion, ranking
from mempald.store.base import Filters, Hit, SparseVec, StoredPoint

PAGE = 1000


@dataclass(frozen=True)
class KeywordEncoding:
    k: float = 1.2
    b: float = 0.75
    avg_len: float = 256.0
    context: int = 1  # previous drawers indexed with each drawer (the product: 1)

    @classmethod
    def parse(cls, text: str) -> KeywordEncoding:
        """``k=1.2,b=0.75,avg_len=256,context=1`` (any subset; the rest at these defaults)."""
        fields: dict[str, float | int] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, sep, value = part.partition("=")
            if not sep or name not in ("k", "b", "avg_len", "context"):
                raise ValueError(f"{part!r}: expected k=, b=, avg_len= or context=")
            fields[name] = int(value) if name == "context" else float(value)
            if fields[name] < 0:
                raise ValueError(f"{part!r}: must not be negative")
        return cls(**fields)  # type: ignore[arg-type]

    @property
    def label(self) -> str:
        return f"k={self.k:g},b={self.b:g},avg_len={self.avg_len:g},context={self.context}"


def all_points(store: Any) -> list[StoredPoint]:
    """Every point of ``store`` with its whole payload, in the store's order."""
    out: list[StoredPoint] = []
    offset: str | None = None
    while True:
        page, offset = store.scroll(Filters(), PAGE, offset)
        out.extend(page)
        if offset is None:
            return out


def with_previous(points: Sequence[StoredPoint], n: int) -> list[tuple[list[str], str]]:
    """For each point, the texts of the ``n`` drawers before it in its session (oldest first) and its own text."""
    order = sorted(range(len(points)), key=lambda j: (str(_session(points[j])), ranking._seq(points[j].payload)))
    out: list[tuple[list[str], str]] = [([], "")] * len(points)
    for at, j in enumerate(order):
        prev: list[str] = []
        back = at - 1
        while back >= 0 and len(prev) < n and _session(points[order[back]]) == _session(points[j]):
            prev.insert(0, str(points[order[back]].payload.get("text", "")))
            back -= 1
        out[j] = (prev, str(points[j].payload.get("text", "")))
    return out


def _session(p: StoredPoint) -> Hashable:
    return ranking._session_key(p.payload)


def _wing_mask(wings: np.ndarray, filters: Filters) -> np.ndarray:
    plain = Filters(wing=filters.wing)
    if filters != plain:
        raise ValueError("recomputed lists understand a wing filter only")
    return np.isin(wings, list(filters.wing)) if filters.wing else np.ones(len(wings), dtype=bool)


def _hits(points: Sequence[StoredPoint], scores: np.ndarray, keep: np.ndarray, limit: int,
          fields: Sequence[str] | None) -> list[Hit]:
    order = np.argsort(-np.where(keep, scores, -np.inf), kind="stable")[:limit]
    out = []
    for j in order:
        if not keep[j]:
            break
        payload = points[j].payload
        out.append(Hit(points[j].id, float(scores[j]),
                       {k: payload[k] for k in (fields if fields is not None else payload) if k in payload}))
    return out


class KeywordList:
    """The keyword list under another encoding."""

    def __init__(self, points: Sequence[StoredPoint], encoding: KeywordEncoding) -> None:
        self.points = points
        bm25 = qe.Bm25(qe.Bm25Config(k=encoding.k, b=encoding.b, avg_len=encoding.avg_len))
        if encoding.context == 1:
            texts = [index_text(p.payload) for p in points]
        else:
            texts = ["\n".join([*prev, own]) for prev, own in with_previous(points, encoding.context)]
        postings: dict[int, list[tuple[int, float]]] = defaultdict(list)
        for j, text in enumerate(texts):
            vec = bm25.embed_document(pretokenize(text))
            for term, value in zip(vec.indices, vec.values, strict=True):
                postings[term].append((j, value))
        self.idf = {t: fusion.bm25_idf(len(ps), len(points)) for t, ps in postings.items()}  # the store's, over all
        self.postings = {t: (np.array([j for j, _ in ps]), np.array([v for _, v in ps])) for t, ps in postings.items()}
        self.wings = np.array([str(p.payload.get("wing")) for p in points])

    def search(self, query: SparseVec, filters: Filters, limit: int, fields: Sequence[str] | None) -> list[Hit]:
        scores = np.zeros(len(self.points))
        for term, weight in zip(query.indices, query.values, strict=True):
            if term in self.postings:
                rows, values = self.postings[term]
                scores[rows] += weight * self.idf[term] * values
        return _hits(self.points, scores, _wing_mask(self.wings, filters) & (scores > 0), limit, fields)


class DenseList:
    """The dense list with each drawer embedded after its previous ``n`` drawers (kept in ``cache`` once made)."""

    def __init__(self, points: Sequence[StoredPoint], n: int, embedder: Embedder, cache: Path,
                 max_tokens: int = EmbedSettings().max_tokens) -> None:
        self.points = points
        ids = np.array([p.id for p in points])
        kept = cache / (f"dense-context-{n}.npz" if max_tokens == EmbedSettings().max_tokens
                        else f"dense-context-{n}-{max_tokens}.npz")
        vectors: np.ndarray | None = None
        if kept.is_file():
            with np.load(kept) as z:
                if np.array_equal(z["ids"], ids):
                    vectors = z["vectors"]
        if vectors is None:
            texts = [embedder.with_context("\n".join(prev), own, max_tokens) if prev else own
                     for prev, own in with_previous(points, n)]
            vectors = embedder.embed_by_length(texts, 32, 8 * 256)
            np.savez(kept, ids=ids, vectors=vectors)
        self.vectors = vectors
        self.wings = np.array([str(p.payload.get("wing")) for p in points])

    def search(self, query: Sequence[float], filters: Filters, limit: int,
               fields: Sequence[str] | None) -> list[Hit]:
        scores = self.vectors @ np.asarray(query, dtype=np.float32)
        return _hits(self.points, scores, _wing_mask(self.wings, filters), limit, fields)


def swap_lists(dense: DenseList | None, keyword: KeywordList | None) -> Any:
    """A function for ``Memo.swap``: the store's two lists with either one replaced."""
    def swap(lists: tuple[list[Hit], list[Hit]], query: Sequence[float], sparse: SparseVec, filters: Filters,
             limit: int, fields: Sequence[str] | None) -> tuple[list[Hit], list[Hit]]:
        d, s = lists
        if dense is not None:
            d = dense.search(query, filters, limit, fields)
        if keyword is not None:
            s = keyword.search(sparse, filters, limit, fields)
        return d, s
    return swap

