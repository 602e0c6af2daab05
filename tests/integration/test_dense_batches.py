"""Length-sorted, token-budgeted model calls give the same vectors as fastembed over the texts in arrival order.

Real texts: the drawers (text with its context, as the dense worker embeds them) of the real Claude Code
transcripts in ``../shared/fixtures/formats/claude_code``, and their bare texts (a mix of short and long), all
through the real packaged model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mempald.embed.embedder import MAX_SEQ_LEN, Embedder, length_batches
from mempald.ingest.drawers import SourceInfo, build_drawers
from mempald.normalize.claude_code import parse_lines
from mempald.normalize.model import Line

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "formats" / "claude_code"


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(models_dir=tmp_path_factory.mktemp("models"), threads=2)


def real_texts(embedder: Embedder, limit: int) -> list[str]:
    files = sorted(FIXTURES.rglob("*.jsonl"))
    if not files:
        pytest.skip(f"no Claude Code fixtures under {FIXTURES}")
    texts: list[str] = []
    for f in files:
        lines, off = [], 0
        for raw in f.read_bytes().splitlines():
            lines.append(Line(off, raw))
            off += len(raw) + 1
        info = SourceInfo(kind="claude_code", path=str(f), source_key="claude_code", machine="m", user="u")
        for d in build_drawers(parse_lines(lines), info, embedder.count_tokens, 250):
            texts.append(embedder.with_context(str(d.payload.get("context") or ""), d.text, 250))
            texts.append(d.text)
    return texts[:limit]


def test_sorted_batches_give_the_vectors_of_arrival_order(embedder: Embedder) -> None:
    texts = real_texts(embedder, 160)
    lengths = embedder.count_tokens_batch(texts)
    assert min(lengths) < 64 and max(lengths) > 200, "the sample needs a real mix of short and long texts"
    arrival = np.concatenate([embedder.embed(texts[i : i + 8], batch_size=8) for i in range(0, len(texts), 8)])
    by_length = embedder.embed_by_length(texts, max_count=32, token_budget=8 * MAX_SEQ_LEN)
    cos = np.sum(arrival * by_length, axis=1) / (
        np.linalg.norm(arrival, axis=1) * np.linalg.norm(by_length, axis=1))
    assert cos.min() >= 0.9999, f"lowest cosine {cos.min():.6f}"
    batches = length_batches(lengths, 32, 8 * MAX_SEQ_LEN)
    padded = sum(len(b) * min(max(lengths[i] for i in b) + 2, MAX_SEQ_LEN) for b in batches)
    arrival_padded = sum(len(texts[i : i + 8]) * min(max(lengths[i : i + 8]) + 2, MAX_SEQ_LEN)
                         for i in range(0, len(texts), 8))
    assert padded < arrival_padded  # less work on padding, the point of sorting
