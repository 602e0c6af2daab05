"""LoCoMo retrieval benchmark through mempald's real ingest, store and search code.

Each conversation is its own wing; one drawer per turn ("{speaker}: {text}" plus the image caption);
the session date is the drawer's timestamp; questions are asked verbatim, filtered to their wing, with
"now" set to the conversation's last session date. Gold = normalised evidence ids.

    python bench/locomo.py [--data PATH] [--limit N] [--json PATH] [--store DIR] [--set OPTION=VALUE ...]
                           [--folds K] [--messages]

``--store DIR`` keeps the ingested and embedded store in DIR and reuses it on later runs (ingest + embedding
take about two minutes on two cores); it is rebuilt when the data file or the ingest settings change.
``--set`` overrides a ``SearchOptions`` field for the run (e.g. ``--set neighbour_decay=0``).
``--folds K`` tunes nothing: it also reports every metric, overall and per category, on each of K folds of the
conversations in file order (consecutive blocks: 2 folds of the 10 are conversations 0-4 and 5-9, 5 folds are
pairs), so a default can be checked on data it was not chosen on (``bench/locomo_ablate.py`` does that for every
default of the ranking pipeline).
``--messages`` asks the same questions of the conversations cut as people message: every turn split into its
sentences, one drawer each (``Speaker: sentence``, in order; about 17,000 drawers for 5,882 turns), and a gold turn
counts as found where any of its messages is. A second shape of the same questions, closer to chat between people
(where issue 24's held-out check found the defaults' lead over BM25 alone much smaller than on LoCoMo's turns): a
default should hold on both views. Keep its store apart (``--store`` of another folder).

The data file is CC BY-NC 4.0: it is read by path (default ../shared/bench/locomo/locomo10.json), never
copied into this repository.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mempald.benchmarks.palace import open_bench_palace  # noqa: E402
from mempald.ingest.dense import DenseWorker  # noqa: E402
from mempald.ingest.drawers import SourceInfo  # noqa: E402
from mempald.ingest.ingestor import Ingestor  # noqa: E402
from mempald.ingest.queues import BACKFILL  # noqa: E402
from mempald.normalize.model import Exchange  # noqa: E402
from mempald.runtime.root import Daemon  # noqa: E402
from mempald.search.ranking import SearchOptions  # noqa: E402
from mempald.search.searcher import Searcher, SearchRequest  # noqa: E402
from mempald.store.base import Filters  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "bench" / "locomo" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_ID = re.compile(r"^D(\d+):(\d+)$")
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I)
_MONTHS = {m: i for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1)}


def parse_date(text: str) -> datetime | None:
    m = _DATE.search(text or "")
    if not m:
        return None
    hour, minute, ampm, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    mon = _MONTHS.get(month.lower()[:3])
    if mon is None:
        return None
    return datetime(int(year), mon, int(day), h, int(minute), tzinfo=UTC)


def norm_id(raw: str) -> str | None:
    m = _ID.match(raw.strip())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else None


def gold_ids(evidence: Sequence[str], known: set[str]) -> list[str]:
    out: list[str] = []
    for item in evidence:
        for part in re.split(r"[;\s]+", str(item)):
            nid = norm_id(part) if part else None
            if nid and nid in known and nid not in out:
                out.append(nid)
    return out


@dataclass
class Sample:
    sample_id: str
    exchanges: list[Exchange]
    now: datetime
    questions: list[dict[str, Any]]


def load(path: Path) -> list[Sample]:
    data = json.loads(path.read_text())
    samples = []
    for s in data:
        conv = s["conversation"]
        exchanges: list[Exchange] = []
        last = datetime(2000, 1, 1, tzinfo=UTC)
        n = 1
        while f"session_{n}" in conv:
            when = parse_date(conv.get(f"session_{n}_date_time", "")) or last
            last = max(last, when)
            for pos, turn in enumerate(conv[f"session_{n}"]):
                text = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
                if turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                did = norm_id(str(turn.get("dia_id", "")))
                if did is None:
                    continue
                exchanges.append(Exchange(
                    source_kind="locomo", session_id=f"{s['sample_id']}/session_{n}", key=did, user="",
                    assistant=text, timestamp=when.isoformat(), position=pos, kind="turn",
                ))
            n += 1
        samples.append(Sample(str(s["sample_id"]), exchanges, last, list(s.get("qa", []))))
    return samples


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])")


def as_messages(samples: list[Sample]) -> list[Sample]:
    """The conversations cut as people message (``--messages``): each turn's sentences become drawers of their own,
    ``Speaker: sentence`` in the turn's order, keyed ``<turn id>#<n>`` (``turn_of`` gives the turn back); an image
    caption stays with the turn's last sentence."""
    out = []
    for sample in samples:
        messages: list[Exchange] = []
        position: dict[str, int] = {}
        for ex in sample.exchanges:
            speaker, _, text = ex.assistant.partition(": ")
            text, image, caption = text.partition(" [image: ")
            parts = [p for p in _SENTENCE_END.split(text) if p.strip()] or [text]
            for n, part in enumerate(parts):
                at = position.get(ex.session_id, 0)
                position[ex.session_id] = at + 1
                body = f"{speaker}: {part}" + (image + caption if n == len(parts) - 1 else "")
                messages.append(replace(ex, key=f"{ex.key}#{n}", assistant=body, position=at))
        out.append(replace(sample, exchanges=messages))
    return out


def turn_of(key: str) -> str:
    """The turn id a drawer's key belongs to (a message's ``D1:3#2`` is turn ``D1:3``; a turn's key is itself)."""
    return key.split("#", maxsplit=1)[0]


def ndcg10(ranked: list[str], gold: set[str]) -> float:
    """NDCG@10 with each gold turn credited once, where it first appears (``--messages`` lists a turn per message)."""
    first = {t: i for i, t in reversed(list(enumerate(ranked[:10])))}
    dcg = sum(1 / math.log2(i + 2) for t, i in first.items() if t in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), 10)))
    return dcg / ideal if ideal else 0.0


def session_of(dia_id: str) -> str:
    return dia_id.split(":", maxsplit=1)[0]


def score_question(ranked: list[str], gold: list[str]) -> dict[str, float]:
    g = set(gold)
    sessions: list[str] = []
    for t in ranked:
        s = session_of(t)
        if s not in sessions:
            sessions.append(s)
    gs = {session_of(t) for t in gold}
    rr = next((1 / (i + 1) for i, t in enumerate(ranked) if t in g), 0.0)
    return {
        "turn_recall@5": len(g & set(ranked[:5])) / len(g),
        "turn_recall@10": len(g & set(ranked[:10])) / len(g),
        "session_recall@5": len(gs & set(sessions[:5])) / len(gs),
        "session_recall@10": len(gs & set(sessions[:10])) / len(gs),
        "recall_any@5": 1.0 if g & set(ranked[:5]) else 0.0,
        "ndcg@10": ndcg10(ranked, g),
        "mrr": rr,
    }


METRICS = ("turn_recall@5", "turn_recall@10", "session_recall@5", "session_recall@10", "recall_any@5", "ndcg@10",
           "mrr")


def aggregate(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {m: 0.0 for m in METRICS} | {"questions": 0}
    out: dict[str, float] = {m: round(statistics.fmean(r[m] for r in rows), 4) for m in METRICS}
    out["questions"] = len(rows)
    return out


INGEST_VERSION = 1  # bump when the ingest side of this benchmark changes (drawer text, context, embedding)


def _fingerprint(data: Path, tag: str = "") -> dict[str, Any]:
    st = data.stat()
    out = {"data": str(data.resolve()), "size": st.st_size, "mtime": st.st_mtime, "version": INGEST_VERSION}
    return out | ({"ingest": tag} if tag else {})


def _open_work(args: argparse.Namespace, tag: str = "") -> tuple[Path, bool]:
    """The work folder and whether it already holds a complete store for this data file."""
    if args.store is None:
        return Path(tempfile.mkdtemp(prefix="locomo-")), False
    work: Path = args.store
    marker = work / "locomo-ingested.json"
    if marker.is_file():
        try:
            if json.loads(marker.read_text()) == _fingerprint(args.data, tag):
                return work, True
        except ValueError:
            pass
    if work.exists() and any(work.iterdir()):
        if not (work / "store").exists():
            raise SystemExit(f"--store {work}: not empty and not a LoCoMo benchmark store; refusing to reuse it")
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    return work, False


def _options(args: argparse.Namespace) -> SearchOptions:
    opts = SearchOptions()
    if args.dense_weight is not None:
        opts = replace(opts, dense_weight=args.dense_weight)
    if args.plain:
        opts = replace(opts, temporal_boost=0, neighbour_decay=0, session_weight=0, dedup_threshold=1.0)
    types = {f.name: f.type for f in fields(SearchOptions)}
    for item in args.set or []:
        name, _, value = item.partition("=")
        if name not in types:
            raise SystemExit(f"--set {item}: no SearchOptions field {name!r} (have: {', '.join(types)})")
        cur = getattr(opts, name)
        val: Any = type(cur)(float(value)) if isinstance(cur, (int, float)) and not isinstance(cur, bool) else value
        if isinstance(cur, bool):
            val = value.lower() in ("1", "true", "yes", "on")
        opts = replace(opts, **{name: val})
    return opts


def aaak_samples(samples: list[Sample]) -> tuple[list[Sample], int, int]:
    """The same conversations with every turn replaced by its AAAK encoding (what ``mempal compress`` stores),
    and the characters before and after, to measure what the lossy dialect costs retrieval."""
    from mempald.features import aaak

    out: list[Sample] = []
    before = after = 0
    for s in samples:
        turns = []
        for ex in s.exchanges:
            enc = aaak.encode(aaak.compress(ex.assistant, wing=s.sample_id))
            before += len(ex.assistant)
            after += len(enc)
            turns.append(replace(ex, assistant=enc))
        out.append(replace(s, exchanges=turns))
    return out, before, after


def ingest_tag(messages: bool, bare: bool = False) -> str:
    """What a store's marker records of how its drawers were cut and indexed (a store of another kind is rebuilt)."""
    return "+".join(t for t, on in (("messages", messages), ("context-off", bare)) if on)


async def run(args: argparse.Namespace, *, aaak_mode: bool = False) -> dict[str, Any]:
    samples = load(args.data)
    if args.messages:
        samples = as_messages(samples)
    chars = (0, 0)
    if aaak_mode:
        samples, *counts = aaak_samples(samples)
        chars = (counts[0], counts[1])
        args = argparse.Namespace(**{**vars(args), "store": None})
    work, reuse = _open_work(args, ingest_tag(args.messages))
    try:
        return await _measure(args, samples, work, reuse, chars, aaak_mode)
    finally:
        if args.store is None:  # a throw-away store: leave nothing behind in the temp folder
            shutil.rmtree(work, ignore_errors=True)


Row = tuple[int, int, dict[str, float]]  # (conversation index, category, scores)


@contextlib.asynccontextmanager
async def components(work: Path, threads: int = 0) -> AsyncIterator[Daemon]:
    """The daemon's own components, built by its composition root over an in-process store in ``work``; no
    loops run."""
    palace = open_bench_palace(work, threads=threads)
    daemon = palace.daemon
    try:
        yield daemon
    finally:
        palace.close()


def questions(samples: list[Sample], limit: int | None) -> list[list[tuple[dict[str, Any], list[str]]]]:
    """Per conversation, its questions with evidence and their gold turn ids (the first ``limit`` in all)."""
    out = []
    remaining = limit
    for sample in samples:
        known = {turn_of(e.key) for e in sample.exchanges}
        qs = [(q, g) for q in sample.questions if (g := gold_ids(q.get("evidence", []), known))]
        if remaining is not None:
            qs = qs[:max(0, remaining)]
            remaining -= len(qs)
        out.append(qs)
    return out


async def ask(searcher: Searcher, samples: list[Sample], asked: list[list[tuple[dict[str, Any], list[str]]]],
              opts: SearchOptions, latencies: list[float] | None = None) -> list[Row]:
    """Every question searched in its conversation's wing (50 hits), scored against its gold turns."""
    rows: list[Row] = []
    for n, (sample, qs) in enumerate(zip(samples, asked, strict=True)):
        for q, gold in qs:
            t1 = time.perf_counter()
            hits = await searcher.search(SearchRequest(str(q["question"]), limit=50,
                                                       filters=Filters(wing=(sample.sample_id,)), options=opts,
                                                       now=sample.now))
            if latencies is not None:
                latencies.append((time.perf_counter() - t1) * 1000)
            ranked = [turn_of(str(h["exchange_key"])) for h in hits]
            rows.append((n, int(q.get("category", 0)), score_question(ranked, gold)))
    return rows


def fold_of(index: int, total: int, folds: int) -> int:
    """Fold of the ``index``-th of ``total`` conversations: consecutive blocks (2 folds of 10: 0-4 and 5-9)."""
    return index * folds // total


def summary(rows: list[Row], samples: list[Sample], folds: int = 0) -> dict[str, Any]:
    """Every metric overall and per category; with ``folds``, the same for each fold of the conversations."""
    def block(part: list[Row]) -> dict[str, Any]:
        return {"overall": aggregate([r for _, _, r in part]),
                "per_category": {str(c): aggregate([r for _, cat, r in part if cat == c]) for c in CATEGORIES}}

    out = block(rows)
    if folds:
        out["folds"] = [{"fold": f + 1, "conversations": [s.sample_id for i, s in enumerate(samples)
                                                          if fold_of(i, len(samples), folds) == f],
                         **block([r for r in rows if fold_of(r[0], len(samples), folds) == f])}
                        for f in range(folds)]
    return out


async def _measure(args: argparse.Namespace, samples: list[Sample], work: Path, reuse: bool, chars: tuple[int, int],
                   aaak_mode: bool) -> dict[str, Any]:
    opts = _options(args)
    asked = questions(samples, args.limit)
    latencies: list[float] = []
    t0 = time.perf_counter()
    async with components(work, args.threads) as daemon:
        if not reuse:
            for sample, qs in zip(samples, asked, strict=True):
                if args.limit is None or qs:
                    await _ingest(daemon.ingestor, daemon.densifier, sample)
        t_ingest = time.perf_counter() - t0
        rows = await ask(daemon.searcher, samples, asked, opts, latencies)
    for sample, qs in zip(samples, asked, strict=True):
        if args.limit is None or qs:
            print(f"  {sample.sample_id}: {len(sample.exchanges)} drawers, {len(qs)} questions", file=sys.stderr)
    if args.store is not None and not reuse and args.limit is None:
        (work / "locomo-ingested.json").write_text(json.dumps(_fingerprint(args.data, ingest_tag(args.messages))))
    lat = sorted(latencies)
    return {
        **summary(rows, samples, args.folds),
        "latency_ms": {
            "p50": round(lat[len(lat) // 2], 2) if lat else 0.0,
            "p95": round(lat[min(len(lat) - 1, int(len(lat) * 0.95))], 2) if lat else 0.0,
        },
        "ingest_s": round(t_ingest, 1),
        **({"aaak_chars": {"raw": chars[0], "aaak": chars[1]}} if aaak_mode else {}),
        "options": {k: getattr(opts, k) for k in opts.__slots__},
    }


async def _ingest(ingestor: Ingestor, densifier: DenseWorker, sample: Sample) -> None:
    info = SourceInfo(kind="locomo", path=f"locomo:{sample.sample_id}", source_key=f"locomo:{sample.sample_id}",
                      machine="bench", user="bench", wing=sample.sample_id, room="conversation", redact=False,
                      extract=False)
    await ingestor.write_exchanges(sample.exchanges, info, BACKFILL)
    await densifier.drain()


def metrics_table(res: dict[str, Any]) -> list[str]:
    """Overall and per-category rows of every metric."""
    cols = ("questions", *METRICS)
    head = f"{'':<14}" + "".join(f"{c:>18}" for c in cols)
    lines = [head]
    rows = [("overall", res["overall"])] + [
        (f"{k} {CATEGORIES[int(k)][:9]}", v) for k, v in res["per_category"].items()]
    for name, m in rows:
        lines.append(f"{name:<14}" + "".join(
            f"{int(m[c]):>18}" if c == "questions" else f"{m[c]:>18.3f}" for c in cols))
    return lines


def table(res: dict[str, Any]) -> str:
    lines = metrics_table(res)
    lines.append(f"latency ms: p50 {res['latency_ms']['p50']}  p95 {res['latency_ms']['p95']}   "
                 f"ingest+embed {res['ingest_s']} s")
    for fold in res.get("folds", []):
        lines += ["", f"fold {fold['fold']}/{len(res['folds'])}: {', '.join(fold['conversations'])}",
                  *metrics_table(fold)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a file in the LoCoMo layout")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions (smoke run)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--dense-weight", type=float, default=None)
    ap.add_argument("--store", type=Path, default=None,
                    help="keep the ingested store in DIR and reuse it on later runs (rebuilt if the data changes)")
    ap.add_argument("--set", action="append", metavar="OPTION=VALUE", help="override a SearchOptions field")
    ap.add_argument("--plain", action="store_true", help="fusion only: no temporal, neighbour, session, dedup")
    ap.add_argument("--folds", type=int, default=0, metavar="K",
                    help="also report every metric on each of K folds of the conversations (consecutive blocks)")
    ap.add_argument("--messages", action="store_true",
                    help="the conversations cut as people message: one drawer per sentence (keep its store apart)")
    ap.add_argument("--aaak", action="store_true",
                    help="also index AAAK-compressed turns and print both tables (the dialect is lossy)")
    args = ap.parse_args(argv)
    if args.folds < 0 or args.folds == 1:
        ap.error("--folds K needs K >= 2")
    if not args.data.is_file():
        print(f"no LoCoMo data at {args.data}; pass --data PATH", file=sys.stderr)
        return 2
    res = anyio.run(run, args)
    print(table(res))
    if args.aaak:
        comp = anyio.run(lambda: run(args, aaak_mode=True))
        print("\nAAAK-compressed drawers (lossy):")
        print(table(comp))
        ch = comp["aaak_chars"]
        print(f"characters: {ch['raw']:,} raw -> {ch['aaak']:,} AAAK ({ch['raw'] / max(1, ch['aaak']):.2f}:1); "
              f"turn R@10 {res['overall']['turn_recall@10']:.3f} raw vs {comp['overall']['turn_recall@10']:.3f} AAAK")
        res["aaak"] = comp
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
