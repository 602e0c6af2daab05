"""Chunk vectors, near-duplicate removal and k-means with k chosen by silhouette.

MiniLM reads at most 256 tokens (with [CLS] and [SEP]), so a chunk longer than ``EMBED_WINDOW`` is embedded
as windows whose vectors are averaged, weighted by length: the whole chunk counts, not just its opening.
Everything here is deterministic: fixed ``random_state`` and ``n_init``, ties broken by document order.
k-means (k-means++ seeding with greedy trials, Lloyd iterations, the best of ``n_init`` runs by inertia) and
the cosine silhouette are numpy, as scikit-learn computes them (its default KMeans and ``silhouette_score``
with ``metric="cosine"``), without installing scikit-learn and scipy (160 MB) for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mempald.features.pack.chunking import Chunk
from mempald.features.pack.progress import PackProgress
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


def embed_chunks(chunks: Sequence[Chunk], embed: EmbedFn, count: TokenCounter,
                 progress: PackProgress | None = None) -> tuple[Vectors, Vectors]:
    """Two unit vectors per chunk: of its text alone (for dedup: a section copied into another file is
    the same content whatever heading sits above it) and of its text under its heading context (for
    clustering: a short section belongs with the rest of its document).

    The model reads each chunk once: its text as windows whose vectors are averaged by length. The context
    vector adds the vector of the chunk's heading path (each distinct path embedded once, a few tokens) with
    the weight the path would have had read in front of the chunk's first window: its share of that window's
    tokens, times that window's share of the chunk. Embedding every chunk a second time under its headings
    had cost as much as the text itself, about half of a pack's model time."""
    texts: dict[str, int] = {}
    parts: list[tuple[int, int, float]] = []  # (chunk, text id, weight)
    heads: list[tuple[int, int, float]] = []  # (chunk, heading text id, its share)
    for i, chunk in enumerate(chunks):
        pieces = split_tokens(chunk.text, EMBED_WINDOW, count) or [chunk.text]
        for piece in pieces:
            parts.append((i, texts.setdefault(piece, len(texts)), float(max(1, len(piece)))))
        if chunk.context:
            path = " > ".join(chunk.context)
            n_path = count(path)
            first = n_path / max(1, n_path + min(count(pieces[0]), max(1, EMBED_WINDOW - n_path)))
            share = first * len(pieces[0]) / max(1, sum(len(p) for p in pieces))
            heads.append((i, texts.setdefault(path, len(texts)), share))
    if progress is not None:
        progress.begin("embedding", len(texts))
    wvecs = embed_texts(embed, list(texts))
    body = np.zeros((len(chunks), wvecs.shape[1]), dtype=np.float32)
    for i, tid, weight in parts:
        body[i] += wvecs[tid] * weight
    body = normalize(body)
    with_context = body.copy()
    for i, tid, share in heads:
        with_context[i] = (1.0 - share) * body[i] + share * wvecs[tid]
    return body, normalize(with_context)


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


def kmeans(x: np.ndarray, k: int, seed: int, n_init: int, max_iter: int = 300) -> np.ndarray:
    """Labels of the best of ``n_init`` k-means runs (lowest inertia; ties: the earliest run), computed as
    scikit-learn's ``KMeans(n_clusters=k, random_state=seed, n_init=n_init).fit_predict`` does: data centred,
    one random stream for every run, k-means++ seeding, Lloyd until the labels stop moving or the centres
    move less than 1e-4 of the mean variance."""
    rng = np.random.RandomState(seed)
    x = x - x.mean(axis=0)
    n = len(x)
    sq = np.einsum("ij,ij->i", x, x)
    tol = 1e-4 * float(np.mean(np.var(x, axis=0)))
    best: tuple[float, np.ndarray] | None = None
    for _ in range(n_init):
        centers = _kmeans_pp(x, sq, k, rng)
        labels = np.full(n, -1, dtype=np.int64)
        converged = False
        for _it in range(max_iter):
            new_labels = np.argmin(np.einsum("ij,ij->i", centers, centers)[None, :] - 2.0 * (x @ centers.T), axis=1)
            new = centers.copy()
            for j in range(k):
                members = new_labels == j
                if members.any():
                    new[j] = x[members].sum(axis=0) / members.sum()
            empty = [j for j in range(k) if not (new_labels == j).any()]
            if empty:  # an empty cluster takes the point farthest from its centre
                far = np.argsort(-np.sum((x - centers[new_labels]) ** 2, axis=1), kind="stable")
                for j, i in zip(empty, far, strict=False):
                    new[j] = x[i]
            shift = float(np.sum((new - centers) ** 2))
            centers = new
            if np.array_equal(new_labels, labels):
                converged = True
                break
            labels = new_labels
            if shift <= tol:
                break
        if not converged:
            labels = np.argmin(np.einsum("ij,ij->i", centers, centers)[None, :] - 2.0 * (x @ centers.T), axis=1)
        inertia = float(np.sum((x - centers[labels]) ** 2))
        if best is None or inertia < best[0]:
            best = (inertia, labels)
    assert best is not None
    return best[1]


def _kmeans_pp(x: np.ndarray, sq: np.ndarray, k: int, rng: np.random.RandomState) -> np.ndarray:
    """k-means++ seeding, greedy: each new centre is the best of 2 + log(k) candidates drawn by D^2."""
    n = len(x)
    trials = 2 + int(np.log(k))
    centers = np.empty((k, x.shape[1]), dtype=x.dtype)
    first = int(rng.choice(n, p=np.full(n, 1.0 / n)))
    centers[0] = x[first]
    d2 = np.maximum(sq + sq[first] - 2.0 * (x @ x[first]), 0.0)
    pot = float(d2.sum())
    for c in range(1, k):
        draws = rng.uniform(size=trials) * pot
        cand = np.minimum(np.searchsorted(np.cumsum(d2), draws), n - 1)
        dc = np.maximum(sq[cand][:, None] + sq[None, :] - 2.0 * (x[cand] @ x.T), 0.0)
        dc = np.minimum(d2[None, :], dc)
        pots = dc.sum(axis=1)
        pick = int(np.argmin(pots))
        centers[c] = x[cand[pick]]
        d2, pot = dc[pick], float(pots[pick])
    return centers


def cosine_silhouette(x: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette with cosine distance (a point alone in its cluster scores 0)."""
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    dist = np.clip(1.0 - unit @ unit.T, 0.0, 2.0)
    np.fill_diagonal(dist, 0.0)
    ids = np.unique(labels)
    onehot = (labels[:, None] == ids[None, :]).astype(np.float64)
    sizes = onehot.sum(axis=0)
    sums = dist @ onehot  # (n, clusters): summed distance from each point to each cluster
    own = np.searchsorted(ids, labels)
    own_size = sizes[own]
    a = sums[np.arange(len(x)), own] / np.maximum(own_size - 1, 1)
    other = sums / sizes[None, :]
    other[np.arange(len(x)), own] = np.inf
    b = other.min(axis=1)
    s = np.where(own_size > 1, (b - a) / np.maximum(np.maximum(a, b), 1e-12), 0.0)
    return float(np.mean(s))


def cluster(vecs: Vectors, order: Sequence[tuple[int, int]]) -> Clustering:
    """k-means on unit vectors for each candidate k, keeping the best cosine silhouette (ties: smaller k)."""
    n = vecs.shape[0]
    distinct = len(np.unique(np.round(vecs, 6), axis=0)) if n else 0
    ks = choose_k_range(n, distinct)
    if not ks:
        return Clustering(tuple([0] * n), 1 if n else 0, None, ())
    best: tuple[float, int, np.ndarray] | None = None
    scores: list[tuple[int, float]] = []
    x = vecs.astype(np.float64)
    for k in ks:
        labels = kmeans(x, k, RANDOM_STATE, N_INIT)
        if len(set(labels.tolist())) < 2:
            continue
        score = cosine_silhouette(x, labels)
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
