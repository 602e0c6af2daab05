"""The research-only fusion variants of bench/research_fusion.py (measured on LoCoMo, not adopted by the product).

bench/ is not a package: the module is imported from its folder, as the benchmark scripts import each other.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mempald.search import fusion

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from research_fusion import (
    Candidate,
    dbsf_normalise,
    fuse,
    fuse_lists,
    minmax_fuse,
    rare_terms,
    rrf_fuse,
    zscore_normalise,
)


def c(*pairs: tuple[str, float]) -> list[Candidate]:
    return [Candidate(i, s) for i, s in pairs]


def ids(ranked: list[tuple[str, float]]) -> list[str]:
    return [k for k, _ in ranked]


def test_zscore_normalise() -> None:
    z = zscore_normalise(c(("a", 3.0), ("b", 1.0)))
    assert z == pytest.approx({"a": 1.0, "b": -1.0})
    assert zscore_normalise(c(("a", 2.0))) == {"a": 0.0}


def test_dbsf_normalise_is_clipped_and_centred() -> None:
    d = dbsf_normalise(c(("a", 3.0), ("b", 1.0)))
    # mean 2, sd 1 -> [-1, 5] maps to [0, 1]
    assert d == pytest.approx({"a": 4 / 6, "b": 2 / 6})
    assert dbsf_normalise(c(("a", 1.0), ("b", 1.0))) == {"a": 0.5, "b": 0.5}


def test_minmax_fuse_agreement_wins() -> None:
    dense = c(("a", 0.9), ("b", 0.8), ("c", 0.1))
    sparse = c(("b", 12.0), ("d", 11.0), ("a", 2.0))
    out = minmax_fuse(dense, sparse, dense_weight=0.5)
    # b: 0.5*0.875 + 0.5*1 = 0.9375 ; a: 0.5*1 + 0 = 0.5 ; d: 0.5*0.9 = 0.45 ; c: 0
    assert ids(out) == ["b", "a", "d", "c"]
    assert dict(out)["b"] == pytest.approx(0.9375)


def test_fuse_rejects_an_unknown_method() -> None:
    with pytest.raises(ValueError):
        fuse([], [], 0.5, method="nope")


def test_zscore_fuse_missing_gets_list_floor() -> None:
    dense = c(("a", 3.0), ("b", 1.0))
    sparse = c(("c", 3.0), ("b", 1.0))
    out = dict(fuse(dense, sparse, 0.5, method="zscore"))
    assert out["b"] == pytest.approx(-1.0)
    assert out["a"] == pytest.approx(0.0)
    assert out["c"] == pytest.approx(0.0)


def test_rrf_fuse() -> None:
    out = rrf_fuse([c(("a", 9.0), ("b", 8.0)), c(("b", 1.0), ("c", 0.5))], k=60)
    assert ids(out) == ["b", "a", "c"]
    assert dict(out)["b"] == pytest.approx(1 / 62 + 1 / 61)
    weighted = rrf_fuse([c(("a", 1.0)), c(("c", 1.0))], k=1, weights=[1.0, 3.0])
    assert ids(weighted) == ["c", "a"]
    with pytest.raises(ValueError):
        rrf_fuse([c(("a", 1.0))], weights=[1.0, 2.0])


def test_ties_break_on_id() -> None:
    assert ids(minmax_fuse(c(("b", 1.0), ("a", 1.0)), [])) == ["a", "b"]


def test_rare_terms() -> None:
    assert rare_terms("When did Caroline go to the LGBTQ support group?") == ["Caroline", "LGBTQ"]
    assert rare_terms("What did Melanie's kids paint in July 2023?") == ["Melanie", "July", "2023"]
    assert rare_terms("what is this") == []


def test_minmax_method_is_the_product_fusion() -> None:
    lists = [c(("a", 0.9), ("b", 0.2)), c(("b", 7.0), ("c", 3.0), ("a", 1.0)), c(("c", 2.0)), c()]
    assert fuse_lists(lists) == fusion.fuse_lists(lists)
    assert fuse(lists[0], lists[1], 0.3) == fusion.fuse(lists[0], lists[1], 0.3)
    assert minmax_fuse(lists[0], lists[1]) == fusion.fuse(lists[0], lists[1])
    with pytest.raises(ValueError):
        fuse(lists[0], lists[1], 1.5, method="zscore")
    with pytest.raises(ValueError):
        fuse_lists(lists, [1.0], method="dbsf")
