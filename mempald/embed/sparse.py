"""BM25 sparse vectors, computed offline by Qdrant Edge's own encoder (English stopwords, Snowball stemmer).

The store applies IDF (sparse vectors use the IDF modifier), so documents carry term frequencies only.
The same indices are used for the server backend, so a palace can move between stores.
"""

from __future__ import annotations

import threading

import qdrant_edge as qe

from mempald.store.base import SparseVec


class Bm25Encoder:
    def __init__(self) -> None:
        self._bm25 = qe.Bm25()
        self._lock = threading.Lock()

    def document(self, text: str) -> SparseVec:
        with self._lock:
            v = self._bm25.embed_document(text)
        return SparseVec(tuple(v.indices), tuple(v.values))

    def query(self, text: str) -> SparseVec:
        with self._lock:
            v = self._bm25.embed_query(text)
        return SparseVec(tuple(v.indices), tuple(v.values))
