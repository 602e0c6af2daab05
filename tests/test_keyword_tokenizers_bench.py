"""``bench/keyword_tokenizers.py`` runs on a tiny file in the LoCoMo layout (written here, one conversation in
Chinese) and reports every tokenizer on every question, each over the same re-encoded drawers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def conversation(sample_id: str, turns: list[tuple[str, str]], question: str) -> dict[str, object]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": turns[0][0], "speaker_b": turns[1][0],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": who, "dia_id": f"D1:{i + 1}", "text": text}
                          for i, (who, text) in enumerate(turns)],
        },
        "qa": [{"question": question, "answer": "x", "evidence": ["D1:1"], "category": 4}],
    }


@pytest.mark.timeout(300)
def test_keyword_tokenizers_bench_smoke(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([
        conversation("tiny-zh", [("Li", "我们在迁移订单表的时候遇到了死锁问题。"), ("Wang", "明天我们一起看看日志吧。"),
                                 ("Li", "今天天气很好，我们去公园散步了。")], "死锁"),
        conversation("tiny-en", [("Ana", "I adopted a grey cat called Pixel."), ("Ben", "Lovely, send pictures!"),
                                 ("Ana", "We went hiking on Sunday.")], "What is Ana's cat called?"),
    ], ensure_ascii=False))
    out = tmp_path / "res.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "keyword_tokenizers.py"), "--data", str(data),
                           "--json", str(out)], capture_output=True, text=True, cwd=REPO, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert set(res) == {"english", "multilingual", "code", "mixed"}
    for name, r in res.items():
        assert r["overall"]["questions"] == 2 and r["drawers"] == 6, name
    assert "mixed" in proc.stdout and "turn_recall@10" in proc.stdout
