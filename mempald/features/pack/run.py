"""Running ``pack`` with an embedder: shared by the daemon's ``pack`` method, its pack-mode watches and the
CLI's in-process fallback (when no daemon runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from mempald.embed.embedder import Embedder
from mempald.features.pack import load_pack, pack_directory, prune_pack, write_pack, write_pack_file


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
) -> dict[str, Any]:
    """Pack ``root`` into ``out`` (blocking); prune to ``token_budget`` when given."""
    result = pack_directory(root, embed=embedder.embed, count_tokens=embedder.count_tokens, chunk_size=chunk_size,
                            compression_target=compression_target, topic=topic)
    plan_text = ""
    if token_budget:
        result, plan = prune_pack(result, count_tokens=embedder.count_tokens, max_tokens=token_budget,
                                  min_importance=None, embed=embedder.embed)
        plan_text = plan.describe()
    paths = write_pack(result, out, fmt)
    return {"paths": [str(p) for p in paths], "header": result.header.to_json(), "notes": list(result.notes),
            "prune": plan_text}


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
    result, plan = prune_pack(pack, count_tokens=embedder.count_tokens, max_tokens=max_tokens,
                              min_importance=min_importance, similarity_threshold=similarity_threshold, merge=merge,
                              embed=embedder.embed)
    out: dict[str, Any] = {"plan": plan.describe(), "tokens_before": plan.tokens_before,
                           "tokens_after": plan.tokens_after, "dry_run": dry_run}
    if not dry_run:
        target = output or (file if file.suffix == ".md" else file.with_suffix(".md"))
        out["paths"] = [str(p) for p in write_pack_file(result, target)]
    return out
