"""Keyword tokenizers side by side on LoCoMo, through mempald's real ingest, store and search.

The conversations are ingested and embedded once (``bench/locomo.py``'s drawers: one wing per conversation);
then, for each tokenizer, every drawer's keyword vector is re-encoded in place with the store's own
``set_sparse`` (what ``mempal reindex`` does to a palace built with another tokenizer; the dense vectors stay)
and all questions are asked with the default search options and that tokenizer's query encoding.

    python bench/keyword_tokenizers.py [--data PATH] [--limit N] [--tokenizers english,multilingual,code,mixed]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from locomo import CATEGORIES, DEFAULT_DATA, _ingest, aggregate, gold_ids, load, score_question  # noqa: E402

from mempald.benchmarks.palace import open_bench_palace  # noqa: E402
from mempald.embed.sparse import TOKENIZERS, Bm25Encoder  # noqa: E402
from mempald.ingest.drawers import index_text  # noqa: E402
from mempald.runtime.root import Daemon  # noqa: E402
from mempald.search.ranking import SearchOptions  # noqa: E402
from mempald.search.searcher import Searcher, SearchRequest  # noqa: E402
from mempald.store.base import Filters  # noqa: E402


async def reencode(daemon: Daemon, bm25: Bm25Encoder) -> int:
    n = 0
    async for page in daemon.store.pages(Filters(include_deleted=True)):
        await daemon.store.set_sparse([(p.id, bm25.document(index_text(p.payload))) for p in page])
        n += len(page)
    return n


async def run(args: argparse.Namespace) -> dict[str, Any]:
    samples = load(args.data)
    work = Path(tempfile.mkdtemp(prefix="tokenizers-"))
    palace = open_bench_palace(work, threads=args.threads)
    daemon, embedder = palace.daemon, palace.embedder
    out: dict[str, Any] = {}
    try:
        asked: list[tuple[str, str, int, list[str], Any]] = []
        remaining = args.limit
        for sample in samples:
            if remaining is not None and remaining <= 0:
                break
            known = {e.key for e in sample.exchanges}
            qs = [(q, gold_ids(q.get("evidence", []), known)) for q in sample.questions]
            qs = [(q, g) for q, g in qs if g]
            if remaining is not None:
                qs = qs[:remaining]
                remaining -= len(qs)
            await _ingest(daemon.ingestor, daemon.densifier, sample)
            asked += [(sample.sample_id, str(q["question"]), int(q.get("category", 0)), g, sample.now) for q, g in qs]
            print(f"  ingested {sample.sample_id}", file=sys.stderr)
        for name in args.tokenizers.split(","):
            bm25 = Bm25Encoder(name)
            n = await reencode(daemon, bm25)
            searcher = Searcher(daemon.store, embedder, bm25)
            rows: list[tuple[int, dict[str, float]]] = []
            for wing, question, cat, gold, now in asked:
                hits = await searcher.search(SearchRequest(question, limit=50, filters=Filters(wing=(wing,)),
                                                           options=SearchOptions(), now=now))
                rows.append((cat, score_question([h["exchange_key"] for h in hits], gold)))
            out[name] = {"overall": aggregate([r for _, r in rows]), "drawers": n,
                         "per_category": {str(c): aggregate([r for k, r in rows if k == c]) for c in CATEGORIES}}
            o = out[name]["overall"]
            print(f"  {name}: turn R@10 {o['turn_recall@10']:.4f}", file=sys.stderr)
    finally:
        palace.close()
        shutil.rmtree(work, ignore_errors=True)
    return out


def table(res: dict[str, Any]) -> str:
    cols = ("turn_recall@5", "turn_recall@10", "session_recall@10", "ndcg@10", "mrr")
    lines = [f"{'tokenizer':<14}{'questions':>10}" + "".join(f"{c:>19}" for c in cols)]
    for name, r in res.items():
        o = r["overall"]
        lines.append(f"{name:<14}{int(o['questions']):>10}" + "".join(f"{o[c]:>19.4f}" for c in cols))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--tokenizers", default=",".join(TOKENIZERS))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if not args.data.is_file():
        print(f"no LoCoMo data at {args.data}; pass --data PATH", file=sys.stderr)
        return 2
    res = anyio.run(run, args)
    print(table(res))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
