"""Make a pack smaller: merge near-duplicate topics, drop unimportant ones, enforce a token budget.

Order: merge first (two halves of one subject are judged together), then ``min_importance``, then the
budget. The budget drops whole topics, least important first, down to one; then trims that topic's facts
(lowest score first), then its summary, then the overview, and finally the last topic. The result is never
above ``max_tokens``: a budget smaller than the bare header is refused with ``PackError``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mempald.features.pack.cluster import embed_texts
from mempald.features.pack.facts import MAX_FACTS, near_repeat
from mempald.features.pack.importance import importance_scores
from mempald.features.pack.render import settle_tokens
from mempald.features.pack.result import EmbedFn, Fact, PackError, PackResult, TokenCounter, Topic
from mempald.features.pack.sentences import split_plain
from mempald.features.pack.summarize import join_labels, short_label

MAX_LABEL = 80
_WORD = re.compile(r"[A-Za-z0-9][\w'’-]*")


@dataclass(frozen=True, slots=True)
class DroppedTopic:
    label: str
    importance: float
    reason: str  # "min-importance" | "budget"


@dataclass(frozen=True, slots=True)
class MergedTopics:
    labels: tuple[str, ...]
    into: str
    similarity: float  # the lowest pairwise centroid cosine that joined the group


@dataclass(frozen=True, slots=True)
class PrunePlan:
    tokens_before: int
    tokens_after: int
    max_tokens: int | None
    min_importance: float | None
    merged: tuple[MergedTopics, ...]
    dropped: tuple[DroppedTopic, ...]
    trimmed: tuple[str, ...]
    kept: tuple[tuple[str, float], ...]  # (label, importance) of the topics that remain

    @property
    def budget_met(self) -> bool:
        return self.max_tokens is None or self.tokens_after <= self.max_tokens

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "max_tokens": self.max_tokens,
            "min_importance": self.min_importance,
            "budget_met": self.budget_met,
            "merged": [{"labels": list(m.labels), "into": m.into, "similarity": m.similarity} for m in self.merged],
            "dropped": [{"label": d.label, "importance": d.importance, "reason": d.reason} for d in self.dropped],
            "trimmed": list(self.trimmed),
            "kept": [{"label": label, "importance": imp} for label, imp in self.kept],
        }

    def describe(self) -> str:
        budget = f" (budget {self.max_tokens:,})" if self.max_tokens is not None else ""
        lines = [f"tokens: {self.tokens_before:,} -> {self.tokens_after:,}{budget}"]
        for m in self.merged:
            names = " + ".join(f'"{x}"' for x in m.labels)
            lines.append(f'merge: {names} -> "{m.into}" (similarity {m.similarity:.2f})')
        for d in self.dropped:
            why = "below --min-importance" if d.reason == "min-importance" else "over the token budget"
            lines.append(f'drop: "{d.label}" (importance {d.importance:.2f}): {why}')
        lines += [f"trim: {t}" for t in self.trimmed]
        lines += [f'keep: "{label}" (importance {imp:.2f})' for label, imp in self.kept]
        if not (self.merged or self.dropped or self.trimmed):
            lines.append("nothing to prune")
        return "\n".join(lines)


def _n(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _tokens(r: PackResult, count: TokenCounter) -> int:
    return settle_tokens(r, count).header.tokens_out


def _centroids(topics: Sequence[Topic], embed: EmbedFn | None) -> np.ndarray | None:
    if topics and all(t.centroid for t in topics) and len({len(t.centroid) for t in topics}) == 1:
        c = np.asarray([t.centroid for t in topics], dtype=np.float64)
    elif embed is not None and topics:
        c = embed_texts(embed, [f"{t.label}. {t.summary}" for t in topics]).astype(np.float64)
    else:
        return None
    norms = np.linalg.norm(c, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: np.ndarray = c / norms
    return unit


def _words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def _merge_summaries(summaries: Sequence[str], count: TokenCounter) -> str:
    budget = max((count(s) for s in summaries), default=0)
    per = [split_plain(s) for s in summaries]
    chosen: list[str] = []
    seen: list[frozenset[str]] = []
    used = 0
    for r in range(max((len(p) for p in per), default=0)):
        for sents in per:
            if r >= len(sents):
                continue
            ws = _words(sents[r])
            n = count(sents[r])
            if any(near_repeat(ws, o) for o in seen) or (chosen and used + n > budget):
                continue
            chosen.append(sents[r])
            seen.append(ws)
            used += n
    return " ".join(chosen)


def _merge(group: Sequence[Topic], centroids: np.ndarray, file_order: dict[str, int], count: TokenCounter) -> Topic:
    labels = list(dict.fromkeys(t.label for t in group))
    label = " & ".join(labels)
    if len(label) > MAX_LABEL:
        label = f"{labels[0]} & {len(labels) - 1} more"
    facts: list[Fact] = []
    seen: list[frozenset[str]] = []
    for f in sorted((f for t in group for f in t.facts), key=lambda f: (-f.score, file_order.get(f.file, 0), f.line)):
        ws = _words(f.text)
        if len(facts) < MAX_FACTS and not any(near_repeat(ws, o) for o in seen):
            facts.append(f)
            seen.append(ws)
    facts.sort(key=lambda f: (file_order.get(f.file, 0), f.line))
    weights = np.asarray([max(1, t.source_tokens) for t in group], dtype=np.float64)
    centroid = (centroids * weights[:, None]).sum(axis=0)
    centroid /= np.linalg.norm(centroid) or 1.0
    return Topic(
        label=label,
        summary=_merge_summaries([t.summary for t in group], count),
        facts=tuple(facts),
        sources=tuple(sorted({s for t in group for s in t.sources})),
        chunks=sum(t.chunks for t in group),
        source_tokens=sum(t.source_tokens for t in group),
        fact_candidates=sum(t.fact_candidates for t in group),
        importance=0.0,
        centroid=tuple(round(float(x), 6) for x in centroid),
    )


def _rescore(topics: list[Topic]) -> list[Topic]:
    scores = importance_scores(
        [t.source_tokens for t in topics], [t.fact_candidates for t in topics], [t.centroid for t in topics]
    )
    return [dataclasses.replace(t, importance=s) for t, s in zip(topics, scores, strict=True)]


def _lead(topics: Sequence[Topic]) -> str:
    n = len(topics)
    return f"Covers {n} topic{'s' if n != 1 else ''}: {join_labels([short_label(t.label) for t in topics])}."


def _rebuild_overview(overview: str, topics: Sequence[Topic], extractive: bool, drop_from: Sequence[str] = ()) -> str:
    """Renew the overview's opening list of topics, and remove the sentences it took from the summaries
    in ``drop_from`` (topics dropped as unimportant). An overview not written by the extractive
    summarizer is left alone."""
    if not extractive:
        return overview
    sents = split_plain(overview)
    has_lead = bool(sents) and sents[0].startswith("Covers ")
    body = sents[1:] if has_lead else sents
    body = [x for x in body if not any(x in d for d in drop_from) or any(x in t.summary for t in topics)]
    if has_lead and topics:
        return " ".join([_lead(topics), *body])
    return " ".join(body)


def _enforce_budget(
    budget: int,
    count: TokenCounter,
    current: Callable[[], PackResult],
    topics: list[Topic],
    trimmed: list[str],
    dropped: list[DroppedTopic],
    file_order: dict[str, int],
) -> None:
    """Shrink ``topics`` in place until ``current()`` fits ``budget`` or only the overview is left.

    1. Drop whole topics, least important first, while the excess is at least the topic's own cost.
    2. Trim facts, lowest score first, from the topic with the most facts (tier 2 goes first).
    3. Trim summaries from the end, longest summary first, down to one sentence each (tier 1).
    4. Drop the remaining topics, least important first. The overview (tier 0) is trimmed by the caller.
    """

    def tokens() -> int:
        return _tokens(current(), count)

    def worst() -> int:
        return min(range(len(topics)), key=lambda i: (topics[i].importance, -i))

    def drop(i: int) -> None:
        dropped.append(DroppedTopic(topics[i].label, topics[i].importance, "budget"))
        del topics[i]

    while len(topics) > 1 and (now := tokens()) > budget:
        i = worst()
        removed = topics.pop(i)
        without = tokens()
        topics.insert(i, removed)
        if now - budget < now - without:
            break
        drop(i)
    cut: dict[str, int] = {}
    while tokens() > budget and any(t.facts for t in topics):
        i = max(range(len(topics)), key=lambda i: (len(topics[i].facts), -topics[i].importance, i))
        facts = list(topics[i].facts)
        facts.remove(min(facts, key=lambda f: (f.score, -file_order.get(f.file, 0), -f.line)))
        topics[i] = dataclasses.replace(topics[i], facts=tuple(facts))
        cut[topics[i].label] = cut.get(topics[i].label, 0) + 1
    trimmed += [f'{_n(n, "fact")} from "{label}"' for label, n in cut.items()]
    cut = {}
    while tokens() > budget:
        longer = [i for i, t in enumerate(topics) if len(split_plain(t.summary)) > 1]
        if not longer:
            break
        i = max(longer, key=lambda i: (count(topics[i].summary), -topics[i].importance, i))
        topics[i] = dataclasses.replace(topics[i], summary=" ".join(split_plain(topics[i].summary)[:-1]))
        cut[topics[i].label] = cut.get(topics[i].label, 0) + 1
    trimmed += [f'{_n(n, "summary sentence")} from "{label}"' for label, n in cut.items()]
    while topics and tokens() > budget:
        drop(worst())


def prune_pack(
    pack_json: dict[str, Any] | PackResult,
    *,
    count_tokens: TokenCounter,
    max_tokens: int | None,
    min_importance: float | None,
    similarity_threshold: float = 0.80,
    merge: bool = True,
    embed: EmbedFn | None = None,
) -> tuple[PackResult, PrunePlan]:
    """The pruned pack and the plan that produced it (``--dry-run`` prints the plan and writes nothing).

    ``max_tokens`` of None or 0 means no budget."""
    result = pack_json if isinstance(pack_json, PackResult) else PackResult.from_json(pack_json)
    if max_tokens is not None and max_tokens < 0:
        raise PackError(f"--max-tokens must be 0 (no limit) or positive (got {max_tokens})")
    budget = max_tokens or None
    if min_importance is not None and not 0.0 <= min_importance <= 1.0:
        raise PackError(f"--min-importance must be between 0 and 1 (got {min_importance})")
    if not 0.0 < similarity_threshold <= 1.0:
        raise PackError(f"--similarity-threshold must be in (0, 1] (got {similarity_threshold})")
    count = count_tokens
    extractive = result.stats.get("summarizer", "extractive") == "extractive"
    before = _tokens(result, count)
    topics = list(result.topics)
    merged: list[MergedTopics] = []
    dropped: list[DroppedTopic] = []
    trimmed: list[str] = []
    file_order = {f: i for i, f in enumerate(result.files)}
    origins: dict[str, str] = {}  # merged topic label -> the summaries it was made from

    if merge and len(topics) > 1:
        c = _centroids(topics, embed)
        if c is None:
            trimmed.append("merge skipped: the pack has no topic centroids and no embedder was given")
        else:
            sims = c @ c.T
            parent = list(range(len(topics)))

            def find(x: int) -> int:
                while parent[x] != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                return x

            joined: dict[int, float] = {}
            for a in range(len(topics)):
                for b in range(a + 1, len(topics)):
                    if sims[a, b] >= similarity_threshold:
                        ra, rb = find(a), find(b)
                        low = min(joined.get(ra, 1.0), joined.get(rb, 1.0), float(sims[a, b]))
                        if ra != rb:
                            parent[max(ra, rb)] = min(ra, rb)
                        joined[min(ra, rb)] = low
            groups: dict[int, list[int]] = {}
            for i in range(len(topics)):
                groups.setdefault(find(i), []).append(i)
            new_topics: list[Topic] = []
            for root_i in sorted(groups):
                ids = groups[root_i]
                if len(ids) == 1:
                    new_topics.append(topics[ids[0]])
                    continue
                ids.sort(key=lambda i: (-topics[i].source_tokens, i))
                group = [topics[i] for i in ids]
                m = _merge(group, c[ids], file_order, count)
                merged.append(MergedTopics(tuple(t.label for t in group), m.label, round(joined[root_i], 3)))
                new_topics.append(m)
                origins[m.label] = " ".join(origins.get(t.label, t.summary) for t in group)
            if merged:
                topics = _rescore(new_topics)

    pre_drop = list(topics)
    if min_importance is not None and topics:
        keep = [t for t in topics if t.importance >= min_importance]
        if not keep:
            best = max(topics, key=lambda t: t.importance)
            keep = [best]
            trimmed.append(f'every topic is below --min-importance {min_importance:g}: kept "{best.label}"')
        dropped += [DroppedTopic(t.label, t.importance, "min-importance") for t in topics if t not in keep]
        topics = keep

    gone = [origins.get(t.label, t.summary) for t in pre_drop if t not in topics]
    overview = _rebuild_overview(result.overview, topics, extractive, gone) if (merged or dropped) else result.overview

    def current() -> PackResult:
        return dataclasses.replace(result, topics=tuple(topics), overview=overview)

    if budget is not None:
        _enforce_budget(budget, count, current, topics, trimmed, dropped, file_order)
        overview = _rebuild_overview(overview, topics, extractive)
        sents = split_plain(overview)
        n_sents = len(sents)
        while sents and _tokens(current(), count) > budget:
            sents.pop()
            overview = " ".join(sents)
        if len(sents) != n_sents:
            trimmed.append(f"overview from {_n(n_sents, 'sentence')} to {len(sents)}" if sents else "overview removed")
        if _tokens(current(), count) > budget:
            raise PackError(
                f"--max-tokens {budget:,} is below the smallest possible pack "
                f"({_tokens(current(), count):,} tokens: the header alone)"
            )
        if dropped or trimmed:
            trimmed.append(f"budget {budget:,} tokens enforced")

    notes = [*result.notes]
    notes += [f"merged {' + '.join(m.labels)} (similarity {m.similarity:.2f})" for m in merged]
    notes += [f'dropped "{d.label}" (importance {d.importance:.2f}, {d.reason})' for d in dropped]
    notes += [f"trimmed {t}" for t in trimmed]
    final = settle_tokens(dataclasses.replace(current(), notes=tuple(notes)), count)
    plan = PrunePlan(
        tokens_before=before,
        tokens_after=final.header.tokens_out,
        max_tokens=budget,
        min_importance=min_importance,
        merged=tuple(merged),
        dropped=tuple(dropped),
        trimmed=tuple(trimmed),
        kept=tuple((t.label, t.importance) for t in final.topics),
    )
    return final, plan
