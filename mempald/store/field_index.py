"""The embedded store's payload field indexes: which fields are indexed, how they are placed, and moving the
indexes of a palace made before that placement.

They are placed ``Cold`` (read through the page cache, like a built shard's vectors): held in memory, a built
shard's field indexes were most of its load time and of its anonymous memory. Measured at 1M drawers (see
bench/PERF_RESULTS.md): shard load 14.65 -> 0.93 s, anonymous memory after it 915 -> 12 MB, ranking 42.5 ->
45.6 ms p50 with the same hits. A palace made before is moved by its next index build (``place_indexes``),
about 45 s a field at 1M drawers, in the build's own process."""

from __future__ import annotations

from typing import Any

import qdrant_edge as qe

from mempald.store.base import BOOL_FIELDS, FLOAT_FIELDS, KEYWORD_FIELDS

INDEX_MEMORY = qe.Memory.Cold
_FIELD_TYPES = ((KEYWORD_FIELDS, qe.PayloadSchemaType.Keyword), (FLOAT_FIELDS, qe.PayloadSchemaType.Float),
                (BOOL_FIELDS, qe.PayloadSchemaType.Bool))


def index_params(kind: qe.PayloadSchemaType) -> Any:
    if kind == qe.PayloadSchemaType.Keyword:
        return qe.KeywordIndexParams(memory=INDEX_MEMORY)
    if kind == qe.PayloadSchemaType.Float:
        return qe.FloatIndexParams(memory=INDEX_MEMORY)
    return qe.BoolIndexParams(memory=INDEX_MEMORY)


def indexed_fields() -> dict[str, qe.PayloadSchemaType]:
    return {name: kind for names, kind in _FIELD_TYPES for name in names}


def create_indexes(shard: qe.EdgeShard, *, missing_only: bool = False) -> None:
    """Index every field (``missing_only``: those not indexed yet, e.g. a field a newer release indexes)."""
    have = set(shard.info().payload_schema) if missing_only else set()
    for name, kind in indexed_fields().items():
        if name not in have:
            shard.update(qe.UpdateOperation.create_field_index(name, index_params(kind)))


def misplaced_indexes(shard: qe.EdgeShard) -> list[str]:
    """The indexed fields whose index is not placed ``INDEX_MEMORY`` (made by an earlier release)."""
    schema = shard.info().payload_schema
    return sorted(name for name in indexed_fields()
                  if name in schema and getattr(schema[name].params, "memory", None) != INDEX_MEMORY)


def place_indexes(shard: qe.EdgeShard) -> list[str]:
    """Re-create every misplaced field index placed ``INDEX_MEMORY``; the fields moved. Slow on a big shard:
    only in the index build's own process."""
    moved = misplaced_indexes(shard)
    kinds = indexed_fields()
    for name in moved:
        shard.update(qe.UpdateOperation.delete_field_index(name))
        shard.update(qe.UpdateOperation.create_field_index(name, index_params(kinds[name])))
    return moved
