"""The default model's fused graph (``mempald.embed.graph``): the same vectors as the file that ships, checked
before it is used; a graph it does not know, a rewrite that changes the vectors or a damaged file falls back to
or rebuilds from the original.

Real parts: the packaged model, onnx, onnxruntime, and the drawers of the real Claude Code transcripts in
``../shared/fixtures/formats/claude_code`` (as the dense worker embeds them: text after its context, and bare).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mempald.embed import graph
from mempald.embed.embedder import MAX_SEQ_LEN, ONNX_SHA256, Embedder, assemble_default_model
from tests.integration.test_dense_batches import real_texts


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def fused(models: Path) -> Embedder:
    return Embedder(models_dir=models, threads=2)


@pytest.fixture(scope="module")
def original(models: Path, fused: Embedder) -> Embedder:
    return Embedder(models_dir=models, threads=2, fuse=False)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_the_daemon_embeds_with_the_fused_graph_and_records_why(fused: Embedder, original: Embedder) -> None:
    folder = Path(fused.info.path)
    assert fused.info.model_file == graph.FUSED_FILE and original.info.model_file == "model.onnx"
    assert fused.info.model_id == original.info.model_id  # the store's model: the same, no re-embedding
    record = json.loads((folder / graph.RECORD_FILE).read_text())
    assert record["ok"] and record["source"] == ONNX_SHA256 and record["version"] == graph.FUSE_VERSION
    assert (record["nan_guards"], record["attention"], record["gelu"]) == (6, 6, 6)
    kinds = {n.op_type for n in onnx.load(str(folder / graph.FUSED_FILE)).graph.node}
    assert {"Attention", "Gelu"} <= kinds and not {"IsNaN", "Softmax", "Erf"} & kinds
    assert "fused graph in use" in graph.describe(folder)


def test_real_drawers_get_the_same_vectors_alone_and_in_batches(fused: Embedder, original: Embedder) -> None:
    texts = real_texts(fused, 120)
    lengths = fused.count_tokens_batch(texts)
    assert min(lengths) < 64 and max(lengths) > 200, "the sample needs short and long texts"
    before = np.concatenate([original.embed(texts[i : i + 8], batch_size=8) for i in range(0, len(texts), 8)])
    alone = fused.embed(texts, batch_size=1)
    batched = fused.embed_by_length(texts, max_count=16, token_budget=2 * MAX_SEQ_LEN)
    for got in (alone, batched):
        assert cosines(before, got).min() >= 0.99999, f"lowest cosine {cosines(before, got).min():.7f}"
    query = "how did we fix the flaky socket test?"
    assert float(cosines(original.embed([query]), fused.embed_query(query)[None, :])[0]) >= 0.99999


def test_the_rewrite_passes_its_probe_check_and_is_deterministic(fused: Embedder, tmp_path: Path) -> None:
    folder = Path(fused.info.path)
    again = tmp_path / "again.onnx"
    graph.fuse_file(folder / "model.onnx", again)
    assert graph.min_cosine(folder / "model.onnx", again, folder / "tokenizer.json") >= graph.MIN_COSINE
    # The digest that lets a new folder skip the probe check is the one this onnx writes; where another onnx
    # version writes other bytes, the check runs instead (the next test).
    if graph._sha256(again) != graph.FUSED_SHA256:
        pytest.skip(f"onnx {onnx.__version__} serialises the rewrite differently; the probe check covers it")
    assert graph._sha256(again) == graph._sha256(folder / graph.FUSED_FILE)


def fresh_folder(tmp_path: Path) -> Path:
    return assemble_default_model(tmp_path / "models")


def test_an_unknown_digest_is_checked_on_probe_texts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = fresh_folder(tmp_path)
    monkeypatch.setattr(graph, "FUSED_SHA256", "0" * 64)
    assert graph.prepare(folder, ONNX_SHA256) == folder / graph.FUSED_FILE
    record = json.loads((folder / graph.RECORD_FILE).read_text())
    assert record["checked"] == "probe texts" and record["min_cosine"] >= graph.MIN_COSINE


def test_a_rewrite_that_changes_the_vectors_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = fresh_folder(tmp_path)
    monkeypatch.setattr(graph, "FUSED_SHA256", "0" * 64)
    monkeypatch.setattr(graph, "NUM_HEADS", 6)  # a wrong attention: it runs, and gives other vectors
    assert graph.prepare(folder, ONNX_SHA256) is None
    record = json.loads((folder / graph.RECORD_FILE).read_text())
    assert not record["ok"] and "vectors differ" in record["reason"]
    assert not (folder / graph.FUSED_FILE).exists()
    assert "original graph in use" in graph.describe(folder)
    # Not tried again at every start: the record stands until the source or the rewrite changes.
    monkeypatch.setattr(graph, "fuse_file", lambda *_: pytest.fail("the failed rewrite was tried again"))
    assert graph.prepare(folder, ONNX_SHA256) is None


def test_a_graph_the_rewrite_does_not_know_keeps_the_original(tmp_path: Path) -> None:
    folder = tmp_path / "other"
    folder.mkdir()
    x = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "s"])
    y = helper.make_tensor_value_info("out", TensorProto.INT64, ["b", "s"])
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Identity", ["input_ids"], ["out"])], "g",
                                                  [x], [y])), str(folder / "model.onnx"))
    assert graph.prepare(folder, "another-source") is None
    record = json.loads((folder / graph.RECORD_FILE).read_text())
    assert not record["ok"] and "GraphError" in record["reason"]


def test_a_damaged_fused_file_or_record_is_rebuilt(tmp_path: Path) -> None:
    folder = fresh_folder(tmp_path)
    fused = graph.prepare(folder, ONNX_SHA256)
    assert fused is not None
    good = fused.read_bytes()
    fused.write_bytes(good[: len(good) // 2])  # a torn write, a bad sector
    assert graph.prepare(folder, ONNX_SHA256) == fused and fused.read_bytes() == good
    (folder / graph.RECORD_FILE).write_text("{not json")
    assert graph.prepare(folder, ONNX_SHA256) == fused and fused.read_bytes() == good
    assert Embedder(models_dir=tmp_path / "models", threads=1).info.model_file == graph.FUSED_FILE


def test_a_full_disk_while_fusing_is_not_held_against_the_graph(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    folder = fresh_folder(tmp_path)

    def full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(onnx, "save", full)
    assert graph.prepare(folder, ONNX_SHA256) is None
    assert not (folder / graph.RECORD_FILE).exists() and not list(folder.glob("model_fused*"))
    monkeypatch.undo()
    assert graph.prepare(folder, ONNX_SHA256) == folder / graph.FUSED_FILE  # the next start tries again


def test_a_fused_graph_this_onnxruntime_cannot_load_falls_back_to_the_shipped_one(tmp_path: Path) -> None:
    folder = fresh_folder(tmp_path)
    fused = graph.prepare(folder, ONNX_SHA256)
    assert fused is not None
    fused.write_bytes(b"not an onnx graph")  # as if another onnxruntime refused it: the record still vouches
    record = json.loads((folder / graph.RECORD_FILE).read_text())
    record["sha256"] = graph._sha256(fused)
    (folder / graph.RECORD_FILE).write_text(json.dumps(record))
    embedder = Embedder(models_dir=tmp_path / "models", threads=1)
    assert embedder.info.model_file == "model.onnx"
    assert embedder.embed_query("still answers").shape == (embedder.dim,)
