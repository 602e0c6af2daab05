"""Hybrid-search fusion and rescoring: pure functions on candidate lists.

Stdlib only, no I/O.  The search path fetches two candidate lists from the store in one
``query_batch`` (dense MiniLM cosine and BM25 sparse with the IDF modifier) and hands them here.

Pipeline (the defaults, as ``mempald.search.ranking`` runs it): fetch ``DEFAULT_DEPTH`` dense and
sparse candidates (each drawer indexed with the one before it), :func:`fuse` them with min-max and
``DEFAULT_DENSE_WEIGHT`` -> :func:`temporal_boost` in the window of ``mempald.search.temporal`` ->
:func:`neighbour_boost` -> :func:`session_boost` -> :func:`spread_sessions` -> :func:`dedup`.
:func:`fuse_lists` fuses any number of lists (the first round's four-list layout, ``DEFAULT_LIST_WEIGHTS``).

Defaults were chosen on LoCoMo (10 conversations, 5,882 turns, 1,982 questions with evidence,
no LLM, default MiniLM int8 model; see ``bench/RESEARCH_locomo.md``) and kept only where the
idea is general (nothing here knows about LoCoMo's speakers, categories or answers).  The variants
that were measured and not adopted (z-score and DBSF normalisation, RRF, rare-term weighting) live in
``bench/research_fusion.py``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = [
    "DEFAULT_DEDUP_THRESHOLD",
    "DEFAULT_DENSE_WEIGHT",
    "DEFAULT_DEPTH",
    "DEFAULT_LIST_WEIGHTS",
    "DEFAULT_MIN_RELEVANCE",
    "DEFAULT_NEIGHBOUR_DECAY",
    "DEFAULT_NEIGHBOUR_FORWARD",
    "DEFAULT_SESSION_TOP",
    "DEFAULT_SESSION_WEIGHT",
    "DEFAULT_SPREAD_AFTER",
    "DEFAULT_TEMPORAL_BOOST",
    "RELEVANCE_WEIGHTS",
    "Candidate",
    "bm25_idf",
    "combine",
    "dedup",
    "fuse",
    "fuse_lists",
    "keyword_evidence",
    "minmax_normalise",
    "neighbour_boost",
    "relevance",
    "session_boost",
    "spread_sessions",
    "temporal_boost",
]

DEFAULT_DEPTH = 100
"""Candidates fetched from each list before fusion.  Issue 24 ablation (2 folds of LoCoMo conversations, see
``bench/RESEARCH_locomo.md``): 100 beats 50 on both folds and every large category; 200 does not beat 100."""

DEFAULT_DENSE_WEIGHT = 0.4
"""Weight of the dense list in two-list fusion; the sparse list gets ``1 - dense_weight``.  MiniLM alone is far
weaker than BM25 on conversation (dense only 0.557 vs BM25 only 0.772 turn R@10).  Issue 24 ablation: 0.3 (the
old default) did not beat equal weights on the first fold; 0.4 beats 0.5, 0.3 on average, and BM25 alone on both
folds and every large category."""

DEFAULT_LIST_WEIGHTS = (0.3, 0.7, 0.35, 0.15)
"""Weights for :func:`fuse_lists` over ``[dense(with context), sparse(with context), sparse(turn
alone), dense(turn alone)]``.  Adding the turn-alone lists to the two context lists leaves R@10
about equal but lifts MRR 0.465 -> 0.553 and NDCG@10 0.528 -> 0.589: the context copy finds the
exchange, the bare copy says which turn of it answers."""

DEFAULT_NEIGHBOUR_DECAY = 0.8
"""Share of a hit's score given to the drawer just *before* it in its session (0 disables): a drawer is indexed
with the one before it, so a hit that matched through its context points back at it.  Off, turn R@10 falls
0.028 / 0.043 and session R@10 0.003 / 0.003 on the two folds (multi-hop -0.077, temporal -0.054), and on the
messaging view 0.010 / 0.018 (``bench/RESEARCH_locomo.md``, eighth round)."""

DEFAULT_NEIGHBOUR_FORWARD = 0.0
"""Share of a hit's score given to the drawer just *after* it, whatever the hit says (0: none).  Issue 24
ablation: the old 0.4 lost to 0 on the second fold and on every large category; the turn after a hit is lifted
only when the hit asks something (:data:`DEFAULT_QUESTION_FORWARD`)."""

DEFAULT_QUESTION_FORWARD = 0.6
"""Share of a hit's score given to the drawer after it when the hit asks something (a question mark in its
text): the answer to a question is the turn that follows it (issue 24; see ``bench/RESEARCH_locomo.md``)."""

DEFAULT_SPREAD_AFTER = 10
"""Hits below this rank are re-ordered so each new session's best hit comes first (:func:`spread_sessions`);
the first 10 are untouched.  Session R@10 +0.003 / +0.004 on the two folds."""

DEFAULT_SESSION_WEIGHT = 0.0
"""Share of the session's strength added to each of its drawers (0: off, the default).  Issue 24 ablation: 0.2
(the old default) gained turn R@10 on both folds but lost on multi-hop questions and session R@10 on the second
fold, so it does not hold; kept as an option."""

DEFAULT_SESSION_TOP = 3
"""How many of a session's best drawer scores make up its strength in :func:`session_boost`."""

DEFAULT_TEMPORAL_BOOST = 0.5
"""Relative boost for drawers stamped inside the query's date window (0 disables).  Issue 24 ablation: 0.5 beats
0 on both folds and every large category; the old 1.0 did not beat 0.5 on the second fold."""

DEFAULT_DEDUP_THRESHOLD = 0.9
"""Word-set Jaccard above which a lower-ranked drawer is dropped as a near-duplicate.  Neutral on
LoCoMo (it has no duplicate turns); meant for re-ingested or quoted text in real stores."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One hit of one retriever: a drawer id and the retriever's raw score (higher is better)."""

    id: str
    score: float


Ranked = list[tuple[str, float]]


def best_first(scores: Mapping[str, float]) -> Ranked:
    # Ties break on id so the order is deterministic.
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


# ---------------------------------------------------------------- normalisation


def minmax_normalise(cands: Sequence[Candidate]) -> dict[str, float]:
    """Scale scores to [0, 1] by the list's own min and max (a flat list maps to 1.0)."""
    if not cands:
        return {}
    lo = min(c.score for c in cands)
    hi = max(c.score for c in cands)
    span = hi - lo
    return {c.id: (c.score - lo) / span if span > 0 else 1.0 for c in cands}


# ---------------------------------------------------------------- fusion


def combine(
    normed: Sequence[Mapping[str, float]],
    weights: Sequence[float],
    floors: Sequence[float] | None = None,
) -> Ranked:
    """The weighted sum of normalised lists, ``sum_i weights[i] * normed_i(id)``, best first.

    A drawer missing from list ``i`` gets ``floors[i]`` there (0 when ``floors`` is ``None``).
    """
    if len(weights) != len(normed):
        raise ValueError("one weight per list")
    floor = [0.0] * len(normed) if floors is None else floors
    keys: set[str] = set().union(*normed) if normed else set()
    out = {
        key: sum(w * n.get(key, f) for w, n, f in zip(weights, normed, floor, strict=True)) for key in keys
    }
    return best_first(out)


def fuse_lists(
    lists: Sequence[Sequence[Candidate]],
    weights: Sequence[float] = DEFAULT_LIST_WEIGHTS,
) -> Ranked:
    """Weighted min-max score fusion of any number of candidate lists.

    Each list is min-max normalised on its own; a drawer missing from a list gets 0 there.  The fused
    score is ``sum_i weights[i] * norm_i(id)``.  Returns ``(id, score)`` best first.
    """
    if len(weights) != len(lists):
        raise ValueError("one weight per list")
    return combine([minmax_normalise(cands) for cands in lists], weights)


def fuse(
    dense: Sequence[Candidate],
    sparse: Sequence[Candidate],
    dense_weight: float = DEFAULT_DENSE_WEIGHT,
) -> Ranked:
    """Min-max score fusion of a dense and a sparse list (``dense_weight`` and ``1 - dense_weight``).

    LoCoMo turn R@10 at the best weight: min-max 73.1, z-score 73.7, DBSF 73.3, weighted RRF 71.4, plain
    RRF 63.9; in the full pipeline z-score 78.7 vs min-max 79.2, so min-max stays (the other variants are
    in ``bench/research_fusion.py``).
    """
    if not 0.0 <= dense_weight <= 1.0:
        raise ValueError("dense_weight must be in [0, 1]")
    return fuse_lists([dense, sparse], [dense_weight, 1.0 - dense_weight])


# ---------------------------------------------------------------- rescoring


def _scores(ranked: Iterable[tuple[str, float]]) -> dict[str, float]:
    return dict(ranked)


def neighbour_boost(
    ranked: Iterable[tuple[str, float]],
    positions: Mapping[str, tuple[Hashable, int]],
    decay: float = DEFAULT_NEIGHBOUR_DECAY,
    radius: int = 1,
    forward_decay: float | None = None,
    questions: Collection[str] = (),
    question_forward: float = 0.0,
) -> Ranked:
    """Lift the drawers next to each hit: a drawer gets ``base + max(gain)`` over its neighbours.

    A hit at position ``p`` with score ``s`` gives the drawer ``d <= radius`` *before* it
    ``decay**d * s`` and the drawer ``d`` *after* it ``forward_decay**d * s`` (``forward_decay``
    ``None`` means the same as ``decay``).  The two differ because a drawer is indexed with the one
    before it as context: a hit often matched through its context, so the turn before it is the
    likelier answer, while the turn after a hit already carries the hit's words itself.

    ``positions`` maps a drawer id to ``(session_key, position)``; drawers that are not in it are
    neither boosted nor propagate.  Neighbours absent from ``ranked`` (score 0) are pulled in when
    a hit next to them is strong: this is how a hit expands to its exchange.

    A hit in ``questions`` (a drawer that asks something) gives the drawer after it at least
    ``question_forward``: the answer to a question is the turn that follows it.
    """
    base = _scores(ranked)
    fwd = decay if forward_decay is None else forward_decay
    if (decay <= 0 and fwd <= 0 and question_forward <= 0) or radius <= 0:
        return best_first(base)
    at: dict[tuple[Hashable, int], str] = {pos: key for key, pos in positions.items()}
    out = dict(base)
    for key, score in base.items():
        pos = positions.get(key)
        if pos is None or score <= 0:
            continue
        sess, p = pos
        ahead = max(fwd, question_forward) if key in questions else fwd
        for d in range(1, radius + 1):
            for q, share in ((p - d, decay), (p + d, ahead)):
                if share <= 0:
                    continue
                nb = at.get((sess, q))
                if nb is not None:
                    out[nb] = max(out.get(nb, 0.0), base.get(nb, 0.0) + score * share**d)
    return best_first(out)


def session_boost(
    ranked: Iterable[tuple[str, float]],
    positions: Mapping[str, tuple[Hashable, int]],
    weight: float = DEFAULT_SESSION_WEIGHT,
    top: int = DEFAULT_SESSION_TOP,
) -> Ranked:
    """Add ``weight`` times its session's strength to every ranked drawer of that session.

    A session's strength is the sum of its ``top`` best drawer scores (``top=1``: its best
    score, which leaves the order of sessions by their best drawer unchanged; ``top>1`` lets a
    session with several good hits overtake one with a single lucky hit).
    """
    base = _scores(ranked)
    if weight <= 0:
        return best_first(base)
    per: dict[Hashable, list[float]] = {}
    for key, score in base.items():
        pos = positions.get(key)
        if pos is not None:
            per.setdefault(pos[0], []).append(score)
    strength = {sess: sum(sorted(v, reverse=True)[:top]) for sess, v in per.items()}
    out = {}
    for key, score in base.items():
        pos = positions.get(key)
        out[key] = score + weight * strength[pos[0]] if pos is not None else score
    return best_first(out)


_WORD = re.compile(r"[a-z0-9]+")


def _tokens(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def dedup(
    ranked: Sequence[tuple[str, float]],
    texts: Mapping[str, str],
    threshold: float = DEFAULT_DEDUP_THRESHOLD,
    keep: int | None = None,
) -> Ranked:
    """Drop drawers whose word set is ``>= threshold`` Jaccard-similar to a better-ranked one.

    With ``keep``, stop once ``keep`` drawers are kept (the rest is returned unchecked): the caller
    only shows that many, and the pairwise check is quadratic (250 candidates cost ~30 ms).
    """
    kept: Ranked = []
    seen: list[set[str]] = []
    for n, (key, score) in enumerate(ranked):
        if keep is not None and len(kept) >= keep:
            return kept + list(ranked[n:])
        toks = _tokens(texts.get(key, ""))
        dup = False
        if toks:
            size = len(toks)
            for other in seen:
                # |A & B| / |A | B| <= min/max of the sizes: skip pairs that cannot reach the threshold
                if min(size, len(other)) < threshold * max(size, len(other)):
                    continue
                union = len(toks | other)
                if union and len(toks & other) / union >= threshold:
                    dup = True
                    break
        if not dup:
            kept.append((key, score))
            seen.append(toks)
    return kept


def spread_sessions(
    ranked: Sequence[tuple[str, float]],
    positions: Mapping[str, tuple[Hashable, int]],
    after: int = DEFAULT_SPREAD_AFTER,
) -> Ranked:
    """Keep the first ``after`` hits; below them, put each not-yet-seen session's best hit first.

    Scores are kept as they are (the tail is then no longer sorted by score).  The head is the
    answer; the tail is for browsing, where a hit from another session is worth more than a fifth
    hit from a session already shown.  Order among sessions stays the order of their best hits.
    ``after < 0`` disables.
    """
    if after < 0 or len(ranked) <= after:
        return list(ranked)
    head = list(ranked[:after])
    seen = {positions[k][0] for k, _ in head if k in positions}
    firsts: Ranked = []
    others: Ranked = []
    for key, score in ranked[after:]:
        pos = positions.get(key)
        if pos is not None and pos[0] not in seen:
            seen.add(pos[0])
            firsts.append((key, score))
        else:
            others.append((key, score))
    return head + firsts + others


def temporal_boost(
    ranked: Iterable[tuple[str, float]],
    timestamps: Mapping[str, datetime],
    window: tuple[datetime, datetime] | None,
    boost: float = DEFAULT_TEMPORAL_BOOST,
    slack: timedelta = timedelta(days=0),
) -> Ranked:
    """Multiply by ``1 + boost`` the score of drawers stamped inside ``window`` (widened by ``slack``).

    A soft boost, never a filter: questions usually ask *when* something happened, so a date in
    the question is a hint about where to look, not a constraint.
    """
    base = _scores(ranked)
    if window is None or boost <= 0:
        return best_first(base)
    lo, hi = window[0] - slack, window[1] + slack
    out = {}
    for key, score in base.items():
        ts = timestamps.get(key)
        out[key] = score * (1.0 + boost) if ts is not None and lo <= ts <= hi else score
    return best_first(out)


# ---------------------------------------------------------------- relevance (the calibrated score)

RELEVANCE_WEIGHTS = (-5.226, 5.315, 1.181, 0.886)
"""Logistic weights ``(bias, dense, coverage, rarity)`` of :func:`relevance`.

Chosen by ``bench/recall.py --fit`` on its two prompt sets (67 answerable + 45 unrelated coding prompts on the real
Claude Code, Codex and Aider fixtures; 1,982 LoCoMo questions asked in their own conversation and in another):
the direction of the linear score ``9 * dense + 2 * coverage + 1.5 * rarity`` had, among those tried, the best
recall gain on every half of both sets; Platt scaling (the logistic regression of "this candidate is the
prompt's evidence" on that score, each set weighted equally) turned it into these weights. So ``relevance`` is
the estimated probability that a hit is the evidence its query asks for: the top hit of an answerable question
is typically 0.2-0.6, a hit sharing an exact error string or identifier with the query above 0.9, and the best
hit of a query about something the palace does not hold below 0.1."""

DEFAULT_MIN_RELEVANCE = 0.02
"""The search floor: hits whose :func:`relevance` is below it are not returned (``search --min-score``).  Low
on purpose (search is for looking; recall, which injects, has its own floor, ``hooks.recall_threshold``): every
LoCoMo evidence turn that search ranks in the first ten has relevance 0.025 or more (``bench/locomo.py``: the
figures are the same with and without the floor), and a hit that shares neither words nor meaning with the
query falls below it."""

RARITY_CAP = 3.0
""":func:`keyword_evidence` counts at most this many 'rarest-possible words' of matched evidence."""


def bm25_idf(df: int, n: int) -> float:
    """The IDF the store applies to a term found in ``df`` of ``n`` drawers (Qdrant's BM25 formula)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def keyword_evidence(matched: Iterable[float], query_total: float, ceiling: float) -> tuple[float, float]:
    """``(coverage, rarity)`` of a drawer from the IDFs of the query terms it contains.

    ``coverage`` is the IDF-weighted share of the query's terms the drawer holds (``query_total`` is the sum
    over all of them), so rare words (identifiers, paths, error names) count for more than common ones.
    ``rarity`` is the matched IDF in units of ``ceiling``, the IDF of a word found in no other drawer
    (capped at :data:`RARITY_CAP`): it says how much unusual vocabulary the drawer shares with the query, so
    a short query of common words ("fix the error") cannot look like strong evidence by covering itself.
    """
    mass = sum(matched)
    coverage = mass / query_total if query_total > 0 else 0.0
    rarity = min(RARITY_CAP, mass / ceiling) if ceiling > 0 else 0.0
    return min(1.0, coverage), rarity


def relevance(dense: float, coverage: float, rarity: float,
              weights: Sequence[float] = RELEVANCE_WEIGHTS) -> float:
    """The calibrated relevance of a hit, in [0, 1]: the estimated probability that the drawer holds what the
    query is about, ``sigmoid(b + w_d * dense + w_c * coverage + w_r * rarity)``.

    Dense cosine and keyword evidence (:func:`keyword_evidence`) both count on this one scale; the weights
    were fitted by logistic regression on ``bench/recall.py``'s labelled prompts (see that module).
    """
    b, wd, wc, wr = weights
    z = b + wd * dense + wc * coverage + wr * rarity
    return 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0
