"""What a segment's records hold and how they become store points again: a drawer (its id, every payload field,
its dense vector and the model that made it), a tombstone (an id forgotten, deleted or purged), a fact of the
knowledge graph, a rule (as the rule book holds it, whole: added, accepted or replaced) and a rule's removal.
Pure: no I/O."""

from __future__ import annotations

import base64
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

from mempald.features.kg import Triple
from mempald.features.rule_book import RULE_FIELDS
from mempald.sync.segment import Record

DRAWER = "drawer"
TOMB = "tomb"
FACT = "fact"
RULE = "rule"
UNRULE = "unrule"  # a rule removed: remembered like a tombstone, so no segment read later brings it back
OPS = ("forget", "delete", "purge")


def pack_vector(vec: Sequence[float] | None) -> str | None:
    if vec is None:
        return None
    return base64.b64encode(array("f", vec).tobytes()).decode()


def unpack_vector(text: Any, dim: int) -> list[float] | None:
    """A vector of ``dim`` floats, else None (another model's size, or not a vector)."""
    if not isinstance(text, str):
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        return None
    if len(raw) != 4 * dim:
        return None
    return array("f", raw).tolist()


def drawer_record(pid: str, payload: Mapping[str, Any], dense: Sequence[float] | None, model: str) -> Record:
    return {"t": DRAWER, "id": pid, "payload": dict(payload), "dense": pack_vector(dense),
            "model": model if dense is not None else ""}


def tomb_record(pid: str, detail: Mapping[str, Any]) -> Record:
    op = str(detail.get("op") or "forget")
    return {"t": TOMB, "id": pid, "op": op if op in OPS else "forget", "at": float(detail.get("at") or 0.0),
            "by": str(detail.get("by") or ""), "reason": str(detail.get("reason") or "")}


def fact_record(t: Triple) -> Record:
    return {"t": FACT, "id": t.id, "subject": t.subject, "predicate": t.predicate, "object": t.object,
            "valid_from": t.valid_from, "confidence": t.confidence, "source_drawer": t.source_drawer}


def rule_record(rule: Mapping[str, Any]) -> Record:
    return {"t": RULE, "id": str(rule["id"]), "rule": {k: rule[k] for k in RULE_FIELDS if k in rule}}


def unrule_record(rule_id: str, detail: Mapping[str, Any]) -> Record:
    return {"t": UNRULE, "id": rule_id, "at": float(detail.get("at") or 0.0), "by": str(detail.get("by") or "")}


def rule_of(r: Record) -> dict[str, Any] | None:
    """The rule a rule record holds (its id the record's), else None (not one: reported by the caller)."""
    rule = r.get("rule")
    if r.get("t") != RULE or not isinstance(rule, dict) or not isinstance(r.get("id"), str):
        return None
    return {**{k: rule[k] for k in RULE_FIELDS if k in rule}, "id": r["id"]}


def collapsed(records: Sequence[Record]) -> list[Record]:
    """Duplicates (the same drawer or tombstone written twice: a conflicted copy, a write repeated after a
    crash) collapse by kind and id, the last one kept in place of the first."""
    last: dict[tuple[str, str], int] = {}
    for i, r in enumerate(records):
        last[(str(r.get("t")), str(r.get("id")))] = i
    return [r for i, r in enumerate(records) if last[(str(r.get("t")), str(r.get("id")))] == i]
