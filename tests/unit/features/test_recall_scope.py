"""Recall beyond the project: the memories of other wings come from a second search, need the higher floor
``hooks.recall_beyond_threshold``, and come after the project's own (``merge_scopes``, ``select_memories``)."""

from __future__ import annotations

from typing import Any

from mempald.config import parse_settings
from mempald.features.recall import merge_scopes, select_memories


def hit(did: str, wing: str, rel: float, score: float = 0.5, text: str | None = None) -> dict[str, Any]:
    return {"drawer_id": did, "wing": wing, "relevance": rel, "score": score, "source_path": f"/p/{did}.jsonl",
            "exchange_key": did, "text": text or f"> question {did}\nthe answer of {did} in a few words, long enough"}


def ids(hits: list[dict[str, Any]]) -> list[str]:
    return [h["drawer_id"] for h in hits]


def test_the_default_floor_beyond_the_project_is_higher_than_in_it() -> None:
    hooks = parse_settings({}, env={}).hooks
    assert hooks.recall_threshold < hooks.recall_beyond_threshold <= 1.0


def test_merge_keeps_the_projects_hits_then_other_wings_once() -> None:
    own = [hit("a", "acme", 0.4), hit("b", "acme", 0.2)]
    every = [hit("a", "acme", 0.4), hit("x", "zeta", 0.9), hit("b2", "zeta", 0.9, text=own[1]["text"]),
             hit("y", "omega", 0.6)]
    assert ids(merge_scopes(own, every, "acme")) == ["a", "b", "x", "y"]  # b2: the same text as b
    assert ids(merge_scopes([], every, None)) == ids(every)  # a folder with no memory: every wing


def test_other_wings_need_the_higher_floor_and_come_after_the_projects_own() -> None:
    cands = [hit("a", "acme", 0.2, score=0.3), hit("x", "zeta", 0.9, score=1.0), hit("y", "omega", 0.35, score=0.9)]
    assert ids(select_memories(cands, 0.13, None, wing="acme", beyond_threshold=0.5)) == ["a", "x"]
    # no beyond floor given: one floor for all, search's order (as before)
    assert ids(select_memories(cands, 0.13, None)) == ["x", "y", "a"]
    # a folder with no memory: every hit is from another project
    assert ids(select_memories(cands, 0.13, None, wing=None, beyond_threshold=0.5)) == ["x"]
    # above 1: never beyond the project
    assert ids(select_memories(cands, 0.13, None, wing="acme", beyond_threshold=2.0)) == ["a"]
