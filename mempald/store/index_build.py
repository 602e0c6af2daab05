"""Building a shard's indexes, in a process of its own (``python -m mempald.store.host build``, started by the
daemon's index rebuild, ``mempald.store.hosted``): HNSW and sparse indexes, the field indexes placed first."""

from __future__ import annotations

from pathlib import Path

import qdrant_edge as qe

from mempald.store.base import DENSE, SPARSE
from mempald.store.edge import dims_of
from mempald.store.field_index import place_indexes
from mempald.store.file_pages import WrittenPages

# A shard rebuilt with its index: vectors, sparse index, payload and id tracker read through the page cache
# instead of living in the process (measured at 100k drawers: 946 -> 258 MB RSS, dense query 7.9 -> 2.4 ms).
BUILT_MEMORY = qe.Memory.Cold
# A build indexes what is not built yet and leaves built segments alone until there are more than this many
# (then the smallest are merged). With Qdrant's default (one per core) each build merged the whole shard: a
# build during a backfill at 68,000 drawers took 11 s and 887 MB; with 8, 1.5 s and 295 MB.
BUILD_SEGMENTS = 8
# A build while a backfill is written merges nothing until there are more than this many: each then writes the
# segment of the drawers written since the last (``store.index_during_backfill``), not a merge of built ones, so
# its process stays the size of that; the next idle build merges them back down to ``BUILD_SEGMENTS``.
BACKFILL_SEGMENTS = 16


def build_index(shard_dir: Path, indexing_threshold_kb: int = 1, segments: int = BUILD_SEGMENTS) -> bool:
    """Build the vector indexes of the shard in ``shard_dir`` (blocking, minutes at 100k points, holding the
    GIL all along: only ever run in a process of its own), placing its field indexes first; built segments are
    merged while there are more than ``segments``. Returns whether anything was built or moved."""
    config = qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=dims_of(shard_dir), distance=qe.Distance.Cosine,
                                            memory=BUILT_MEMORY)},
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, memory=BUILT_MEMORY)},
        payload_memory=BUILT_MEMORY, id_tracker_memory=BUILT_MEMORY,
        optimizers=qe.EdgeOptimizersConfig(indexing_threshold=indexing_threshold_kb,
                                           default_segment_number=segments),
    )
    shard = qe.EdgeShard.load(str(shard_dir), config)
    try:
        moved = place_indexes(shard)
        # The load read the copy's WAL and unbuilt field indexes through their mappings; the build reads again
        # only what it needs (a build during the 1 GB Cursor backfill: 342 -> about 200 MB RSS at its peak).
        WrittenPages(shard_dir).release(everything=True)
        built = bool(shard.optimize()) or bool(moved)
        shard.flush()
    finally:
        shard.close()
    return built
