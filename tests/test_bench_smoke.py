"""Every performance benchmark still runs: its smoke mode (tiny sizes, a real daemon) exits 0 and writes its
JSON with the expected keys. No timing assertions: speed is measured by the benchmarks, not by timed tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
COMMON = {"benchmark", "machine", "loadavg_end", "loadavg_start"}
EXPECTED = {
    "backfill": {"exchanges", "drawers", "exchanges_per_s", "drawers_per_s", "fastembed_drawers_per_s", "ratio",
                 "peak_rss_mb", "end_to_end_s", "texts_over_model_length", "dense_pass_speedup",
                 "min_cosine_vs_alone"},
    "freshness": {"idle", "backfilling", "n", "backlog_exchanges"},
    "search_latency": {"sizes", "prefilled"},
    "hook_roundtrip": {"command", "hook_ms", "python_bare_ms"},
    "rule_hook": {"command", "hook_ms", "python_bare_ms", "noop_hook_ms", "denied", "silent"},
    "responsiveness": {"status_ms", "n_exchanges", "burst"},
    "footprint": {"startup_ms", "idle_rss_mb", "disk_total_mb", "drawers"},
    "sync": {"n", "export_s", "import_s", "segments", "embedded_on_b", "hits_on_b"},
}


@pytest.mark.timeout(240)
def test_benchmarks_smoke(tmp_path: Path) -> None:
    """All seven in parallel pairs would fight over two cores; run them one after another (about a minute)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMPAL_", "XDG_"))}
    failures = []
    for name, keys in EXPECTED.items():
        out = tmp_path / f"{name}.json"
        proc = subprocess.run([sys.executable, str(REPO / "bench" / f"{name}.py"), "--smoke", "--json", str(out)],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=200)
        if proc.returncode != 0:
            failures.append(f"{name}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
            continue
        data = json.loads(out.read_text())
        missing = (keys | COMMON) - set(data)
        if missing:
            failures.append(f"{name}: JSON lacks {sorted(missing)}")
        if data.get("benchmark") != name:
            failures.append(f"{name}: JSON names benchmark {data.get('benchmark')!r}")
        if name == "backfill" and not data.get("min_cosine_vs_alone", 0) >= 0.9999:
            failures.append(f"backfill: the dense pass's vectors differ from fastembed alone's: {data}")
    assert not failures, "\n\n".join(failures)


def _conversation(sample_id: str, who: tuple[str, str], fact: str, question: str, category: int) -> dict[str, object]:
    """One conversation in the LoCoMo layout (written for this test): a fact, a reply, and a question on it."""
    a, b = who
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": a, "speaker_b": b,
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": a, "dia_id": "D1:1", "text": fact},
                {"speaker": b, "dia_id": "D1:2", "text": "That sounds great, tell me more next time."},
            ],
            "session_2_date_time": "10:00 am on 20 June, 2023",
            "session_2": [{"speaker": b, "dia_id": "D2:1", "text": "I repainted the kitchen a pale green."}],
        },
        "qa": [{"question": question, "answer": "x", "evidence": ["D1:1"], "category": category},
               {"question": f"What colour is {b}'s kitchen?", "answer": "green", "evidence": ["D2:1"],
                "category": 4}],
    }


TWO_CONVERSATIONS = [
    _conversation("tiny-a", ("Ana", "Ben"), "I adopted a grey cat called Pixel.", "What is Ana's cat called?", 4),
    _conversation("tiny-b", ("Cleo", "Dev"), "I started learning the cello in March.", "What does Cleo play?", 1),
]


@pytest.mark.timeout(300)
def test_locomo_folds_and_ablation_smoke(tmp_path: Path) -> None:
    """``bench/locomo.py --folds 2`` reports every metric per fold (conversation 0, conversation 1) and per
    category, and the default output stays as it is; ``bench/locomo_ablate.py`` re-ranks one variant on the
    same store and prints its table."""
    data = tmp_path / "two.json"
    data.write_text(json.dumps(TWO_CONVERSATIONS))
    store, out = tmp_path / "store", tmp_path / "folds.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "locomo.py"), "--data", str(data), "--store",
                           str(store), "--folds", "2", "--json", str(out)], capture_output=True, text=True, cwd=REPO,
                          timeout=200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert [f["conversations"] for f in res["folds"]] == [["tiny-a"], ["tiny-b"]]
    metrics = {"turn_recall@5", "turn_recall@10", "session_recall@5", "session_recall@10", "recall_any@5",
               "ndcg@10", "mrr", "questions"}
    for fold in res["folds"]:
        assert set(fold["overall"]) == metrics
        assert fold["overall"]["questions"] == 2
        assert set(fold["per_category"]) == {"1", "2", "3", "4", "5"}
    assert res["folds"][0]["per_category"]["4"]["questions"] == 2  # both of tiny-a's questions are single-hop
    assert res["folds"][1]["per_category"]["1"]["questions"] == 1
    assert res["overall"]["questions"] == 4
    assert "fold 1/2: tiny-a" in proc.stdout and "fold 2/2: tiny-b" in proc.stdout
    plain = subprocess.run([sys.executable, str(REPO / "bench" / "locomo.py"), "--data", str(data), "--store",
                            str(store)], capture_output=True, text=True, cwd=REPO, timeout=200)
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert "fold" not in plain.stdout and "overall" in plain.stdout  # without --folds, the table it always printed

    abl = tmp_path / "ablate.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "locomo_ablate.py"), "--data", str(data), "--store",
                           str(store), "--only", "candidates", "--json", str(abl)], capture_output=True,
                          text=True, cwd=REPO, timeout=200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = json.loads(abl.read_text())["results"]
    assert set(runs) == {"defaults", "candidates=50", "candidates=200"}
    assert runs["defaults"]["overall"] == res["overall"]  # the same store and options give the same figures
    assert "| candidates | 50 |" in proc.stdout and "| candidates | 200 |" in proc.stdout

    # lists recomputed in Python (bench/locomo_lists.py): at the product's encoding and context, the same figures
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "locomo_ablate.py"), "--data", str(data), "--store",
                           str(store), "--only", "keyword", "--keyword", "context=1", "--keyword", "b=0",
                           "--dense-context", "1", "--json", str(abl)], capture_output=True, text=True, cwd=REPO,
                          timeout=200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = json.loads(abl.read_text())["results"]
    assert set(runs) == {"defaults", "keyword=k=1.2,b=0.75,avg_len=256,context=1",
                         "keyword=k=1.2,b=0,avg_len=256,context=1", "dense_context=1"}
    assert runs["keyword=k=1.2,b=0.75,avg_len=256,context=1"] == runs["defaults"]
    assert runs["dense_context=1"] == runs["defaults"]
    assert "| dense_context | 1 |" in proc.stdout

    # --messages: the same questions on the turns cut into sentences, in a store of its own kind
    msgs, mout = tmp_path / "messages", tmp_path / "messages.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "locomo.py"), "--data", str(data), "--store",
                           str(msgs), "--messages", "--json", str(mout)], capture_output=True, text=True, cwd=REPO,
                          timeout=200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(mout.read_text())["overall"]["questions"] == 4
    assert json.loads((msgs / "locomo-ingested.json").read_text())["ingest"] == "messages"
