"""Chunk vectors, near-duplicate removal and k-means with k chosen by silhouette.

MiniLM reads at most 256 tokens (with [CLS] and [SEP]), so a chunk longer than ``EMBED_WINDOW`` is embedded
as windows whose vectors are averaged, weighted by length: the whole chunk counts, not just its opening.
Everything here is deterministic: fixed ``random_state`` and ``n_init``, ties broken by document order.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mempald.features.pack.chunking import Chunk
from mempald.features.pack.result import EmbedFn, TokenCounter, Vectors
from mempald.text.chunking import split_tokens

EMBED_WINDOW = 240
DEDUP_THRESHOLD = 0.92
MIN_K = 2
MAX_K = 10
RANDOM_STATE = 0
N_INIT = 10


def normalize(vecs: Vectors) -> Vectors:
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (vecs / norms).astype(np.float32)
    return out


def embed_texts(embed: EmbedFn, texts: Sequence[str]) -> Vectors:
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    vecs = np.asarray(embed(list(texts)), dtype=np.float32)
    if vecs.ndim != 2 or vecs.shape[0] != len(texts):
        raise ValueError(f"embed returned shape {vecs.shape} for {len(texts)} texts")
    return normalize(vecs)


def embed_chunks(chunks: Sequence[Chunk], embed: EmbedFn, count: TokenCounter) -> tuple[Vectors, Vectors]:
    """Two unit vectors per chunk: of its text alone (for dedup: a section copied into another file is
    the same content whatever heading sits above it) and of its text under its heading context (for
    clustering: a short section belongs with the rest of its document). Each distinct window is embedded
    once, in one call."""
    texts: dict[str, int] = {}
    parts: list[tuple[int, int, int, float]] = []  # (chunk, variant, text id, weight)
    for i, chunk in enumerate(chunks):
        context = " > ".join(chunk.context)
        for variant, prefix in ((0, ""), (1, context)):
            if variant and not prefix:
                continue
            budget = max(32, EMBED_WINDOW - count(prefix) - 2) if prefix else EMBED_WINDOW
            for piece in split_tokens(chunk.text, budget, count) or [chunk.text]:
                window = f"{prefix}\n{piece}" if prefix else piece
                parts.append((i, variant, texts.setdefault(window, len(texts)), float(max(1, len(piece)))))
    wvecs = embed_texts(embed, list(texts))
    out = np.zeros((2, len(chunks), wvecs.shape[1]), dtype=np.float32)
    for i, variant, tid, weight in parts:
        out[variant, i] += wvecs[tid] * weight
    for i, chunk in enumerate(chunks):
        if not chunk.context:
            out[1, i] = out[0, i]
    return normalize(out[0]), normalize(out[1])


@dataclass(frozen=True, slots=True)
class DedupResult:
    keep: tuple[int, ...]  # indices of kept chunks, ascending
    groups: tuple[tuple[int, tuple[int, ...]], ...]  # (kept, dropped...) for every group with drops


def dedup(vecs: Vectors, chunks: Sequence[Chunk], threshold: float = DEDUP_THRESHOLD) -> DedupResult:
    """Union-find over pairs at cosine >= ``threshold``; each group keeps its longest chunk."""
    n = len(chunks)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    if n > 1:
        sims = vecs @ vecs.T
        rows, cols = np.nonzero(np.triu(sims >= threshold, k=1))
        for a, b in zip(rows.tolist(), cols.tolist(), strict=True):
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    keep: list[int] = []
    dropped: list[tuple[int, tuple[int, ...]]] = []
    for members in groups.values():
        best = min(members, key=lambda i: (-chunks[i].tokens, chunks[i].order))
        keep.append(best)
        if len(members) > 1:
            dropped.append((best, tuple(i for i in members if i != best)))
    return DedupResult(tuple(sorted(keep)), tuple(sorted(dropped)))


@dataclass(frozen=True, slots=True)
class Clustering:
    labels: tuple[int, ...]  # cluster of each row, clusters numbered by size (0 = largest)
    k: int
    silhouette: float | None  # None when k was not chosen by silhouette (tiny input)
    scores: tuple[tuple[int, float], ...]  # (k, silhouette) for every k tried


def choose_k_range(n_points: int, n_distinct: int) -> range:
    """Candidate k: 2..10, fewer for tiny inputs (at least two points per cluster on average)."""
    hi = min(MAX_K, n_distinct - 1, n_points // 2)
    return range(MIN_K, hi + 1) if hi >= MIN_K else range(0)


def cluster(vecs: Vectors, order: Sequence[tuple[int, int]]) -> Clustering:
    """k-means on unit vectors for each candidate k, keeping the best cosine silhouette (ties: smaller k)."""
    n = vecs.shape[0]
    distinct = len(np.unique(np.round(vecs, 6), axis=0)) if n else 0
    ks = choose_k_range(n, distinct)
    if not ks:
        return Clustering(tuple([0] * n), 1 if n else 0, None, ())
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import silhouette_score

    best: tuple[float, int, np.ndarray] | None = None
    scores: list[tuple[int, float]] = []
    x = vecs.astype(np.float64)
    for k in ks:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            labels = KMeans(n_clusters=k, random_state=RANDOM_STATE, n_init=N_INIT).fit_predict(x)
        if len(set(labels.tolist())) < 2:
            continue
        score = float(silhouette_score(x, labels, metric="cosine"))
        scores.append((k, round(score, 4)))
        if best is None or score > best[0] + 1e-9:
            best = (score, k, labels)
    if best is None:
        return Clustering(tuple([0] * n), 1, None, tuple(scores))
    score, k, labels = best
    # Renumber: largest cluster first, ties by the earliest chunk in document order.
    members: dict[int, list[int]] = {}
    for i, lab in enumerate(labels.tolist()):
        members.setdefault(int(lab), []).append(i)
    ranked = sorted(members, key=lambda c: (-len(members[c]), min(order[i] for i in members[c])))
    remap = {old: new for new, old in enumerate(ranked)}
    return Clustering(tuple(remap[int(lab)] for lab in labels.tolist()), len(ranked), round(score, 4), tuple(scores))
