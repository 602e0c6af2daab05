"""A data dir holding N drawers, written directly through mempald's own store code (for 100k-drawer figures).

Embedding 100k drawers takes hours on two cores, so search latency, footprint and startup at 100k are measured
on a store filled here: real-shaped transcripts parsed by the real normalizer, drawers built by
``build_drawers`` (real chunking, classification, payload), real BM25 vectors, and real-model dense vectors
from ``DISTINCT`` embedded drawer texts re-used round-robin, each copy moved by a little noise (cosine about
0.93 to its source), so that every vector is distinct and an HNSW index meets clusters, as with real drawers,
not thousands of identical points. Then the real daemon is started on that data dir. Cached per size under
``CACHE`` and copied; ``indexed=True`` gives the same store with its indexes built by ``build_index``, the
code the daemon's own rebuild runs.
"""

from __future__ import annotations

import itertools
import random
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from _harness import exchange_lines

if TYPE_CHECKING:
    from mempald.ingest.drawers import Drawer

CACHE = Path("/tmp/mempal-bench-cache")
DISTINCT = 512
NOISE = 0.02  # per component, on unit vectors of 384 dims


def _drawers(n_drawers: int, count_tokens: Callable[[str], int], seed: int = 3) -> Iterator[Drawer]:
    """``n_drawers`` drawers, made session by session (a million never sit in memory at once)."""
    from mempald.ingest.drawers import SourceInfo, build_drawers
    from mempald.normalize.claude_code import parse_lines
    from mempald.normalize.model import Line

    rnd = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    s = 0
    left = n_drawers
    while left > 0:
        proj = s % 6
        sid = str(uuid.UUID(int=rnd.getrandbits(128)))
        path = f"/home/u/.claude/projects/-home-u-projects-app{proj}/{sid}.jsonl"
        lines: list[Line] = []
        off = 0
        for i in range(80):
            key = str(uuid.UUID(int=rnd.getrandbits(128)))
            for raw in exchange_lines(rnd, sid, f"/home/u/projects/app{proj}", key,
                                      start + timedelta(hours=6 * s, minutes=2 * i)):
                b = raw.encode()
                lines.append(Line(off, b))
                off += len(b) + 1
        info = SourceInfo(kind="claude_code", path=path, source_key="claude_code", machine="bench", user="u")
        made = build_drawers(parse_lines(lines), info, count_tokens, 250)[:left]
        yield from made
        left -= len(made)
        s += 1


def build(data_dir: Path, n_drawers: int) -> dict[str, float]:
    from mempald.embed.embedder import Embedder
    from mempald.embed.sparse import META_KEY, Bm25Encoder
    from mempald.ingest.drawers import index_text
    from mempald.store.base import SCHEMA_VERSION, PointData
    from mempald.store.edge import EdgeStore

    t0 = time.monotonic()
    emb = Embedder(models_dir=data_dir / "models")
    drawers = _drawers(n_drawers, emb.count_tokens)
    distinct = list(itertools.islice(drawers, min(DISTINCT, max(16, n_drawers // 10))))
    texts = [emb.with_context(str(d.payload.get("context") or ""), d.text, 250) for d in distinct]
    vecs = emb.embed(texts, batch_size=32).tolist()
    bm25 = Bm25Encoder()
    store = EdgeStore(data_dir / "store", emb.dim)
    # the keyword tokenizer too, as the daemon records it (else it warns that the keyword vectors are stale)
    store.set_meta({"model": emb.info.model_id, "dim": emb.dim, "schema": SCHEMA_VERSION, "created_at": time.time(),
                    META_KEY: bm25.tokenizer})
    t1 = time.monotonic()
    batch: list[PointData] = []
    rnd = random.Random(11)
    n = 0
    for i, d in enumerate(itertools.chain(distinct, drawers)):
        n += 1
        dense = [x + rnd.gauss(0.0, NOISE) for x in vecs[i % len(vecs)]]
        batch.append(PointData(d.id, d.payload, bm25.document(index_text(d.payload)), dense))
        if len(batch) == 256:
            store.upsert(batch)
            batch = []
    store.upsert(batch)
    store.close()
    # a palace's state database beside its store (the daemon refuses a store of drawers without one)
    from mempald.state.db import State

    State(data_dir / "state.sqlite3").close()
    # drawers are made while they are written: build_s is the whole fill (the model's DISTINCT texts included)
    return {"drawers": n, "build_s": round(time.monotonic() - t0, 1), "upsert_s": round(time.monotonic() - t1, 1)}


def prefilled(data_dir: Path, n_drawers: int, indexed: bool = False) -> dict[str, float]:
    """Fill ``data_dir`` with ``n_drawers`` drawers (from the cache when present)."""
    cached = CACHE / f"prefill-v3-{n_drawers}"
    info: dict[str, float] = {"drawers": n_drawers, "cached": 1.0}
    if not (cached / "store" / "mempal-meta.json").is_file():
        # filled aside and renamed when whole: the meta file is written first, so an interrupted fill left in
        # place would pass for a finished one
        partial = CACHE / f"prefill-v3-{n_drawers}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        info = build(partial, n_drawers)
        info["cached"] = 0.0
        shutil.rmtree(cached, ignore_errors=True)
        partial.rename(cached)
    if indexed:
        from mempald.store.edge import current_shard
        from mempald.store.index_build import build_index

        built = CACHE / f"prefill-v3-{n_drawers}-indexed"
        if not (built / "store" / "mempal-meta.json").is_file():
            partial = CACHE / f"prefill-v3-{n_drawers}-indexed.partial"
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(cached, partial)
            t0 = time.monotonic()
            build_index(partial / "store" / current_shard(partial / "store"))
            info["index_build_s"] = round(time.monotonic() - t0, 1)
            shutil.rmtree(built, ignore_errors=True)
            partial.rename(built)
        cached = built
    shutil.copytree(cached, data_dir, dirs_exist_ok=True)
    return info
