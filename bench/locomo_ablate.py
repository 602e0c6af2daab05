"""Ablation of every default of the ranking pipeline on LoCoMo, per fold of the conversations and per category.

    python bench/locomo_ablate.py --store DIR [--data PATH] [--folds 2] [--json PATH] [--only FEATURE ...]
                                  [--set OPTION=VALUE ...] [--context-store DIR] [--messages]
                                  [--keyword k=,b=,avg_len=,context= ...] [--dense-context N ...]

One ingest (``bench/locomo.py``'s store in DIR, built if missing), then every variant re-ranks all questions
on it: the query vectors and the store's answers are kept (in DIR, for later passes too), so after the first run
a variant costs only the Python ranking. For each feature of ``mempald.search.ranking.SearchOptions``, the
pipeline is run with the feature at its neutral value (off) and at weaker values, everything else at its default
(or at ``--set`` overrides: the baseline for a second pass). ``--context-store DIR`` also builds a second store
whose drawers are indexed without the drawer before them (``context``), for that feature.
``--messages`` runs the same on ``bench/locomo.py --messages``'s view (one drawer per sentence; give it its own
``--store``): the second shape of the data a default should hold on.
``--keyword ENCODING`` and ``--dense-context N`` add rows whose keyword or dense list is recomputed in Python from
the store's own points under another BM25 encoding or with a wider context (``bench/locomo_lists.py``): an
encoding measured without a new ingest. Their column "default beats it" applies the same rule. They run whatever
``--only`` says; ``--only keyword`` (no feature has that name) runs them alone.

The rule (issue 24): a feature is kept only if its gain over its neutral value holds on every fold and on every
question category with at least 100 questions: the primary metric (turn R@10; session R@10 for ``spread_after``,
which cannot move the first ten) must rise on each fold and not fall on any such category, and the other R@10
must not fall on any fold. Otherwise the simpler setting wins (a tie too).

The LoCoMo data file is CC BY-NC 4.0: read by path, never copied into this repository.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import anyio
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import locomo  # noqa: E402
import locomo_lists  # noqa: E402

from mempald.ingest import writer  # noqa: E402
from mempald.search import ranking  # noqa: E402
from mempald.search.ranking import SearchOptions  # noqa: E402

MIN_CATEGORY = 100  # categories with fewer questions are reported but do not decide


@dataclass(frozen=True)
class Variant:
    feature: str
    label: str
    options: dict[str, Any]  # SearchOptions overrides
    store: str = "default"  # "context-off": the store indexed without context
    primary: str = "turn_recall@10"
    keyword: locomo_lists.KeywordEncoding | None = None  # the keyword list recomputed under this encoding
    dense_context: int | None = None  # the dense list recomputed with this many previous drawers as context


def variants() -> list[Variant]:
    """Each feature at its neutral value first, then weaker or other values (the default is the baseline)."""
    return [
        Variant("candidates", "50", {"candidates": 50}),
        Variant("candidates", "200", {"candidates": 200}),
        Variant("dense_weight", "0.5 (equal)", {"dense_weight": 0.5}),
        Variant("dense_weight", "0 (BM25 only)", {"dense_weight": 0.0}),
        Variant("dense_weight", "0.2", {"dense_weight": 0.2}),
        Variant("dense_weight", "0.3", {"dense_weight": 0.3}),
        Variant("dense_weight", "0.4", {"dense_weight": 0.4}),
        Variant("dense_weight", "1 (dense only)", {"dense_weight": 1.0}),
        Variant("temporal_boost", "0", {"temporal_boost": 0.0}),
        Variant("temporal_boost", "0.3", {"temporal_boost": 0.3}),
        Variant("temporal_boost", "0.5", {"temporal_boost": 0.5}),
        Variant("temporal_boost", "1", {"temporal_boost": 1.0}),
        Variant("speaker_boost", "0", {"speaker_boost": 0.0}),
        Variant("speaker_boost", "0.3", {"speaker_boost": 0.3}),
        Variant("speaker_boost", "0.5", {"speaker_boost": 0.5}),
        Variant("speaker_boost", "1", {"speaker_boost": 1.0}),
        Variant("neighbours", "all 0", {"neighbour_decay": 0.0, "neighbour_forward": 0.0, "question_forward": 0.0}),
        Variant("neighbour_decay", "0", {"neighbour_decay": 0.0}),
        Variant("neighbour_decay", "0.4", {"neighbour_decay": 0.4}),
        Variant("neighbour_forward", "0", {"neighbour_forward": 0.0}),
        Variant("neighbour_forward", "0.2", {"neighbour_forward": 0.2}),
        Variant("neighbour_forward", "0.4", {"neighbour_forward": 0.4}),
        Variant("question_forward", "0", {"question_forward": 0.0}),
        Variant("question_forward", "0.4", {"question_forward": 0.4}),
        Variant("question_forward", "0.6", {"question_forward": 0.6}),
        Variant("question_forward", "0.8", {"question_forward": 0.8}),
        Variant("when_boost", "0", {"when_boost": 0.0}),
        Variant("when_boost", "1", {"when_boost": 1.0}),
        Variant("when_boost", "2", {"when_boost": 2.0}),
        Variant("when_boost", "100 (to the session's best)", {"when_boost": 100.0}),
        Variant("session_weight", "0", {"session_weight": 0.0}),
        Variant("session_weight", "0.1", {"session_weight": 0.1}),
        Variant("session_weight", "0.2 (top 3)", {"session_weight": 0.2, "session_top": 3}),
        Variant("session_top", "1", {"session_top": 1}),
        Variant("spread_after", "-1 (off)", {"spread_after": -1}, primary="session_recall@10"),
        Variant("dedup_threshold", "1 (off)", {"dedup_threshold": 1.0}),
        Variant("min_relevance", "0 (no floor)", {"min_relevance": 0.0}),
        Variant("context", "off (drawer alone)", {}, store="context-off"),
    ]


@contextmanager
def without_context() -> Iterator[None]:
    """Ingest as usual, but with no drawer carrying the drawer before it (what ``context`` indexing adds)."""
    build = writer.build_drawers  # type: ignore[attr-defined]

    def bare(*a: Any, **kw: Any) -> list[Any]:
        drawers: list[Any] = build(*a, **kw)
        for d in drawers:
            d.payload.pop("context", None)
        return drawers

    setattr(writer, "build_drawers", bare)  # noqa: B010
    try:
        yield
    finally:
        setattr(writer, "build_drawers", build)  # noqa: B010


class Memo:
    """A read-only store whose answers are kept: after the first variant, every variant re-ranks in Python alone
    (the same results as the store gives: it does not change between variants)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.answers: dict[Any, Any] = {}
        self.points: dict[str, Any] = {}
        self.swap: Any = None  # locomo_lists.swap_lists: the store's lists with one recomputed

    def _once(self, key: Any, call: Any) -> Any:
        if key not in self.answers:
            self.answers[key] = call()
        return self.answers[key]

    def query(self, dense: Any, sparse: Any, filters: Any, limit: int, *, fields: Any = None) -> Any:
        key = ("query", tuple(dense), sparse, filters, limit, fields)
        lists = self._once(key, lambda: self.inner.query(dense, sparse, filters, limit, fields=fields))
        return lists if self.swap is None else self.swap(lists, dense, sparse, filters, limit, fields)

    def scroll(self, filters: Any, limit: int, *, fields: Any = None) -> Any:
        return self._once(("scroll", filters, limit, fields), lambda: self.inner.scroll(filters, limit, fields=fields))

    def count(self, filters: Any) -> int:
        return int(self._once(("count", filters), lambda: self.inner.count(filters)))

    def retrieve(self, ids: list[str], *, with_vectors: bool = False, with_payload: bool = True,
                 fields: Any = None) -> list[Any]:
        """Points read whole once (vectors and every payload key), then given as asked."""
        missing = [i for i in ids if i not in self.points]
        if missing:
            self.points.update({i: None for i in missing})
            self.points.update({p.id: p for p in self.inner.retrieve(missing, with_vectors=True)})
        out = []
        for i in ids:
            p = self.points[i]
            if p is None:
                continue
            payload = dict(p.payload) if with_payload else {}
            if with_payload and fields is not None:
                payload = {k: payload[k] for k in fields if k in payload}
            out.append(replace(p, payload=payload, dense=p.dense if with_vectors else None,
                               sparse=p.sparse if with_vectors else None))
        return out


async def measure(args: argparse.Namespace, store_dir: Path, runs: list[tuple[str, Variant | None]],
                  base: SearchOptions, bare: bool = False) -> dict[str, dict[str, Any]]:
    """Ingest into ``store_dir`` unless it holds this data already, then every run's summary."""
    samples = locomo.load(args.data)
    if args.messages:
        samples = locomo.as_messages(samples)
    ns = argparse.Namespace(store=store_dir, data=args.data)
    tag = locomo.ingest_tag(args.messages, bare)
    work, reuse = locomo._open_work(ns, tag)
    asked = locomo.questions(samples, None)
    out: dict[str, dict[str, Any]] = {}
    async with locomo.components(work, args.threads) as daemon:
        if not reuse:
            with without_context() if bare else nullcontext():
                for sample in samples:
                    await locomo._ingest(daemon.ingestor, daemon.densifier, sample)
            (work / "locomo-ingested.json").write_text(json.dumps(locomo._fingerprint(args.data, tag)))
        embed = daemon.searcher.embedder.embed_query
        cache: dict[str, np.ndarray] = {}
        edge = daemon.store.store
        memo = Memo(edge)
        kept = work / "ablate-memo.pickle"  # the store's answers and the query vectors, for the next pass
        loaded = reuse and kept.is_file()
        if loaded:
            cache, memo.answers, memo.points = pickle.loads(kept.read_bytes())

        def cached(text: str) -> np.ndarray:
            if text not in cache:
                cache[text] = embed(text)
            return cache[text]

        daemon.searcher.embedder.embed_query = cached  # type: ignore[method-assign]
        setattr(edge, "_ranker", lambda _store, request: ranking.rank(cast(Any, memo), request))  # noqa: B010
        everything: list[Any] = []
        keyword_lists: dict[locomo_lists.KeywordEncoding, locomo_lists.KeywordList] = {}
        dense_lists: dict[int, locomo_lists.DenseList] = {}
        for key, v in runs:
            opts = replace(base, **(v.options if v else {}))
            memo.swap = None
            if v is not None and (v.keyword is not None or v.dense_context is not None):
                everything = everything or locomo_lists.all_points(edge)
                if v.keyword is not None and v.keyword not in keyword_lists:
                    keyword_lists[v.keyword] = locomo_lists.KeywordList(everything, v.keyword)
                if v.dense_context is not None and v.dense_context not in dense_lists:
                    dense_lists[v.dense_context] = locomo_lists.DenseList(
                        everything, v.dense_context, daemon.searcher.embedder, work)
                memo.swap = locomo_lists.swap_lists(
                    dense_lists[v.dense_context] if v.dense_context is not None else None,
                    keyword_lists[v.keyword] if v.keyword is not None else None)
            rows = await locomo.ask(daemon.searcher, samples, asked, opts)
            out[key] = locomo.summary(rows, samples, args.folds)
            if not loaded and key in (runs[0][0], runs[-1][0]):
                kept.write_bytes(pickle.dumps((cache, memo.answers, memo.points)))
            print(f"  {key}: turn R@10 {out[key]['overall']['turn_recall@10']:.4f} "
                  f"session R@10 {out[key]['overall']['session_recall@10']:.4f}", file=sys.stderr)
    return out


def slices(res: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The slices a decision looks at: each fold, and each category with at least MIN_CATEGORY questions."""
    out = {f"fold {f['fold']}": f["overall"] for f in res["folds"]}
    out.update({locomo.CATEGORIES[int(c)]: m for c, m in res["per_category"].items()
                if m["questions"] >= MIN_CATEGORY})
    return out


def verdict(on: dict[str, Any], off: dict[str, Any], primary: str) -> tuple[bool, dict[str, dict[str, float]]]:
    """Whether the default beats this variant by the rule of the module docstring, and the deltas (on - off)."""
    other = "session_recall@10" if primary == "turn_recall@10" else "turn_recall@10"
    s_on, s_off = slices(on), slices(off)
    delta = {name: {m: round(s_on[name][m] - s_off[name][m], 4) for m in locomo.METRICS} for name in s_on}
    folds = [n for n in delta if n.startswith("fold ")]
    holds = (all(delta[n][primary] > 0 for n in folds) and all(d[primary] >= 0 for d in delta.values())
             and all(delta[n][other] >= 0 for n in folds))
    return holds, delta


def report(base: dict[str, Any], results: dict[str, dict[str, Any]], vs: list[Variant]) -> str:
    names = list(slices(base))
    lines = ["| feature | variant | turn R@10 | session R@10 | " + " | ".join(f"Δ {n}" for n in names)
             + " | default beats it |", "|" + "---|" * (len(names) + 5)]
    lines.append(f"| defaults | - | {base['overall']['turn_recall@10']:.3f} | "
                 f"{base['overall']['session_recall@10']:.3f} | " + " | ".join("" for _ in names) + " | |")
    for v in vs:
        res = results[f"{v.feature}={v.label}"]
        holds, delta = verdict(base, res, v.primary)
        cells = [f"{delta[n]['turn_recall@10']:+.3f} / {delta[n]['session_recall@10']:+.3f}" for n in names]
        lines.append(f"| {v.feature} | {v.label} | {res['overall']['turn_recall@10']:.3f} | "
                     f"{res['overall']['session_recall@10']:.3f} | " + " | ".join(cells)
                     + f" | {'yes' if holds else '**no**'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    ap.add_argument("--store", type=Path, required=True, help="bench/locomo.py's store (built here if missing)")
    ap.add_argument("--context-store", type=Path, default=None, help="also measure context indexing (a 2nd ingest)")
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--messages", action="store_true",
                    help="bench/locomo.py --messages: the turns cut into one drawer per sentence (its own store)")
    ap.add_argument("--only", action="append", default=None, metavar="FEATURE")
    ap.add_argument("--keyword", action="append", default=[], metavar="k=,b=,avg_len=,context=",
                    help="a row with the keyword list recomputed under this BM25 encoding (bench/locomo_lists.py)")
    ap.add_argument("--dense-context", action="append", type=int, default=[], metavar="N",
                    help="a row with the dense list recomputed with N previous drawers as context")
    ap.add_argument("--set", action="append", metavar="OPTION=VALUE", help="the baseline's SearchOptions overrides")
    ap.add_argument("--neutral-only", action="store_true", help="only each feature's neutral value (a 2nd pass)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.folds < 2:
        ap.error("--folds K needs K >= 2")
    base = locomo._options(argparse.Namespace(dense_weight=None, plain=False, set=args.set))
    vs = [v for v in variants() if args.only is None or v.feature in args.only]
    if args.neutral_only:
        vs = [v for n, v in enumerate(vs) if n == 0 or vs[n - 1].feature != v.feature]
    vs = [v for v in vs if v.store != "default"  # what the baseline is already is not run again
          or any(getattr(base, k) != x for k, x in v.options.items())]
    if args.context_store is None:
        vs = [v for v in vs if v.store == "default"]
    try:
        encodings = [locomo_lists.KeywordEncoding.parse(text) for text in args.keyword]
    except ValueError as exc:
        ap.error(f"--keyword: {exc}")
    vs += [Variant("keyword", e.label, {}, keyword=e) for e in encodings]
    if any(n < 0 for n in args.dense_context):
        ap.error("--dense-context: N must not be negative")
    vs += [Variant("dense_context", str(n), {}, dense_context=n) for n in args.dense_context]
    runs: list[tuple[str, Variant | None]] = [("defaults", None)]
    runs += [(f"{v.feature}={v.label}", v) for v in vs if v.store == "default"]
    results = anyio.run(measure, args, args.store, runs, base)
    bare: list[tuple[str, Variant | None]] = [(f"{v.feature}={v.label}", v) for v in vs if v.store == "context-off"]
    if bare:
        results.update(anyio.run(measure, args, args.context_store, bare, base, True))
    print(report(results["defaults"], results, vs))
    if args.json:
        args.json.write_text(json.dumps({"baseline": {k: getattr(base, k) for k in base.__slots__},
                                         "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
