"""Running ``pack`` with an embedder: shared by the daemon's ``pack`` method, its pack-mode watches and the
CLI's in-process fallback (when no daemon runs)."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from mempald.embed.embedder import MAX_SEQ_LEN, Embedder, Vectors
from mempald.features.pack import load_pack, pack_directory, prune_pack, write_pack, write_pack_file
from mempald.features.pack.progress import PackProgress
from mempald.features.pack.result import EmbedFn

# Model calls as the dense pass makes them (mempald.ingest.dense): grouped by length, at most 32 texts and
# 8 x 256 padded tokens. Pack embeds hundreds of windows and short sentences at once; fastembed's own batches
# of 32 padded every sentence to the longest of its batch and left onnxruntime's arena at the peak of
# 32 x 256 tokens (1.2 GB RSS in the daemon after a pack). Same vectors (tests/integration/test_dense_batches.py).
PACK_COUNT = 32
PACK_TOKENS = 8 * MAX_SEQ_LEN


def pack_embed(embedder: Embedder, progress: PackProgress | None = None) -> EmbedFn:
    on_batch = progress.embedded if progress is not None else None

    def embed(texts: Sequence[str]) -> Vectors:
        return embedder.embed_by_length(texts, PACK_COUNT, PACK_TOKENS, on_batch)
    return embed


def _settle(embedder: Embedder) -> None:
    """After a pack: give back the model's batch memory and the pipeline's garbage (the daemon's RSS goes
    back to its idle level)."""
    embedder.release_memory()
    gc.collect()


def run_pack(
    embedder: Embedder,
    root: Path,
    out: Path,
    *,
    fmt: Literal["single", "multi"] = "single",
    chunk_size: int = 512,
    compression_target: float = 6.0,
    topic: str | None = None,
    token_budget: int = 0,
    progress: PackProgress | None = None,
) -> dict[str, Any]:
    """Pack ``root`` into ``out`` (blocking); prune to ``token_budget`` when given. ``progress`` follows it.
    ``skipped`` lists the markdown files not read (a FIFO, a device, one too large: ``pack.chunking``)."""
    embed = pack_embed(embedder, progress)
    try:
        result = pack_directory(root, embed=embed, count_tokens=embedder.count_tokens, chunk_size=chunk_size,
                                compression_target=compression_target, topic=topic, progress=progress)
        plan_text = ""
        if token_budget:
            if progress is not None:
                progress.begin("pruning", 1)
            result, plan = prune_pack(result, count_tokens=embedder.count_tokens, max_tokens=token_budget,
                                      min_importance=None, embed=embed)
            plan_text = plan.describe()
            if progress is not None:
                progress.step()
    finally:
        _settle(embedder)
    if progress is not None:
        progress.begin("writing", 1)
    if fmt == "single" and out.suffix.lower() == ".md" and not out.is_dir():  # `pack -o notes.md`: that file
        out.parent.mkdir(parents=True, exist_ok=True)
        paths = write_pack_file(result, out)
    else:
        paths = write_pack(result, out, fmt)
    if progress is not None:
        progress.step()
    return {"paths": [str(p) for p in paths], "header": result.header.to_json(), "notes": list(result.notes),
            "prune": plan_text, "skipped": [s.to_json() for s in result.skipped]}


def run_prune(
    embedder: Embedder,
    file: Path,
    *,
    max_tokens: int | None,
    min_importance: float | None,
    similarity_threshold: float,
    merge: bool,
    dry_run: bool,
    output: Path | None,
) -> dict[str, Any]:
    pack = load_pack(file)
    try:
        result, plan = prune_pack(pack, count_tokens=embedder.count_tokens, max_tokens=max_tokens,
                                  min_importance=min_importance, similarity_threshold=similarity_threshold,
                                  merge=merge, embed=pack_embed(embedder))
    finally:
        _settle(embedder)
    out: dict[str, Any] = {"plan": plan.describe(), "tokens_before": plan.tokens_before,
                           "tokens_after": plan.tokens_after, "dry_run": dry_run}
    if not dry_run:
        target = output or (file if file.suffix == ".md" else file.with_suffix(".md"))
        out["paths"] = [str(p) for p in write_pack_file(result, target)]
    return out
