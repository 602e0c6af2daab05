"""``pack_directory``: a folder of markdown to a tiered, sourced summary that fits a context window.

Read (sorted) -> chunk -> embed -> dedup (cosine >= 0.92, union-find, keep the longest) -> k-means (k by
silhouette) -> label from headings -> summaries and facts -> importance. If the result is larger than the
compression target allows, it is rebuilt with fewer facts and shorter summaries, step by step; when even
the smallest step is too large the header and the JSON say by how much. Deterministic and offline.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mempald.features.pack.chunking import (
    MAX_FILE_BYTES,
    MAX_TOTAL_BYTES,
    Chunk,
    SourceFile,
    chunk_sources,
    parse_blocks,
    read_sources,
)
from mempald.features.pack.cluster import DEDUP_THRESHOLD, EMBED_WINDOW, cluster, dedup, embed_chunks, normalize
from mempald.features.pack.facts import MAX_FACTS, candidates, select_facts
from mempald.features.pack.importance import importance_scores
from mempald.features.pack.labels import label_clusters
from mempald.features.pack.progress import PackProgress
from mempald.features.pack.render import settle_tokens
from mempald.features.pack.result import (
    Duplicate,
    EmbedFn,
    PackError,
    PackHeader,
    PackResult,
    TokenCounter,
    Topic,
)
from mempald.features.pack.sentences import Sentence, file_sentences
from mempald.features.pack.summarize import ClusterInput, ExtractiveSummarizer, Summarizer, TopicDigest

SUMMARY_TOKENS = 100
OVERVIEW_TOKENS = 200
MIN_CHUNK_SIZE = 32


@dataclass(frozen=True, slots=True)
class Step:
    facts: int
    summary: int
    overview: int


# From the natural size down to the smallest useful one; the first that meets the target is used.
LADDER = (
    Step(MAX_FACTS, SUMMARY_TOKENS, OVERVIEW_TOKENS),
    Step(9, 100, 200),
    Step(8, 100, 200),
    Step(7, 90, 200),
    Step(6, 90, 180),
    Step(5, 80, 160),
    Step(4, 80, 160),
    Step(4, 70, 140),
    Step(3, 70, 140),
    Step(3, 60, 120),
    Step(2, 60, 120),
    Step(2, 50, 100),
    Step(1, 50, 100),
    Step(1, 40, 80),
    Step(1, 30, 60),
    Step(1, 25, 50),
)


def _sentences_by_chunk(sources: Sequence[SourceFile], chunks: Sequence[Chunk]) -> list[list[Sentence]]:
    """Each chunk's sentences: a sentence belongs to the chunk holding its first line."""
    by_file: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        by_file.setdefault(c.file, []).append(i)
    out: list[list[Sentence]] = [[] for _ in chunks]
    for src in sources:
        idx = by_file.get(src.path)
        if not idx:
            continue
        starts = [chunks[i].start_line for i in idx]
        blocks, _ = parse_blocks(src.lines)
        for s in file_sentences(blocks, src.path, src.index):
            pos = bisect.bisect_right(starts, s.line) - 1
            out[idx[max(pos, 0)]].append(s)
    return out


def pack_directory(
    root: Path,
    *,
    embed: EmbedFn,
    count_tokens: TokenCounter,
    chunk_size: int = 512,
    compression_target: float = 6.0,
    topic: str | None = None,
    summarizer: Summarizer | None = None,
    progress: PackProgress | None = None,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
) -> PackResult:
    """Pack every markdown file under ``root`` (sorted, hidden folders and our own output skipped).

    ``embed`` and ``count_tokens`` are the daemon's model (or any stand-in); ``summarizer`` defaults to
    the extractive one. Raises ``PackError`` for bad arguments, an empty folder or one without text.
    Reads files and nothing else: the caller writes the result with ``write_pack``. ``progress`` hears each
    stage and its steps (``mempald.features.pack.progress``). A file that is not a regular one (a FIFO, a
    device), is over ``max_file_bytes`` or past ``max_total_bytes`` of the folder is not read: the result's
    ``skipped`` names it with its reason."""
    if chunk_size < MIN_CHUNK_SIZE:
        raise PackError(f"--chunk-size must be at least {MIN_CHUNK_SIZE} tokens (got {chunk_size})")
    if not compression_target > 0:
        raise PackError(f"--compression-target must be above 0 (got {compression_target})")
    root = root.resolve()
    sources, skipped = read_sources(root, max_file_bytes, max_total_bytes)
    if progress is not None:
        progress.begin("reading", len(sources))
        progress.step(len(sources))
    if not sources:
        refused = "".join(f"; {s.file} not read: {s.detail}" for s in skipped[:5])
        raise PackError(f"no markdown files (*.md, *.markdown) under {root}{refused}")
    tokens_in = sum(count_tokens(s.text) for s in sources)
    all_chunks = chunk_sources(sources, count_tokens, chunk_size)
    if not all_chunks:
        raise PackError(f"the {len(sources)} markdown files under {root} contain no text")

    body_vecs, vecs = embed_chunks(all_chunks, embed, count_tokens, progress)
    if progress is not None:
        progress.begin("clustering", 1)
    dd = dedup(body_vecs, all_chunks, DEDUP_THRESHOLD)
    keep = list(dd.keep)
    chunks = [all_chunks[i] for i in keep]
    kvecs = vecs[keep]
    clustering = cluster(kvecs, [c.order for c in chunks])
    if progress is not None:
        progress.step()
    k = clustering.k
    labels = label_clusters(chunks, clustering.labels, k, kvecs)
    sent_all = _sentences_by_chunk(sources, all_chunks)
    dup_files: dict[int, set[str]] = {kept: {all_chunks[d].file for d in drops} for kept, drops in dd.groups}

    members: list[list[int]] = [[] for _ in range(k)]
    for pos, lab in enumerate(clustering.labels):
        members[lab].append(pos)
    inputs: list[ClusterInput] = []
    ranked_facts: list[list[tuple[float, Sentence]]] = []
    sources_of: list[tuple[str, ...]] = []
    for c in range(k):
        ids = members[c]
        centroid = normalize(kvecs[ids].mean(axis=0, keepdims=True))[0]
        sents = tuple(s for pos in ids for s in sent_all[keep[pos]])
        inputs.append(ClusterInput(labels[c], tuple(chunks[p] for p in ids), sents, centroid))
        ranked_facts.append(candidates(sents))
        files = {chunks[p].file for p in ids}
        for p in ids:
            files |= dup_files.get(keep[p], set())
        sources_of.append(tuple(sorted(files)))
    source_tokens = [sum(ci.chunks[j].tokens for j in range(len(ci.chunks))) for ci in inputs]
    centroids = [tuple(round(float(x), 6) for x in ci.centroid) for ci in inputs]
    importance = importance_scores(source_tokens, [len(r) for r in ranked_facts], centroids)

    summ: Summarizer = summarizer or ExtractiveSummarizer(embed, count_tokens)
    header = PackHeader(topic or root.name or "Knowledge Base", len(sources), tokens_in, 0, compression_target)
    stats: dict[str, object] = {
        "chunk_size": chunk_size,
        "chunks": len(all_chunks),
        "unique_chunks": len(chunks),
        "dedup_threshold": DEDUP_THRESHOLD,
        "embed_window": EMBED_WINDOW,
        "clusters": k,
        "silhouette": clustering.silhouette,
        "k_scores": {str(n): score for n, score in clustering.scores},
        "sentences": sum(len(ci.sentences) for ci in inputs),
        "summarizer": summ.name,
    }
    duplicates = tuple(
        Duplicate(
            (all_chunks[kept].file, all_chunks[kept].start_line),
            tuple((all_chunks[d].file, all_chunks[d].start_line) for d in drops),
        )
        for kept, drops in dd.groups
    )
    result: PackResult | None = None
    for step_no, step in enumerate(LADDER):
        topics: list[Topic] = []
        digests: list[TopicDigest] = []
        if progress is not None:
            progress.begin("summarizing", len(inputs) + 1)  # every topic, then the overview
        for c, ci in enumerate(inputs):
            summary = summ.summarize_cluster(ci, step.summary).strip()
            if progress is not None:
                progress.step()
            facts = select_facts(ranked_facts[c], step.facts, exclude=summary)
            topics.append(
                Topic(
                    ci.label,
                    summary,
                    tuple(facts),
                    sources_of[c],
                    len(ci.chunks),
                    source_tokens[c],
                    len(ranked_facts[c]),
                    importance[c],
                    centroids[c],
                )
            )
            digests.append(TopicDigest(ci.label, summary, ci.centroid, len(ci.chunks)))
        overview = summ.summarize_overview(digests, step.overview).strip()
        if progress is not None:
            progress.step()
        notes: tuple[str, ...] = ()
        if step_no:
            notes = (
                f"shortened for the {compression_target:g}:1 target: up to {step.facts} facts per topic, "
                f"summaries ~{step.summary} tokens, overview ~{step.overview} tokens",
            )
        result = settle_tokens(
            PackResult(
                header,
                overview,
                tuple(topics),
                tuple(s.path for s in sources),
                str(root),
                duplicates,
                {
                    **stats,
                    "reduction_step": step_no,
                    "facts_per_topic": step.facts,
                    "summary_tokens": step.summary,
                    "overview_tokens": step.overview,
                },
                notes,
                tuple(skipped),
            ),
            count_tokens,
        )
        if result.header.target_met:
            break
    assert result is not None
    return result
