"""Summaries behind a small interface: extractive by default, an LLM later.

The extractive summarizer picks the sentences closest to the cluster's centroid, skipping near-repeats
(cosine >= 0.85 to one already chosen), until about ``max_tokens``, and prints them in document order. The
overview names every topic, then takes the best sentence of each topic's summary in turn (largest topic
first) until its budget is spent. No network, no model beyond the embedder already loaded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mempald.features.pack.chunking import Chunk
from mempald.features.pack.cluster import embed_texts
from mempald.features.pack.facts import is_vague
from mempald.features.pack.result import EmbedFn, TokenCounter, Vectors
from mempald.features.pack.sentences import Sentence, split_plain

REPEAT_COSINE = 0.85
MIN_WORDS = 6
MAX_WORDS = 60
SHORTLIST = 30


@dataclass(frozen=True, slots=True, eq=False)
class ClusterInput:
    label: str
    chunks: tuple[Chunk, ...]  # in document order
    sentences: tuple[Sentence, ...]  # every sentence of those chunks, in document order
    centroid: Vectors  # unit vector


@dataclass(frozen=True, slots=True, eq=False)
class TopicDigest:
    label: str
    summary: str
    centroid: Vectors
    chunks: int


class Summarizer(Protocol):
    """Pluggable: the pipeline calls these with a token budget and counts the result itself."""

    @property
    def name(self) -> str: ...

    def summarize_cluster(self, cluster: ClusterInput, max_tokens: int) -> str: ...

    def summarize_overview(self, topics: Sequence[TopicDigest], max_tokens: int) -> str: ...


# Sentences that lean on context they will not have in a summary: "It ...", "the rules below".
_DEICTIC = re.compile(
    r"^(?:it|its|they|them|their|this|these|those|that|he|she|his|her|such|both)\b|"
    r"\b(?:below|above|the following|as follows|mentioned earlier)\b",
    re.IGNORECASE,
)


def _prose(s: Sentence) -> bool:
    t = s.text
    if not (MIN_WORDS <= s.words <= MAX_WORDS) or t.endswith((":", "?")) or is_vague(t) or _DEICTIC.search(t):
        return False
    return s.kind != "list" or t.rstrip("*_`\"')”’").endswith((".", "!"))


def short_label(label: str) -> str:
    """A topic's first heading: "Running plan & Nutrition" -> "Running plan"."""
    return label.split(" & ", maxsplit=1)[0]


def join_labels(labels: Sequence[str]) -> str:
    if len(labels) <= 2:
        return " and ".join(labels)
    return "; ".join(labels[:-1]) + "; and " + labels[-1]


class ExtractiveSummarizer:
    def __init__(self, embed: EmbedFn, count_tokens: TokenCounter, repeat_cosine: float = REPEAT_COSINE) -> None:
        self._embed = embed
        self._count = count_tokens
        self._repeat = repeat_cosine
        self._vecs: dict[str, Vectors] = {}
        self._tokens: dict[str, int] = {}

    @property
    def name(self) -> str:
        return "extractive"

    def prime(self, texts: Sequence[str]) -> None:
        """Embed ``texts`` in one batch (memoised): cheaper than one call per cluster."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._vecs))
        if missing:
            for text, vec in zip(missing, embed_texts(self._embed, missing), strict=True):
                self._vecs[text] = vec

    def _matrix(self, texts: Sequence[str]) -> Vectors:
        self.prime(texts)
        return np.stack([self._vecs[t] for t in texts]) if texts else np.zeros((0, 1), dtype=np.float32)

    def tokens(self, text: str) -> int:
        n = self._tokens.get(text)
        if n is None:
            n = self._tokens[text] = self._count(text)
        return n

    def _pick(self, texts: Sequence[str], vecs: Vectors, ranked: Sequence[int], max_tokens: int) -> list[int]:
        chosen: list[int] = []
        used = 0
        for i in ranked[:SHORTLIST]:
            n = self.tokens(texts[i])
            if used + n > max_tokens:
                continue
            if any(float(vecs[i] @ vecs[j]) >= self._repeat for j in chosen):
                continue
            chosen.append(i)
            used += n
            if used >= 0.9 * max_tokens:
                break
        return chosen

    def _truncate(self, text: str, max_tokens: int) -> str:
        words = text.split()
        while len(words) > 1 and self.tokens(" ".join(words) + " …") > max_tokens:
            words = words[: max(1, len(words) * 3 // 4)]
        return " ".join(words) + " …"

    def summarize_cluster(self, cluster: ClusterInput, max_tokens: int) -> str:
        cands = [s for s in cluster.sentences if _prose(s)]
        if not cands:
            cands = [s for s in cluster.sentences if s.words >= 3]
        if not cands:
            return ""
        texts = [s.text for s in cands]
        vecs = self._matrix(texts)
        sims = vecs @ cluster.centroid
        ranked = sorted(range(len(cands)), key=lambda i: (-float(sims[i]), cands[i].order))
        chosen = self._pick(texts, vecs, ranked, max_tokens)
        if not chosen:  # not even one sentence fits: shorten the best one
            return self._truncate(texts[ranked[0]], max_tokens)
        return " ".join(texts[i] for i in sorted(chosen, key=lambda i: cands[i].order))

    def summarize_overview(self, topics: Sequence[TopicDigest], max_tokens: int) -> str:
        if not topics:
            return ""
        n = len(topics)
        lead = f"Covers {n} topic{'s' if n != 1 else ''}: {join_labels([short_label(t.label) for t in topics])}."
        used = self.tokens(lead)
        per_topic: list[list[str]] = []
        for t in topics:
            sents = split_plain(t.summary)
            if not sents:
                per_topic.append([])
                continue
            vecs = self._matrix(sents)
            sims = vecs @ t.centroid
            per_topic.append([sents[i] for i in sorted(range(len(sents)), key=lambda i: (-float(sims[i]), i))])
        picked: list[list[str]] = [[] for _ in topics]
        picked_vecs: list[Vectors] = []
        for r in range(max((len(p) for p in per_topic), default=0)):
            for ti, ranked in enumerate(per_topic):
                if r >= len(ranked):
                    continue
                text = ranked[r]
                n_tok = self.tokens(text)
                if used + n_tok > max_tokens:
                    continue
                vec = self._vecs[text]
                if any(float(vec @ v) >= self._repeat for v in picked_vecs):
                    continue
                picked[ti].append(text)
                picked_vecs.append(vec)
                used += n_tok
        body: list[str] = []
        for ti, texts in enumerate(picked):
            original = split_plain(topics[ti].summary)
            body.extend(sorted(texts, key=original.index))
        return " ".join([lead, *body])
