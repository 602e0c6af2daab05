"""Name each cluster from its chunks' headings.

Candidates are every heading a chunk carries (its heading path and the headings inside it) plus the
folder its file sits in, since people file notes by subject. A candidate scores, summed over the
cluster's chunks that carry it, ``level weight x closeness of the chunk to the centroid``, times the
share of all chunks carrying it that sit in this cluster: frequent here, rare elsewhere, and close to the
middle of the topic wins. Titles and folders weigh more than subsection headings; generic headings
("Notes", "Overview") count for little. The best heading names the topic, and a close second is joined
with " & ". Labels are unique across topics.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import PurePosixPath

import numpy as np

from mempald.features.pack.chunking import Chunk, humanize_stem
from mempald.features.pack.result import Vectors

_GENERIC_WORDS = (
    "notes note overview introduction intro summary details misc miscellaneous todo readme index "
    "general other background context log journal draft links references resources appendix faq"
)
GENERIC = frozenset(_GENERIC_WORDS.split())
MAX_LABEL = 60
SECOND_RATIO = 0.6
FOLDER_WEIGHT = 1.0
LEVEL_WEIGHT = {0: 1.0, 1: 1.0, 2: 0.6}
DEEP_WEIGHT = 0.4
GENERIC_WEIGHT = 0.2


def _candidates(chunk: Chunk) -> dict[str, float]:
    """Candidate label -> weight for one chunk (the heaviest weight if a heading repeats)."""
    out: dict[str, float] = {}
    folder = PurePosixPath(chunk.file).parent.name
    if folder:
        out[humanize_stem(folder)] = FOLDER_WEIGHT
    for level, text in chunk.headings:
        if text:
            w = LEVEL_WEIGHT.get(level, DEEP_WEIGHT)
            out[text] = max(out.get(text, 0.0), w)
    for text in out:
        if text.lower() in GENERIC:
            out[text] *= GENERIC_WEIGHT
    return out


def label_clusters(chunks: Sequence[Chunk], labels: Sequence[int], k: int, vecs: Vectors) -> list[str]:
    """One label per cluster; ``vecs`` are the chunks' unit vectors (rows match ``chunks``)."""
    members: list[list[int]] = [[] for _ in range(k)]
    for i, lab in enumerate(labels):
        members[lab].append(i)
    closeness = np.zeros(len(chunks), dtype=np.float64)
    for ids in members:
        if ids:
            centroid = vecs[ids].mean(axis=0)
            centroid /= np.linalg.norm(centroid) or 1.0
            closeness[ids] = 0.5 + 0.5 * np.clip(vecs[ids] @ centroid, 0.0, 1.0)
    cands = [_candidates(c) for c in chunks]
    carriers: dict[str, int] = defaultdict(int)
    for cand in cands:
        for text in cand:
            carriers[text] += 1
    out: list[str] = []
    used: set[str] = set()
    parts: set[str] = set()  # headings already naming a topic
    for c in range(k):
        score: dict[str, float] = defaultdict(float)
        here: dict[str, int] = defaultdict(int)
        for i in members[c]:
            for text, w in cands[i].items():
                score[text] += w * float(closeness[i])
                here[text] += 1
        for text in score:
            score[text] *= here[text] / carriers[text]
        ranked = sorted(score, key=lambda h: (-round(score[h], 9), len(h), h))
        label = ""
        for i, h in enumerate(ranked):
            if h in parts:
                continue
            label = h
            rest = [x for x in ranked[i + 1 :] if x not in parts and x.lower() not in h.lower()]
            if rest and h.lower() not in GENERIC:
                second = rest[0]
                if (
                    score[second] >= SECOND_RATIO * score[h]
                    and len(h) + len(second) + 3 <= MAX_LABEL
                    and h.lower() not in second.lower()
                ):
                    label = f"{h} & {second}"
                    parts.add(second)
            parts.add(h)
            break
        if not label:
            label = ranked[0] if ranked else f"Topic {c + 1}"
        label = label[:MAX_LABEL].rstrip()
        base, n = label, 2
        while label in used:
            label = f"{base} ({n})"
            n += 1
        used.add(label)
        out.append(label)
    return out
