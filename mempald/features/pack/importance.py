"""How much a topic matters, 0..1, for ``prune``.

``0.4 * size + 0.3 * fact density + 0.3 * distinctness``, each scaled so the best topic scores 1:
size is the topic's share of source tokens, fact density the qualifying fact sentences per source token,
and distinctness one minus the cosine to the nearest other topic's centroid. A small topic full of
specifics that says something no other topic says keeps its place; a large vague echo does not.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

W_SIZE = 0.4
W_DENSITY = 0.3
W_DISTINCT = 0.3


def _scaled(values: Sequence[float]) -> list[float]:
    top = max(values, default=0.0)
    return [v / top if top > 0 else 0.0 for v in values]


def importance_scores(
    source_tokens: Sequence[int], fact_candidates: Sequence[int], centroids: Sequence[Sequence[float]]
) -> list[float]:
    n = len(source_tokens)
    if n == 0:
        return []
    size = _scaled([float(t) for t in source_tokens])
    density = _scaled([f / t if t else 0.0 for f, t in zip(fact_candidates, source_tokens, strict=True)])
    if n == 1 or any(len(c) == 0 for c in centroids):
        distinct = [1.0] * n
    else:
        c = np.asarray(centroids, dtype=np.float64)
        norms = np.linalg.norm(c, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        c = c / norms
        sims = c @ c.T
        np.fill_diagonal(sims, -np.inf)
        distinct = _scaled([float(np.clip(1.0 - sims[i].max(), 0.0, 1.0)) for i in range(n)])
    return [
        round(W_SIZE * s + W_DENSITY * d + W_DISTINCT * x, 3) for s, d, x in zip(size, density, distinct, strict=True)
    ]
