"""Unit tests for mempald.search.fusion (and the temporal window it boosts) on small hand-made candidate lists.

The research-only variants (z-score, DBSF, RRF, rare terms) are tested in tests/test_research_fusion.py."""

from __future__ import annotations

from collections.abc import Hashable
from datetime import datetime, timedelta

import pytest

from mempald.search import fusion as f
from mempald.search import speakers
from mempald.search.answers import asks_when, session_capped_boost, tells_when, when_boost
from mempald.search.fusion import (
    Candidate,
    dedup,
    fuse,
    fuse_lists,
    minmax_normalise,
    neighbour_boost,
    session_boost,
    temporal_boost,
)
from mempald.search.temporal import temporal_window


def c(*pairs: tuple[str, float]) -> list[Candidate]:
    return [Candidate(i, s) for i, s in pairs]


def ids(ranked: list[tuple[str, float]]) -> list[str]:
    return [k for k, _ in ranked]


# ---------------------------------------------------------------- normalisation


def test_minmax_normalise_maps_to_unit_range() -> None:
    assert minmax_normalise(c(("a", 10.0), ("b", 5.0), ("c", 0.0))) == {"a": 1.0, "b": 0.5, "c": 0.0}


def test_minmax_normalise_flat_and_empty() -> None:
    assert minmax_normalise(c(("a", 3.0), ("b", 3.0))) == {"a": 1.0, "b": 1.0}
    assert minmax_normalise([]) == {}


# ---------------------------------------------------------------- fusion


def test_fuse_weight_extremes_reproduce_single_lists() -> None:
    dense = c(("a", 0.9), ("b", 0.5), ("c", 0.1))
    sparse = c(("c", 9.0), ("b", 5.0), ("a", 1.0))
    assert ids(fuse(dense, sparse, 1.0))[:3] == ["a", "b", "c"]
    assert ids(fuse(dense, sparse, 0.0))[:3] == ["c", "b", "a"]


def test_fuse_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        fuse([], [], 1.5)
    with pytest.raises(ValueError):
        fuse_lists([[], []], [1.0])


def test_fuse_lists_three_lists() -> None:
    a = c(("x", 1.0), ("y", 0.0))
    b = c(("y", 1.0), ("x", 0.0))
    extra = c(("y", 5.0), ("z", 1.0))
    out = dict(fuse_lists([a, b, extra], [0.4, 0.4, 0.2]))
    assert out == pytest.approx({"x": 0.4, "y": 0.6, "z": 0.0})


def test_ties_break_on_id() -> None:
    assert ids(fuse(c(("b", 1.0), ("a", 1.0)), [])) == ["a", "b"]


# ---------------------------------------------------------------- rescoring

POS: dict[str, tuple[Hashable, int]] = {
    "s1t0": ("s1", 0),
    "s1t1": ("s1", 1),
    "s1t2": ("s1", 2),
    "s1t3": ("s1", 3),
    "s2t0": ("s2", 0),
    "s2t1": ("s2", 1),
}


def test_neighbour_boost_pulls_in_adjacent_turn() -> None:
    ranked = [("s1t1", 1.0), ("s2t0", 0.6)]
    out = dict(neighbour_boost(ranked, POS, decay=0.5))
    assert out["s1t0"] == pytest.approx(0.5)
    assert out["s1t2"] == pytest.approx(0.5)
    assert out["s1t1"] == pytest.approx(1.0 + 0.0)  # no scored neighbour
    assert out["s2t1"] == pytest.approx(0.3)
    assert "s1t3" not in out  # two steps away, radius 1


def test_neighbour_boost_adds_to_existing_score_and_respects_sessions() -> None:
    ranked = [("s1t3", 1.0), ("s1t2", 0.2), ("s2t0", 0.1)]
    out = dict(neighbour_boost(ranked, POS, decay=0.5))
    assert out["s1t2"] == pytest.approx(0.7)
    assert out["s2t0"] == pytest.approx(0.1)  # other session: untouched


def test_neighbour_boost_radius_two_and_disabled() -> None:
    out = dict(neighbour_boost([("s1t0", 1.0)], POS, decay=0.5, radius=2))
    assert out["s1t2"] == pytest.approx(0.25)
    assert neighbour_boost([("s1t0", 1.0)], POS, decay=0.0) == [("s1t0", 1.0)]


def test_session_boost_top_sum_reorders_sessions() -> None:
    # s2 has one lucky hit, s1 has three good ones.
    ranked = [("s2t0", 1.0), ("s1t0", 0.9), ("s1t1", 0.8), ("s1t2", 0.8)]
    same = session_boost(ranked, POS, weight=0.5, top=1)
    assert ids(same)[0] == "s2t0"
    out = session_boost(ranked, POS, weight=0.5, top=3)
    assert ids(out)[0] == "s1t0"
    assert dict(out)["s1t0"] == pytest.approx(0.9 + 0.5 * 2.5)


def test_session_boost_ignores_unknown_ids() -> None:
    out = dict(session_boost([("zz", 0.4), ("s1t0", 1.0)], POS, weight=1.0))
    assert out == {"zz": 0.4, "s1t0": 2.0}


def test_dedup_drops_near_identical() -> None:
    texts = {
        "a": "Caroline: I went to the LGBTQ support group yesterday",
        "b": "caroline: I went to the LGBTQ support group yesterday!",
        "c": "Melanie: painting a sunrise",
    }
    ranked = [("a", 3.0), ("b", 2.0), ("c", 1.0)]
    assert ids(dedup(ranked, texts, 0.9)) == ["a", "c"]
    assert ids(dedup(ranked, texts, 1.01)) == ["a", "b", "c"]


# ---------------------------------------------------------------- query side


NOW = datetime(2023, 8, 15, 14, 0)


@pytest.mark.parametrize(
    ("query", "start", "end_day"),
    [
        ("What did Gina find on 1 February, 2023?", datetime(2023, 2, 1), datetime(2023, 2, 1)),
        ("Who did Maria have dinner with on May 3, 2023?", datetime(2023, 5, 3), datetime(2023, 5, 3)),
        ("What class did Maria start in December 2023?", datetime(2023, 12, 1), datetime(2023, 12, 31)),
        ("What happened in 2022?", datetime(2022, 1, 1), datetime(2022, 12, 31)),
        ("What did I do yesterday?", datetime(2023, 8, 14), datetime(2023, 8, 14)),
        ("Where did we go last year?", datetime(2021, 8, 14), datetime(2022, 8, 15)),
    ],
)
def test_temporal_window(query: str, start: datetime, end_day: datetime) -> None:
    win = temporal_window(query, NOW)
    assert win is not None
    assert win[0] == start
    assert win[1].date() == end_day.date()


def test_temporal_window_none_and_recent() -> None:
    assert temporal_window("When did Caroline go to the support group?", NOW) is None
    win = temporal_window("What did Melanie paint recently?", NOW)
    assert win is not None
    assert win[0] == datetime(2023, 7, 16)
    assert win[1] == NOW


def test_temporal_boost_is_soft() -> None:
    ts = {"in": datetime(2023, 5, 10), "out": datetime(2023, 7, 1)}
    ranked = [("out", 1.0), ("in", 0.8)]
    win = (datetime(2023, 5, 1), datetime(2023, 5, 31, 23, 59))
    out = temporal_boost(ranked, ts, win, boost=0.3)
    assert ids(out) == ["in", "out"]
    assert dict(out)["in"] == pytest.approx(1.04)
    assert temporal_boost(ranked, ts, None, boost=0.3) == ranked
    widened = temporal_boost(
        ranked, ts, (datetime(2023, 6, 1), datetime(2023, 6, 28)), 0.3, timedelta(days=7)
    )
    assert dict(widened)["out"] == pytest.approx(1.3)


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("When did Caroline go to the support group?", True),
        ("when was the migration merged", True),
        ("So when did we switch to uv?", True),
        ("What year did John start surfing?", True),
        ("How long ago did the outage happen?", True),
        ("What did Melanie paint?", False),
        ("Why did the build fail when the cache was cold?", False),  # "when" here is not the question
        ("Where did she move?", False),
    ],
)
def test_asks_when(query: str, asks: bool) -> None:
    assert asks_when(query) is asks


@pytest.mark.parametrize(
    ("text", "tells"),
    [
        ("Caroline: I went to a LGBTQ support group yesterday", True),
        ("We merged it last week, three days ago", True),
        ("The plumber came on Tuesday", True),
        ("It shipped on 3 May", True),
        ("It shipped in May 2023", True),
        ("Back in 2019 I lived in Lisbon", True),
        ("We'll see each other this weekend", True),
        ("I may go, if the march ends early", False),  # "may" and "march" alone are not dates
        ("Melanie: a sunset painting, in 20 minutes", False),
        ("port 8080 and 1024 workers, a 2048-token window", False),
        ("Maybe 20 people came", False),
    ],
)
def test_tells_when(text: str, tells: bool) -> None:
    assert tells_when(text) is tells


def test_session_capped_boost_picks_the_drawer_not_the_session() -> None:
    sessions: dict[str, Hashable] = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B"}
    ranked = [("a1", 1.0), ("b1", 0.9), ("a2", 0.6), ("x", 0.5), ("b2", 0.3), ("a3", 0.2)]
    out = dict(session_capped_boost(ranked, ["a2", "b2", "a3", "x"], sessions, 0.5))
    assert out["a2"] == pytest.approx(0.9) and out["a3"] == pytest.approx(0.3)  # lifted by half
    assert out["b2"] == pytest.approx(0.45)
    assert out["x"] == 0.5  # no session: left as it is
    assert out["a1"] == 1.0 and out["b1"] == 0.9
    strong = session_capped_boost(ranked, ["a2", "b2"], sessions, 10.0)
    assert dict(strong)["a2"] == 1.0 and dict(strong)["b2"] == 0.9  # up to its session's best, never past it
    best = {}
    for key, score in strong:
        best.setdefault(sessions.get(key, key), score)
    assert list(best) == ["A", "B", "x"]  # the sessions' order by their best drawer is unchanged
    assert session_capped_boost(ranked, ["a2"], sessions, 0.0) == ranked


def test_when_boost_reads_only_what_could_reach_the_first_hits() -> None:
    texts = {"a1": "we talked about the boiler", "a2": "the plumber came yesterday", "b1": "boiler parts",
             "b2": "fixed it last week", "b3": "on Friday, after lunch"}
    sessions: dict[str, Hashable] = {k: k[0] for k in texts}
    ranked = [("a1", 1.0), ("b1", 0.9), ("a2", 0.8), ("b2", 0.5), ("b3", 0.2)]
    out = dict(when_boost(ranked, texts, sessions, "When was the boiler fixed?", 0.5))
    assert out["a2"] == pytest.approx(1.0) and out["b2"] == pytest.approx(0.75) and out["b3"] == pytest.approx(0.3)
    # with reach 2, b3 (0.2 * 1.5 < 0.9, the second score) cannot reach the first two and is not read
    near = dict(when_boost(ranked, texts, sessions, "When was the boiler fixed?", 0.5, reach=2))
    assert near["a2"] == pytest.approx(1.0) and near["b3"] == 0.2
    assert when_boost(ranked, texts, sessions, "Was the boiler fixed?", 0.5) == ranked  # not a when-question


def test_default_pipeline_on_a_tiny_conversation() -> None:
    """Four lists -> temporal -> neighbours -> sessions -> dedup, with the module defaults."""
    ctx_dense = c(("s1t1", 0.6), ("s2t0", 0.5))
    ctx_sparse = c(("s1t1", 8.0), ("s2t1", 2.0))
    turn_sparse = c(("s1t1", 6.0), ("s2t1", 1.0))
    turn_dense = c(("s2t0", 0.4), ("s1t1", 0.3))
    ranked = f.fuse_lists([ctx_dense, ctx_sparse, turn_sparse, turn_dense])
    assert len(f.DEFAULT_LIST_WEIGHTS) == 4
    assert ranked[0][0] == "s1t1"
    ts = {k: datetime(2023, 5, 8) if k.startswith("s1") else datetime(2023, 6, 9) for k in POS}
    ranked = f.temporal_boost(ranked, ts, temporal_window("what happened in June 2023?", NOW))
    ranked = f.neighbour_boost(ranked, POS)
    ranked = f.session_boost(ranked, POS)
    ranked = f.dedup(ranked, {k: k for k in POS})
    top = ids(ranked)
    assert top[0] == "s1t1"
    assert set(top) == {"s1t0", "s1t1", "s1t2", "s2t0", "s2t1"}  # s1t1's exchange pulled in


# ---------------------------------------------------------------- second round


def test_neighbour_boost_backward_and_forward_differ() -> None:
    # s1t1 is a hit: the drawer before it (its context) gets 0.8, the one after it 0.4.
    out = dict(neighbour_boost([("s1t1", 1.0)], POS, decay=0.8, forward_decay=0.4))
    assert out["s1t0"] == pytest.approx(0.8)
    assert out["s1t2"] == pytest.approx(0.4)
    only_back = dict(neighbour_boost([("s1t1", 1.0)], POS, decay=0.8, forward_decay=0.0))
    assert "s1t2" not in only_back
    assert only_back["s1t0"] == pytest.approx(0.8)
    # forward_decay=None keeps the symmetric behaviour
    assert neighbour_boost([("s1t1", 1.0)], POS, decay=0.5) == neighbour_boost(
        [("s1t1", 1.0)], POS, decay=0.5, forward_decay=0.5
    )


def test_neighbour_boost_default_prefers_the_turn_before_a_hit() -> None:
    out = ids(neighbour_boost([("s1t1", 1.0)], POS))
    assert out == ["s1t1", "s1t0", "s1t2"]


def test_dedup_keep_stops_early_and_keeps_the_rest() -> None:
    texts = {"a": "x y z", "b": "x y z", "c": "p q", "d": "p q"}
    ranked = [("a", 4.0), ("b", 3.0), ("c", 2.0), ("d", 1.0)]
    assert ids(dedup(ranked, texts, 0.9, keep=2)) == ["a", "c", "d"]  # d unchecked past the 2 kept
    assert ids(dedup(ranked, texts, 0.9)) == ["a", "c"]


def test_dedup_size_filter_does_not_change_results() -> None:
    texts = {"a": "one two three four five six seven eight nine ten", "b": "one two three four five six seven eight"}
    assert ids(dedup([("a", 2.0), ("b", 1.0)], texts, 0.8)) == ["a"]  # Jaccard 8/10 = size ratio: still checked
    assert ids(dedup([("a", 2.0), ("b", 1.0)], texts, 0.81)) == ["a", "b"]


def test_spread_sessions_puts_new_sessions_first_below_the_head() -> None:
    ranked = [("s1t0", 5.0), ("s1t1", 4.0), ("s1t2", 3.0), ("s2t0", 2.0), ("s1t3", 1.5), ("s2t1", 1.0)]
    out = f.spread_sessions(ranked, POS, after=2)
    assert ids(out) == ["s1t0", "s1t1", "s2t0", "s1t2", "s1t3", "s2t1"]
    assert dict(out) == dict(ranked)  # scores untouched
    assert f.spread_sessions(ranked, POS, after=-1) == ranked
    assert f.spread_sessions(ranked, POS, after=10) == ranked


def test_keyword_evidence_and_relevance() -> None:
    from mempald.search.fusion import RARITY_CAP, bm25_idf, keyword_evidence, relevance

    n = 1000
    rare, common = bm25_idf(1, n), bm25_idf(400, n)
    assert rare > common > 0 and bm25_idf(0, n) > rare
    cov, rar = keyword_evidence([rare], rare + common, bm25_idf(0, n))
    assert 0.8 < cov < 1.0 and 0.8 < rar < 1.0
    # covering a query of common words is little evidence: rarity stays low
    cov2, rar2 = keyword_evidence([common, common], 2 * common, bm25_idf(0, n))
    assert cov2 == 1.0 and rar2 < 0.3 < rar
    assert keyword_evidence([], 0.0, 0.0) == (0.0, 0.0)
    assert keyword_evidence([rare] * 10, 10 * rare, rare)[1] == RARITY_CAP
    # one scale: more of either kind of evidence never lowers it; it stays a probability
    assert relevance(0.2, 0.0, 0.0) < relevance(0.6, 0.0, 0.0) < relevance(0.6, 1.0, 1.5) < 1.0
    assert relevance(0.2, 1.0, 2.5) > relevance(0.2, 0.0, 0.0)
    assert relevance(-1.0, 0.0, 0.0) >= 0.0 and relevance(1.0, 1.0, RARITY_CAP) <= 1.0


def test_neighbour_boost_gives_the_answer_after_a_question_its_own_share() -> None:
    # s1t1 asks something: the drawer after it (its answer) gets question_forward instead of forward_decay.
    out = dict(neighbour_boost([("s1t1", 1.0)], POS, decay=0.8, forward_decay=0.4, questions={"s1t1"},
                               question_forward=0.8))
    assert out["s1t2"] == pytest.approx(0.8)
    assert out["s1t0"] == pytest.approx(0.8)  # the drawer before keeps its share
    # a hit that asks nothing keeps the plain forward share; question_forward never lowers it
    plain = dict(neighbour_boost([("s1t1", 1.0)], POS, decay=0.8, forward_decay=0.4, questions={"s2t0"},
                                 question_forward=0.8))
    assert plain["s1t2"] == pytest.approx(0.4)
    low = dict(neighbour_boost([("s1t1", 1.0)], POS, decay=0.8, forward_decay=0.4, questions={"s1t1"},
                               question_forward=0.1))
    assert low["s1t2"] == pytest.approx(0.4)
    # with every share at 0 save the question one, only a question's answer is lifted
    only_q = dict(neighbour_boost([("s1t1", 1.0)], POS, decay=0.0, forward_decay=0.0, questions={"s1t1"},
                                  question_forward=0.5))
    assert only_q == {"s1t1": 1.0, "s1t2": pytest.approx(0.5)}


def test_speakers_are_the_names_before_a_colon_at_line_starts() -> None:
    assert speakers.speakers("Tim Smith: I read fantasy.\nJohn: me too\n  not: a speaker\n> quoted: no") == [
        "tim", "john"]
    assert speakers.speakers("Élodie: bonjour") == ["élodie"]
    assert speakers.speakers("see http://x: y\n2024: a year\nTODO list: a, b") == ["todo"]


def test_speaker_boost_lifts_what_the_named_person_said() -> None:
    texts = {"a": "John: Tim loves fantasy books, right?", "b": "Tim: Fantasy books are my escape.",
             "c": "John: I escape by running.", "d": "Tim: hi"}
    ranked = [("a", 1.0), ("c", 0.9), ("b", 0.8), ("d", 0.1)]
    out = dict(speakers.speaker_boost(ranked, texts, "What does Tim do to escape?", 0.5))
    assert out["b"] == pytest.approx(1.2) and out["d"] == pytest.approx(0.15)
    assert out["a"] == 1.0 and out["c"] == 0.9  # addressing Tim is not Tim speaking
    assert next(k for k, _ in speakers.speaker_boost(ranked, texts, "what does tim do", 0.5)) == "b"
    # a name counts only as a speaker of two candidates at least (a participant, not one "Note:" line)
    notes = {"a": "Note: the escape hatch", "b": "John: no escape"}
    assert speakers.speaker_boost([("b", 1.0), ("a", 0.9)], notes, "note the escape", 0.5) == [("b", 1.0), ("a", 0.9)]
    assert speakers.speaker_boost(ranked, texts, "What does Tim do?", 0.0) == ranked
