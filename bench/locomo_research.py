"""LoCoMo retrieval research harness for mempald (rough, but runnable).

Usage:
    /tmp/v/bin/python bench/locomo_research.py --data /work/shared/bench/locomo/locomo10.json

Protocol: each LoCoMo sample is its own corpus (wing); one drawer per turn, text
``"{speaker}: {text}"`` (+ image caption); drawer timestamp = session date; queries are the
questions verbatim; gold = normalised evidence ids.  Dense = MiniLM int8 (fastembed), sparse =
qdrant_edge.Bm25 with the IDF modifier in an EdgeShard.  Both candidate lists come from one
``query_batch`` call; fusion and rescoring are done in Python with ``mempald.fusion``.

Embeddings and raw candidate lists are cached under /tmp/locomo_cache.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import pickle
import re
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CACHE = Path(os.environ.get("LOCOMO_CACHE", "/tmp/locomo_cache"))
MODEL_PATH = os.environ.get("MEMPAL_MODEL", "/tmp/mdl")


@dataclass
class Turn:
    idx: int  # global point id
    wing: str
    dia_id: str
    session: int
    pos: int
    text: str  # verbatim drawer text
    ts: float


@dataclass
class Question:
    wing: str
    text: str
    gold: set[str]
    category: int


def parse_date(s: str) -> float:
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y").timestamp()


def load(path: str) -> tuple[list[Turn], list[Question]]:
    data = json.load(open(path))
    turns: list[Turn] = []
    qs: list[Question] = []
    for s in data:
        wing = s["sample_id"]
        conv = s["conversation"]
        ids: set[str] = set()
        n = 1
        while f"session_{n}" in conv:
            ts = parse_date(conv[f"session_{n}_date_time"])
            for pos, t in enumerate(conv[f"session_{n}"]):
                text = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    text += f" [image: {t['blip_caption']}]"
                turns.append(Turn(len(turns), wing, t["dia_id"], n, pos, text, ts))
                ids.add(t["dia_id"])
            n += 1
        for qa in s["qa"]:
            gold: set[str] = set()
            for ev in qa.get("evidence", []):
                for e in re.split(r"[;\s]+", ev):
                    m = re.fullmatch(r"D(\d+):(\d+)", e)
                    e = f"D{int(m[1])}:{int(m[2])}" if m else e  # "D30:05" -> "D30:5"
                    if e in ids:
                        gold.add(e)
            if gold:
                qs.append(Question(wing, qa["question"], gold, int(qa["category"])))
    return turns, qs


def index_texts(turns: list[Turn], ctx: str) -> list[str]:
    """Indexed text per drawer. ctx: 'none' | 'prev' | 'prevnext'."""
    out = []
    for i, t in enumerate(turns):
        parts = []
        if ctx in ("prev", "prevnext") and i > 0:
            p = turns[i - 1]
            if p.wing == t.wing and p.session == t.session:
                parts.append(p.text)
        parts.append(t.text)
        if ctx == "prevnext" and i + 1 < len(turns):
            nx = turns[i + 1]
            if nx.wing == t.wing and nx.session == t.session:
                parts.append(nx.text)
        out.append("\n".join(parts))
    return out


_MODEL: Any = None


def model() -> Any:
    global _MODEL
    if _MODEL is None:
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        TextEmbedding.add_custom_model(
            model="mempal/all-MiniLM-L6-v2-int8",
            pooling=PoolingType.MEAN,
            normalization=True,
            sources=ModelSource(hf="mempal/none"),
            dim=384,
            model_file="model.onnx",
        )
        _MODEL = TextEmbedding("mempal/all-MiniLM-L6-v2-int8", specific_model_path=MODEL_PATH, threads=2)
    return _MODEL


def embed_cached(texts: list[str], name: str) -> np.ndarray:
    h = hashlib.sha1("\x00".join(texts).encode()).hexdigest()[:12]
    f = CACHE / f"emb_{name}_{h}.npy"
    if f.exists():
        return np.load(f)
    t0 = time.time()
    arr = np.array(list(model().embed(texts, batch_size=64)), dtype=np.float32)
    np.save(f, arr)
    print(f"embedded {len(texts)} {name} in {time.time() - t0:.1f}s", file=sys.stderr)
    return arr


# ---------------------------------------------------------------- store


def build_shard(turns: list[Turn], ctx: str, dense: np.ndarray) -> Any:
    import qdrant_edge as qe

    path = CACHE / f"shard_{ctx.replace('|', '_')}"
    if path.exists():
        shutil.rmtree(path)
    cfg = qe.EdgeConfig(
        vectors={"dense": qe.EdgeVectorParams(size=384, distance=qe.Distance.Cosine)},
        sparse_vectors={"sparse": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
    )
    shard = qe.EdgeShard.create(str(path), cfg)
    base_ctx, _, bmcfg = ctx.partition("|")
    bm = bm25(bmcfg)
    texts = index_texts(turns, base_ctx)
    pts = [
        qe.Point(
            t.idx,
            {"dense": dense[i].tolist(), "sparse": bm.embed_document(texts[i])},
            {"wing": t.wing, "dia_id": t.dia_id, "ts": t.ts},
        )
        for i, t in enumerate(turns)
    ]
    for i in range(0, len(pts), 500):
        shard.update(qe.UpdateOperation.upsert_points(pts[i : i + 500]))
    shard.flush()
    return shard


_BM: dict[str, Any] = {}


def bm25(cfg: str = "") -> Any:
    """cfg: '' (defaults) or e.g. 'a40' (avg_len 40), 'a40k1.5b0.5'."""
    if cfg not in _BM:
        import qdrant_edge as qe

        kw: dict[str, float] = {}
        for k, v in re.findall(r"([akb])([\d.]+)", cfg):
            kw[{"a": "avg_len", "k": "k", "b": "b"}[k]] = float(v)
        _BM[cfg] = qe.Bm25(qe.Bm25Config(**kw)) if kw else qe.Bm25()
    return _BM[cfg]


def sparse_query(text: str, mode: str) -> Any:
    """Sparse query vector. mode 'plain' = Bm25.embed_query; 'rare:<w>' = rare terms weighted w."""
    import qdrant_edge as qe

    from mempald import fusion

    v = bm25().embed_query(text)
    if mode == "plain":
        return v
    w = float(mode.split(":")[1])
    weights = dict(zip(v.indices, v.values, strict=True))
    for term in fusion.rare_terms(text):
        for ix in bm25().embed_query(term).indices:
            if ix in weights:
                weights[ix] = w
    return qe.SparseVector(list(weights), list(weights.values()))


def run_queries(
    shard: Any, qs: list[Question], qvecs: np.ndarray, k: int, smode: str, lat: list[float] | None = None
) -> list[tuple[list[tuple[int, float]], list[tuple[int, float]]]]:
    import qdrant_edge as qe

    out = []
    for i, q in enumerate(qs):
        t0 = time.perf_counter()
        flt = qe.Filter(must=[qe.FieldCondition(key="wing", match=qe.MatchValue(value=q.wing))])
        req = qe.QueryBatchRequest(
            [
                qe.QueryRequest(
                    limit=k,
                    query=qe.Query.Nearest(qvecs[i].tolist(), using="dense"),
                    filter=flt,
                    with_payload=False,
                ),
                qe.QueryRequest(
                    limit=k,
                    query=qe.Query.Nearest(sparse_query(q.text, smode), using="sparse"),
                    filter=flt,
                    with_payload=False,
                ),
            ]
        )
        d, s = shard.query_batch(req)
        if lat is not None:
            lat.append(time.perf_counter() - t0)
        out.append(([(int(p.id), p.score) for p in d], [(int(p.id), p.score) for p in s]))
    return out


def candidates(turns: list[Turn], qs: list[Question], ctx: str, smode: str = "plain", k: int = 100) -> Any:
    key = (ctx, smode, k, len(qs))
    if key in _CAND:
        return _CAND[key]
    f = CACHE / f"cand_{ctx}_{smode}_{k}_{len(qs)}.pkl"
    if f.exists():
        _CAND[key] = pickle.load(open(f, "rb"))
        return _CAND[key]
    if f.exists():
        return pickle.load(open(f, "rb"))
    dense = embed_cached(index_texts(turns, ctx.partition("|")[0]), f"doc_{ctx.partition('|')[0]}")
    qv = embed_cached([q.text for q in qs], "q")
    shard = SHARDS.get(ctx)
    if shard is None:
        shard = SHARDS[ctx] = build_shard(turns, ctx, dense)
    lat: list[float] = []
    res = run_queries(shard, qs, qv, k, smode, lat)
    print(
        f"queried {ctx}/{smode}: store p50 {1000 * sorted(lat)[len(lat) // 2]:.2f} ms/query", file=sys.stderr
    )
    pickle.dump(res, open(f, "wb"))
    return res


SHARDS: dict[str, Any] = {}
_CAND: dict[Any, Any] = {}
QS: list[Question] = []
QIDX: dict[int, int] = {}


# ---------------------------------------------------------------- metrics


def evaluate(turns: list[Turn], qs: list[Question], ranked: list[list[int]]) -> dict[str, float]:
    r5 = r10 = s10 = ndcg = mrr = 0.0
    for q, ids in zip(qs, ranked, strict=True):
        dia = [turns[i].dia_id for i in ids]
        g = q.gold
        r5 += len(g & set(dia[:5])) / len(g)
        r10 += len(g & set(dia[:10])) / len(g)
        gs = {int(x[1:].split(":")[0]) for x in g}
        sess: list[int] = []
        for i in ids:
            if turns[i].session not in sess:
                sess.append(turns[i].session)
            if len(sess) == 10:
                break
        s10 += len(gs & set(sess)) / len(gs)
        dcg = sum(1 / math.log2(r + 2) for r, x in enumerate(dia[:10]) if x in g)
        idcg = sum(1 / math.log2(r + 2) for r in range(min(len(g), 10)))
        ndcg += dcg / idcg
        mrr += next((1 / (r + 1) for r, x in enumerate(dia) if x in g), 0.0)
    n = len(qs)
    return {"R@5": r5 / n, "R@10": r10 / n, "S@10": s10 / n, "NDCG@10": ndcg / n, "MRR": mrr / n}


if __name__ == "__main__" and os.environ.get("EMBED_ONLY"):
    turns, qs = load(sys.argv[1])
    embed_cached([q.text for q in qs], "q")
    for ctx in ("none", "prev", "prevnext"):
        embed_cached(index_texts(turns, ctx), f"doc_{ctx}")
    sys.exit(0)


# ---------------------------------------------------------------- experiments


def rank_one(
    turns: list[Turn],
    q: Question,
    dense: list[tuple[int, float]],
    sparse: list[tuple[int, float]],
    cfg: dict[str, Any],
    ctx_maps: dict[str, Any],
) -> list[int]:
    from mempald import fusion as F

    depth = cfg.get("depth", 50)
    dl = [F.Candidate(str(i), s) for i, s in dense[:depth]]
    sl = [F.Candidate(str(i), s) for i, s in sparse[:depth]]
    method = cfg.get("fusion", "minmax")
    if method == "dense":
        ranked = [(c.id, c.score) for c in dl]
    elif method == "sparse":
        ranked = [(c.id, c.score) for c in sl]
    elif method == "rrf":
        ranked = F.rrf_fuse([dl, sl], k=cfg.get("rrf_k", 60), weights=cfg.get("rrf_w"))
    elif "extra" in cfg:  # multi-list: [(kind, ctx, weight)] on top of dense/sparse
        lists, ws = [dl, sl], [cfg.get("w", 0.5), 1 - cfg.get("w", 0.5)]
        for kind, ctx, w in cfg["extra"]:
            c = candidates(turns, QS, ctx, "plain")[QIDX[id(q)]]
            lists.append([F.Candidate(str(i), s) for i, s in (c[0] if kind == "dense" else c[1])[:depth]])
            ws.append(w)
        ranked = F.fuse_lists(lists, ws, method)
    else:
        ranked = F.fuse(dl, sl, cfg.get("w", 0.5), method)
    pos = ctx_maps["pos"][q.wing]
    if cfg.get("temporal", 0) > 0:
        win = F.temporal_window(q.text, ctx_maps["now"][q.wing])
        ranked = F.temporal_boost(
            ranked, ctx_maps["ts"], win, cfg["temporal"], timedelta(days=cfg.get("tslack", 0))
        )
    if cfg.get("nb", 0) > 0:
        ranked = F.neighbour_boost(ranked, pos, cfg["nb"], cfg.get("radius", 1))
    if cfg.get("sess", 0) > 0:
        ranked = F.session_boost(ranked, pos, cfg["sess"], cfg.get("stop", 1))
    if cfg.get("dedup", 0) > 0:
        ranked = F.dedup(ranked[:50], ctx_maps["text"], cfg["dedup"]) + ranked[50:]
    return [int(k) for k, _ in ranked]


def maps(turns: list[Turn]) -> dict[str, Any]:
    pos: dict[str, dict[str, tuple[Any, int]]] = {}
    now: dict[str, datetime] = {}
    for t in turns:
        pos.setdefault(t.wing, {})[str(t.idx)] = ((t.wing, t.session), t.pos)
        now[t.wing] = max(now.get(t.wing, datetime.min), datetime.fromtimestamp(t.ts))
    return {
        "pos": pos,
        "now": now,
        "ts": {str(t.idx): datetime.fromtimestamp(t.ts) for t in turns},
        "text": {str(t.idx): t.text for t in turns},
    }


def run(turns: list[Turn], qs: list[Question], cfg: dict[str, Any], mp: dict[str, Any]) -> dict[str, float]:
    dctx, sctx = cfg.get("dctx", "prev"), cfg.get("sctx", "prev")
    smode = cfg.get("smode", "plain")
    cd = candidates(turns, qs, dctx, "plain")  # dense lists do not depend on the bm25 suffix
    cs = candidates(turns, qs, sctx, smode)
    t0 = time.perf_counter()
    ranked = [rank_one(turns, q, cd[i][0], cs[i][1], cfg, mp) for i, q in enumerate(qs)]
    res = evaluate(turns, qs, ranked)
    res["fuse_ms"] = 1000 * (time.perf_counter() - t0) / len(qs)
    return res


def fmt(name: str, r: dict[str, float]) -> str:
    return (
        f"| {name} | {100 * r['R@5']:.1f} | {100 * r['R@10']:.1f} | {100 * r['S@10']:.1f} | "
        f"{r['NDCG@10']:.3f} | {r['MRR']:.3f} | {r['fuse_ms']:.2f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/work/shared/bench/locomo/locomo10.json")
    ap.add_argument("--grid", default="main")
    ap.add_argument("--split", default="all", help="all | even | odd (conversations, for held-out checks)")
    a = ap.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    turns, qs = load(a.data)
    QS[:] = qs
    QIDX.update({id(q): i for i, q in enumerate(qs)})
    mp = maps(turns)
    print(f"{len(turns)} turns, {len(qs)} questions", file=sys.stderr)
    grids = GRIDS[a.grid]
    print("| config | R@5 | R@10 | S@10 | NDCG@10 | MRR | rescoring ms/q |\n|---|---|---|---|---|---|---|")
    for name, cfg in grids:
        r = run(turns, qs, cfg, mp)
        if a.split != "all":
            wings = sorted({t.wing for t in turns})
            keep = set(wings[0::2] if a.split == "even" else wings[1::2])
            sub = [i for i, q in enumerate(qs) if q.wing in keep]
            r = run(turns, [qs[i] for i in sub], cfg, mp)
        print(fmt(name, r), flush=True)


GRIDS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "main": [
        ("dense only, turn", {"fusion": "dense", "dctx": "none"}),
        ("bm25 only, turn", {"fusion": "sparse", "sctx": "none"}),
        ("rrf, turn", {"fusion": "rrf", "dctx": "none", "sctx": "none"}),
        ("minmax w.5, turn", {"dctx": "none", "sctx": "none"}),
        ("dense only, prev", {"fusion": "dense"}),
        ("bm25 only, prev", {"fusion": "sparse"}),
        ("rrf, prev", {"fusion": "rrf"}),
        ("minmax w.5, prev", {}),
    ],
}


GRIDS["w"] = (
    [
        (f"{m} w{w} d{d} dctx={dc} sctx={sc}", {"fusion": m, "w": w, "depth": d, "dctx": dc, "sctx": sc})
        for m in ("minmax",)
        for w in (0.2, 0.3, 0.4)
        for d in (50,)
        for dc, sc in (
            ("prev", "prev"),
            ("prevnext", "prev"),
            ("prevnext", "prevnext"),
            ("none", "prev"),
            ("prev", "none"),
        )
    ]
    + [(f"{m} w{w} d50", {"fusion": m, "w": w}) for m in ("zscore", "dbsf") for w in (0.3, 0.4, 0.5)]
    + [(f"rrf w{w}", {"fusion": "rrf", "rrf_w": [w, 1 - w]}) for w in (0.2, 0.3)]
    + [(f"minmax w0.3 depth {d}", {"w": 0.3, "depth": d}) for d in (10, 20, 30, 100)]
)


B = {"w": 0.3, "depth": 100, "dctx": "prevnext", "sctx": "prev"}
GRIDS["feat"] = (
    [
        ("base minmax w.3 d100 dense=prevnext sparse=prev", B),
        ("+ sparse(turn) list 0.35", {**B, "extra": [("sparse", "none", 0.35)]}),
        (
            "+ sparse(turn) 0.35 + dense(turn) .15",
            {**B, "extra": [("sparse", "none", 0.35), ("dense", "none", 0.15)]},
        ),
    ]
    + [(f"+ nb {nb} r{r}", {**B, "nb": nb, "radius": r}) for nb in (0.3, 0.5, 0.7) for r in (1, 2)]
    + [(f"+ sess {sw}", {**B, "sess": sw}) for sw in (0.1, 0.2, 0.4)]
    + [
        (f"+ temporal {tb} slack {sl}", {**B, "temporal": tb, "tslack": sl})
        for tb in (0.1, 0.3)
        for sl in (0, 7)
    ]
    + [(f"+ rare x{rw}", {**B, "smode": f"rare:{rw}"}) for rw in (1.5, 2.0, 3.0)]
    + [(f"+ dedup {t}", {**B, "dedup": t}) for t in (0.8, 0.9)]
)


GRIDS["bm"] = [
    (f"base, sparse ctx {sc}", {**B, "sctx": sc})
    for sc in ("prev", "prev|a20", "prev|a40", "prev|a80", "prev|a40b0.5", "prev|a40k1.5")
]
GRIDS["sess"] = [
    (f"+ nb .7 + sess {sw} top{t}", {**B, "nb": 0.7, "sess": sw, "stop": t})
    for sw in (0.2, 0.4, 0.8)
    for t in (1, 2, 3)
]

X = [("sparse", "none", 0.35), ("dense", "none", 0.15)]
GRIDS["combo"] = [
    (
        f"4 lists + nb {nb} + sess .2 top3 + temporal {tb}",
        {**B, "extra": X, "nb": nb, "sess": 0.2, "stop": 3, "temporal": tb},
    )
    for nb in (0.5, 0.7, 0.85)
    for tb in (0.0, 0.3)
] + [
    (
        f"2 lists w{w} + nb {nb} + sess .2 top3 + temporal .3",
        {**B, "w": w, "nb": nb, "sess": 0.2, "stop": 3, "temporal": 0.3},
    )
    for w in (0.3, 0.4)
    for nb in (0.7, 0.85)
]

C = {**B, "extra": X, "nb": 0.7, "sess": 0.2, "stop": 3, "temporal": 0.3}
GRIDS["final"] = [
    ("chosen: 4 lists + nb .7 + sess .2/top3 + temporal .3", C),
    ("chosen, depth 50", {**C, "depth": 50}),
    ("chosen, nb radius 2", {**C, "radius": 2}),
    (
        "chosen, 4 lists .2/.3/.4/.1",
        {**C, "w": 0.2, "extra": [("sparse", "none", 0.4), ("dense", "none", 0.1)]},
    ),
    (
        "chosen, 4 lists .3/.7/.5/.2 (unnormalised sum)",
        {**C, "extra": [("sparse", "none", 0.5), ("dense", "none", 0.2)]},
    ),
    ("chosen, temporal slack 7d", {**C, "tslack": 7}),
    ("chosen + dedup .9", {**C, "dedup": 0.9}),
    ("chosen - sess", {**C, "sess": 0}),
    ("chosen - temporal", {**C, "temporal": 0}),
    ("chosen - nb", {**C, "nb": 0}),
    ("chosen, zscore", {**C, "fusion": "zscore"}),
    ("floor: minmax w.5 + prev ctx", {}),
]

GRIDS["last"] = [
    ("chosen, temporal .5", {**C, "temporal": 0.5}),
    ("chosen, sess .3", {**C, "sess": 0.3}),
    ("chosen, nb .5 sess .3 temporal .5", {**C, "nb": 0.5, "sess": 0.3, "temporal": 0.5}),
]

if __name__ == "__main__" and not os.environ.get("EMBED_ONLY"):
    main()
