"""Research-only fusion variants: measured on LoCoMo and not adopted (see ``RESEARCH_locomo.md``).

The product's fusion and rescoring are in ``mempald.search.fusion`` (min-max normalisation only). These are
the alternatives the research compared against it, kept so the numbers in ``RESEARCH_locomo.md`` can be
re-measured: z-score and DBSF normalisation (:func:`fuse_lists` / :func:`fuse` with ``method``), plain and
weighted reciprocal rank fusion (:func:`rrf_fuse`), and the rare-term extraction that was tried as a BM25
query re-weighting (:func:`rare_terms`). Pure, standard library and ``mempald.search.fusion`` only.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mempald.search.fusion import (  # noqa: E402
    DEFAULT_DENSE_WEIGHT,
    DEFAULT_LIST_WEIGHTS,
    Candidate,
    Ranked,
    combine,
    minmax_normalise,
)

DEFAULT_RRF_K = 60
"""The usual RRF constant (plain RRF loses to BM25 alone on LoCoMo)."""


# ---------------------------------------------------------------- normalisation


def zscore_normalise(cands: Sequence[Candidate]) -> dict[str, float]:
    """Standardise scores to mean 0, deviation 1 (a flat list maps to 0.0)."""
    if not cands:
        return {}
    n = len(cands)
    mean = sum(c.score for c in cands) / n
    sd = math.sqrt(sum((c.score - mean) ** 2 for c in cands) / n)
    return {c.id: (c.score - mean) / sd if sd > 0 else 0.0 for c in cands}


def dbsf_normalise(cands: Sequence[Candidate]) -> dict[str, float]:
    """Distribution-based score fusion: map ``mean ± 3 sd`` to [0, 1], clipped (Qdrant's DBSF)."""
    if not cands:
        return {}
    n = len(cands)
    mean = sum(c.score for c in cands) / n
    sd = math.sqrt(sum((c.score - mean) ** 2 for c in cands) / n)
    if sd <= 0:
        return {c.id: 0.5 for c in cands}
    lo, hi = mean - 3 * sd, mean + 3 * sd
    return {c.id: min(1.0, max(0.0, (c.score - lo) / (hi - lo))) for c in cands}


NORMALISERS: dict[str, Callable[[Sequence[Candidate]], dict[str, float]]] = {
    "minmax": minmax_normalise,
    "zscore": zscore_normalise,
    "dbsf": dbsf_normalise,
}


# ---------------------------------------------------------------- fusion


def fuse_lists(
    lists: Sequence[Sequence[Candidate]],
    weights: Sequence[float] = DEFAULT_LIST_WEIGHTS,
    method: str = "minmax",
) -> Ranked:
    """Weighted score fusion of any number of candidate lists, with a choice of normalisation.

    Each list is normalised on its own (``method``: ``minmax``, ``zscore`` or ``dbsf``); a drawer
    missing from a list gets that list's floor (0 for minmax/dbsf, the list minimum for zscore).
    The fused score is ``sum_i weights[i] * norm_i(id)``.  Returns ``(id, score)`` best first.
    ``method="minmax"`` gives exactly ``mempald.search.fusion.fuse_lists``.
    """
    if method not in NORMALISERS:
        raise ValueError(f"unknown fusion method {method!r}")
    if len(weights) != len(lists):
        raise ValueError("one weight per list")
    norm = NORMALISERS[method]
    normed = [norm(cands) for cands in lists]
    floors = [min(n.values(), default=0.0) if method == "zscore" else 0.0 for n in normed]
    return combine(normed, weights, floors)


def fuse(
    dense: Sequence[Candidate],
    sparse: Sequence[Candidate],
    dense_weight: float = DEFAULT_DENSE_WEIGHT,
    method: str = "minmax",
) -> Ranked:
    """Weighted score fusion of a dense and a sparse list (``dense_weight`` and ``1 - dense_weight``)."""
    if not 0.0 <= dense_weight <= 1.0:
        raise ValueError("dense_weight must be in [0, 1]")
    return fuse_lists([dense, sparse], [dense_weight, 1.0 - dense_weight], method)


def minmax_fuse(
    dense: Sequence[Candidate],
    sparse: Sequence[Candidate],
    dense_weight: float = DEFAULT_DENSE_WEIGHT,
) -> Ranked:
    """Min-max normalised weighted score fusion (the default normalisation).

    LoCoMo turn R@10 at the best weight: min-max 73.1, z-score 73.7, DBSF 73.3, weighted RRF
    71.4, plain RRF 63.9; in the full pipeline z-score 78.7 vs min-max 79.2, so min-max stays.
    """
    return fuse(dense, sparse, dense_weight, "minmax")


def rrf_fuse(
    lists: Sequence[Sequence[Candidate]],
    k: int = DEFAULT_RRF_K,
    weights: Sequence[float] | None = None,
) -> Ranked:
    """(Weighted) reciprocal rank fusion: ``sum_i w_i / (k + rank_i)``, rank 1-based."""
    if weights is not None and len(weights) != len(lists):
        raise ValueError("one weight per list")
    out: dict[str, float] = {}
    for li, cands in enumerate(lists):
        w = 1.0 if weights is None else weights[li]
        for rank, c in enumerate(cands, start=1):
            out[c.id] = out.get(c.id, 0.0) + w / (k + rank)
    return sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))  # ties on id, as in fusion


# ---------------------------------------------------------------- query side

_STOP_CAPS_TEXT = """
    a an and are at be but by can could did do does for from had has have how i if in is it its may might must
    of on or shall should so that the their there these they this those to was were what when where which who
    whom whose why will with would you your
"""
_STOP_CAPS = frozenset(_STOP_CAPS_TEXT.split())
_CAP_WORD = re.compile(r"\b([A-Z][a-zA-Z'\-]*[a-zA-Z]|[A-Z])\b")
_NUMBERISH = re.compile(r"\b\d[\w\-]*\b")


def rare_terms(query: str) -> list[str]:
    """Names and other rare-looking terms of a query: capitalised words and tokens with digits.

    Measured as a BM25 query re-weighting (these terms weighted x1.5/x2/x3): it *hurt* LoCoMo
    (turn R@10 73.9 -> 73.4/73.1/72.6), because the IDF modifier already weights rare terms and
    names there are the speakers, common in every drawer.  Not used by the product.

    Capitalised words are kept even at the start of a sentence unless they are common function
    words ("What", "When" ...); possessive ``'s`` is stripped.  Order of first appearance,
    no duplicates.
    """
    out: list[str] = []
    for m in _CAP_WORD.finditer(query):
        word = m.group(1)
        if word.endswith("'s"):
            word = word[:-2]
        if word.lower() in _STOP_CAPS or len(word) < 2:
            continue
        if word not in out:
            out.append(word)
    for m in _NUMBERISH.finditer(query):
        if m.group(0) not in out:
            out.append(m.group(0))
    return out
