"""LongMemEval through the real ingest, store and search, from both entry points (``mempal bench longmemeval``,
which runs ``mempald bench longmemeval``, and ``bench/longmemeval.py``), on a small file in the LongMemEval_S
layout written for this test (``tests/fixtures/longmemeval_small.json``).

The file is built so every figure can be checked by hand: in four of its five questions the answer sessions
are the only ones about the question's subject (ranked first), in ``q_buried_wedding`` the one answer session
of seven is about something else (ranked 7th: R@5 0, R@10 1, NDCG@10 1/log2(8)), and ``q_abs_missing`` names an
answer session its haystack does not hold (left out). So: R@5 3/4, R@10 1, recall-all@5 3/4, NDCG@10
(1 + 1 + 1/3 + 1) / 4, and turn recall 3/4 (the buried evidence turn is behind twelve bicycle drawers)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mempald.benchmarks.longmemeval import load, ndcg, score
from tests.conftest import REPO, mempal_cli

SMALL = REPO / "tests" / "fixtures" / "longmemeval_small.json"
BURIED = 1 / math.log2(8)


def test_metrics_by_hand() -> None:
    gold = frozenset({"b", "d"})
    row = score(["a", "b", "c", "e", "f", "d"], gold, ["k1", "k2", "k3"], {"k2", "k9"})
    assert row["R@5"] == 1.0 and row["recall_all@5"] == 0.0 and row["recall_all@10"] == 1.0
    assert row["NDCG@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(7)) / (1 + 1 / math.log2(3)))
    assert row["turn_R@5"] == 0.5 and row["turn_R@10"] == 0.5
    assert ndcg(["x", "y"], {"z"}) == 0.0
    assert "turn_R@10" not in score(["a"], frozenset({"a"}), [], set())


def test_the_small_file_is_in_the_layout() -> None:
    qs = load(SMALL)
    assert [q.qid for q in qs][:2] == ["q_single_dog", "q_multi_cello"] and len(qs) == 5
    assert qs[0].now.isoformat().startswith("2023-06-01T10:00") and qs[0].sessions[1][1].day == 10


def check(res: dict[str, object]) -> None:
    o = res["overall"]
    assert isinstance(o, dict)
    assert o["questions"] == 4 and o["questions_with_turns"] == 4
    assert o["R@5"] == 0.75 and o["R@10"] == 1.0 and o["recall_all@5"] == 0.75 and o["recall_all@10"] == 1.0
    assert o["NDCG@10"] == pytest.approx((3 + BURIED) / 4, abs=1e-4)
    assert o["turn_R@5"] == 0.75 and o["turn_R@10"] == 0.75
    assert res["skipped_no_answer_session"] == ["q_abs_missing"]
    per_q = {q["question_id"]: q for q in res["questions"]}  # type: ignore[attr-defined]
    assert per_q["q_buried_wedding"]["sessions"][6] == "s3g" and len(per_q["q_buried_wedding"]["sessions"]) == 7
    assert per_q["q_multi_cello"]["sessions"][:2] in (["s2a", "s2c"], ["s2c", "s2a"])
    assert per_q["q_single_dog"]["drawers"][0] == "s1b:0"


@pytest.mark.timeout(300)
def test_mempal_bench_longmemeval(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lme.json"
    r = mempal_cli(dict(os.environ), "bench", "longmemeval", str(SMALL), "--json", str(out), timeout=240)
    assert r.returncode == 0, r.stderr
    assert "session R@5 0.750  R@10 1.000  NDCG@10 0.833" in r.stdout, r.stdout
    check(json.loads(out.read_text()))
    assert not (home / ".local" / "share" / "mempald" / "store").exists()  # a throw-away store, not the palace


@pytest.mark.timeout(300)
def test_bench_script_and_bad_input(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "lme.json"
    r = subprocess.run([sys.executable, str(REPO / "bench" / "longmemeval.py"), str(SMALL), "--json", str(out)],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    check(json.loads(out.read_text()))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question_id": "x", "question": "?", "haystack_session_ids": ["a"],
                                "haystack_sessions": [], "answer_session_ids": ["a"]}]))
    r = subprocess.run([sys.executable, "-m", "mempald", "bench", "longmemeval", str(bad)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "must be lists of the same length" in r.stderr, r.stderr
    r = mempal_cli(dict(os.environ), "bench", "longmemeval", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "not a readable JSON file" in r.stderr, r.stderr
