"""The retrieval benchmark runs (a few questions on a tiny file in the LoCoMo layout; no targets)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

TINY = [{
    "sample_id": "tiny-1",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat called Pixel last week."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! Is Pixel settling in?"},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "Yes, she sleeps on my keyboard all day.",
             "blip_caption": "a grey cat on a laptop"},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I finally ran the Berlin marathon in four hours."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Congratulations on the marathon!"},
        ],
    },
    "qa": [
        {"question": "What is the name of Ana's cat?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
        {"question": "Which marathon did Ben run?", "answer": "Berlin", "evidence": ["D2:1; D9:9"], "category": 4},
        {"question": "When did Ana adopt her cat?", "answer": "May 2023", "evidence": ["D1:1"], "category": 2},
        {"question": "What has no evidence?", "answer": "x", "evidence": [], "category": 3},
    ],
}]


@pytest.mark.timeout(240)
def test_locomo_bench_smoke(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY))
    out = tmp_path / "out.json"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    run = subprocess.run([sys.executable, str(REPO / "bench" / "locomo.py"), "--data", str(data), "--limit", "3",
                          "--json", str(out)], capture_output=True, text=True, timeout=220, cwd=REPO,
                         env={**os.environ, "TMPDIR": str(tmp)})
    assert run.returncode == 0, run.stderr
    assert list(tmp.glob("locomo-*")) == []  # the throw-away store is removed (onnxruntime leaves its own .ses)
    res = json.loads(out.read_text())
    assert res["overall"]["questions"] == 3
    assert set(res["overall"]) >= {"turn_recall@5", "turn_recall@10", "session_recall@5", "session_recall@10",
                                   "recall_any@5", "ndcg@10", "mrr", "questions"}
    assert set(res["per_category"]) == {"1", "2", "3", "4", "5"}
    assert set(res["latency_ms"]) == {"p50", "p95"}
    assert 0.0 <= res["overall"]["turn_recall@10"] <= 1.0
    assert "overall" in run.stdout
