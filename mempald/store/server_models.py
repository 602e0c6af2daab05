"""Between the store's own types and qdrant-client's models: filters, vectors, stored points and hits."""

from __future__ import annotations

from collections.abc import Sequence

from qdrant_client import models

from mempald.store.base import DELETED, DENSE, SPARSE, Fields, Filters, Hit, SparseVec, StoredPoint


def build_filter(f: Filters) -> models.Filter | None:
    """The same conditions as the embedded store's ``build_filter``, in qdrant-client's models."""
    must: list[models.Condition] = []
    must_not: list[models.Condition] = []
    for key, values in f.keyword_conditions():
        match: models.MatchValue | models.MatchAny = (
            models.MatchValue(value=values[0]) if len(values) == 1 else models.MatchAny(any=list(values))
        )
        must.append(models.FieldCondition(key=key, match=match))
    if f.since is not None or f.until is not None:
        must.append(models.FieldCondition(key="ts", range=models.Range(gte=f.since, lte=f.until)))
    if f.position_min is not None or f.position_max is not None:
        must.append(models.FieldCondition(key="position", range=models.Range(gte=f.position_min, lte=f.position_max)))
    if f.min_importance is not None:
        must.append(models.FieldCondition(key="importance", range=models.Range(gte=f.min_importance)))
    # Soft delete is the keyword ``status`` (see base.py), the same condition as the embedded store.
    deleted = models.FieldCondition(key="status", match=models.MatchValue(value=DELETED))
    if f.only_deleted:
        must.append(deleted)
    elif not f.include_deleted:
        must_not.append(deleted)
    if f.missing_dense:
        must_not.append(models.HasVectorCondition(has_vector=DENSE))
    if f.ids:
        must.append(models.HasIdCondition(has_id=list(f.ids)))
    should: list[models.Condition] = [sub for sub in (build_filter(a) for a in f.any_of) if sub is not None]
    if not must and not must_not and not should:
        return None
    return models.Filter(must=must or None, must_not=must_not or None, should=should or None)


def sparse_vector(v: SparseVec) -> models.SparseVector:
    return models.SparseVector(indices=list(v.indices), values=[float(x) for x in v.values])


def dense_vector(v: Sequence[float]) -> list[float]:
    return [float(x) for x in v]


def to_stored(rec: models.Record, with_vectors: bool) -> StoredPoint:
    dense: list[float] | None = None
    sparse: SparseVec | None = None
    if with_vectors and isinstance(rec.vector, dict):
        d = rec.vector.get(DENSE)
        if isinstance(d, list) and (not d or not isinstance(d[0], list)):
            dense = [float(x) for x in d]  # type: ignore[arg-type]
        s = rec.vector.get(SPARSE)
        if isinstance(s, models.SparseVector):
            sparse = SparseVec(tuple(int(i) for i in s.indices), tuple(float(x) for x in s.values))
    return StoredPoint(str(rec.id), dict(rec.payload or {}), dense, sparse)


def to_hits(points: Sequence[models.ScoredPoint]) -> list[Hit]:
    return [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in points]



# Search hits do not carry a drawer's indexing context (see edge.py).
HIT_PAYLOAD = models.PayloadSelectorExclude(exclude=["context"])


def payload_selector(
    fields: Fields, default: bool | models.PayloadSelectorExclude = HIT_PAYLOAD
) -> bool | list[str] | models.PayloadSelectorExclude:
    """The payload a read returns: ``default`` (a search hit's) unless only ``fields`` are wanted."""
    return default if fields is None else list(fields)
