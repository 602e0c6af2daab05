"""Socket methods for ``pack`` and ``pack prune`` (the daemon's model embeds; nothing is loaded twice)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import anyio.to_thread

from client.protocol import INVALID_PARAMS, RpcError
from mempald.pack import PackError
from mempald.packing import run_pack, run_prune
from mempald.palace import Palace
from mempald.params import Handler, Params, checked_path


async def pack(p: Palace, params: Params) -> Any:
    root = checked_path(params.text("dir", required=True))
    if not await anyio.to_thread.run_sync(root.is_dir):
        raise RpcError(INVALID_PARAMS, f"{root} is not a directory")
    out = Path(params.text("output") or f"{root}/packed")
    if not out.is_absolute():
        raise RpcError(INVALID_PARAMS, "output must be an absolute path")
    fmt: Literal["single", "multi"] = "multi" if params.text("format") == "multi" else "single"
    if params.text("format") not in (None, "single", "multi"):
        raise RpcError(INVALID_PARAMS, "format must be single or multi")
    try:
        return await anyio.to_thread.run_sync(lambda: run_pack(
            p.embedder, root, out, fmt=fmt, chunk_size=params.integer("chunk_size", 512, lo=32, hi=4096),
            compression_target=params.number("compression_target", 6.0), topic=params.text("topic"),
            token_budget=params.integer("token_budget", 0, lo=0, hi=10_000_000)))
    except PackError as exc:
        raise RpcError(INVALID_PARAMS, str(exc)) from None


async def pack_prune(p: Palace, params: Params) -> Any:
    file = checked_path(params.text("file", required=True))
    max_tokens = params.raw.get("max_tokens")
    min_imp = params.raw.get("min_importance")
    output = params.text("output")
    try:
        return await anyio.to_thread.run_sync(lambda: run_prune(
            p.embedder, file, max_tokens=int(max_tokens) if isinstance(max_tokens, int) else None,
            min_importance=float(min_imp) if isinstance(min_imp, (int, float)) else None,
            similarity_threshold=params.number("similarity_threshold", 0.80), merge=not params.flag("no_merge"),
            dry_run=params.flag("dry_run"), output=Path(output) if output else None))
    except PackError as exc:
        raise RpcError(INVALID_PARAMS, str(exc)) from None


METHODS: dict[str, Handler] = {"pack": pack, "pack_prune": pack_prune}
