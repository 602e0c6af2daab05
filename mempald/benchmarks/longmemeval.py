"""The LongMemEval retrieval benchmark (``mempald bench longmemeval FILE``, ``mempal bench longmemeval FILE``,
``bench/longmemeval.py FILE``) through mempald's real ingest, store and search, without the daemon.

The file is the LongMemEval_S layout: a JSON list of questions, each with ``question_id``, ``question_type``,
``question``, ``answer``, ``question_date``, ``haystack_session_ids``, ``haystack_dates``, ``haystack_sessions``
(one list of ``{role, content, has_answer?}`` turns per session) and ``answer_session_ids``.

Each question gets a wing of its own holding its haystack: every user turn with the assistant turns that follow
it is one exchange (what the transcript adapters make of a chat), stamped with its session's date; the
question is asked verbatim in its wing, with "now" at ``question_date``, and every hit is kept
(``min_relevance`` 0: a benchmark ranks, it does not cut); the wing is then deleted, so the store never holds
more than one haystack. Sessions are ranked by their best drawer. The full LongMemEval_S (500 questions of
about 50 sessions) embeds well over a hundred thousand exchanges: ``--limit N`` runs the first N.

Reported the way MemPalace (R@5 96.6) and mempal (R@5 0.966, R@10 0.982) report LongMemEval: session
``R@k`` is recall-any (the question counts as found when any answer session is in the first k sessions), with
``recall_all@k`` (every answer session in the first k) and session ``NDCG@10`` (binary gain of the answer
sessions) beside it; plus turn recall from ``has_answer`` (the share of a question's evidence turns whose
exchange is in the first k drawers). Questions without an answer session in their haystack (abstention
questions) are counted and left out of the figures.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SESSION_METRICS = ("R@5", "R@10", "recall_all@5", "recall_all@10", "NDCG@10")
TURN_METRICS = ("turn_R@5", "turn_R@10")
_DATE = re.compile(r"(\d{4})[/-](\d{1,2})[/-](\d{1,2})(?:\D+(\d{1,2}):(\d{2}))?")


class LayoutError(ValueError):
    """The file is not in the LongMemEval layout (the message says where)."""


@dataclass(frozen=True)
class Question:
    qid: str
    qtype: str
    text: str
    now: datetime
    answer_sessions: frozenset[str]
    sessions: tuple[tuple[str, datetime, tuple[dict[str, Any], ...]], ...]


def parse_date(text: str) -> datetime | None:
    """``2023/05/20 (Sat) 02:21`` (LongMemEval's spelling) or an ISO date."""
    m = _DATE.search(text or "")
    if not m:
        return None
    y, mo, d, h, mi = m.groups()
    try:
        return datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), tzinfo=UTC)
    except ValueError:
        return None


def load(path: Path) -> list[Question]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise LayoutError(f"{path}: not a readable JSON file: {exc}") from exc
    if not isinstance(data, list):
        raise LayoutError(f"{path}: expected a JSON list of questions, got {type(data).__name__}")
    return [_question(i, q) for i, q in enumerate(data)]


def _question(i: int, q: Any) -> Question:
    where = f"question {i}"
    if not isinstance(q, dict):
        raise LayoutError(f"{where}: not an object")
    missing = [k for k in ("question_id", "question", "haystack_session_ids", "haystack_sessions",
                           "answer_session_ids") if k not in q]
    if missing:
        raise LayoutError(f"{where}: missing {', '.join(missing)}")
    ids, sessions = q["haystack_session_ids"], q["haystack_sessions"]
    dates = q.get("haystack_dates") or [""] * len(ids)
    if not (isinstance(ids, list) and isinstance(sessions, list) and len(ids) == len(sessions) == len(dates)):
        raise LayoutError(f"{where} ({q['question_id']}): haystack_session_ids, haystack_dates and "
                          "haystack_sessions must be lists of the same length")
    now = parse_date(str(q.get("question_date", ""))) or datetime.now(UTC)
    out = []
    for sid, date, turns in zip(ids, dates, sessions, strict=True):
        if not isinstance(turns, list) or not all(isinstance(t, dict) and "content" in t for t in turns):
            raise LayoutError(f"{where} ({q['question_id']}): session {sid} is not a list of {{role, content}}")
        out.append((str(sid), parse_date(str(date)) or now, tuple(turns)))
    return Question(str(q["question_id"]), str(q.get("question_type", "")), str(q["question"]), now,
                    frozenset(str(s) for s in q["answer_session_ids"]), tuple(out))


def exchanges_of(q: Question) -> tuple[list[Any], dict[str, str], dict[str, set[str]]]:
    """The question's haystack as exchanges (a user turn and the assistant turns after it), the session of each
    exchange key, and the exchange keys holding each session's ``has_answer`` turns."""
    from mempald.normalize.model import Exchange

    out: list[Exchange] = []
    session_of: dict[str, str] = {}
    evidence: dict[str, set[str]] = {}
    for sid, when, turns in q.sessions:
        groups: list[list[tuple[int, dict[str, Any]]]] = []
        for n, t in enumerate(turns):
            if t.get("role") == "user" or not groups:
                groups.append([])
            groups[-1].append((n, t))
        for pos, group in enumerate(groups):
            key = f"{sid}:{group[0][0]}"
            user = "\n".join(str(t["content"]) for _, t in group if t.get("role") == "user")
            reply = "\n".join(str(t["content"]) for _, t in group if t.get("role") != "user")
            out.append(Exchange(source_kind="longmemeval", session_id=f"{q.qid}/{sid}", key=key, user=user,
                                assistant=reply, timestamp=when.isoformat(), position=pos))
            session_of[key] = sid
            if any(t.get("has_answer") for _, t in group):
                evidence.setdefault(sid, set()).add(key)
    return out, session_of, evidence


def ndcg(ranked: Sequence[str], gold: frozenset[str] | set[str], k: int = 10) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, s in enumerate(ranked[:k]) if s in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


def score(sessions: Sequence[str], gold: frozenset[str], drawers: Sequence[str],
          evidence: set[str]) -> dict[str, float]:
    """One question's figures from its ranked sessions and ranked exchange keys (both without repeats)."""
    row = {
        "R@5": float(bool(gold & set(sessions[:5]))),
        "R@10": float(bool(gold & set(sessions[:10]))),
        "recall_all@5": float(gold <= set(sessions[:5])),
        "recall_all@10": float(gold <= set(sessions[:10])),
        "NDCG@10": ndcg(sessions, gold),
    }
    if evidence:
        row["turn_R@5"] = len(evidence & set(drawers[:5])) / len(evidence)
        row["turn_R@10"] = len(evidence & set(drawers[:10])) / len(evidence)
    return row


def aggregate(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {"questions": len(rows)}
    for m in SESSION_METRICS:
        out[m] = round(statistics.fmean(r[m] for r in rows), 4) if rows else 0.0
    with_turns = [r for r in rows if "turn_R@10" in r]
    out["questions_with_turns"] = len(with_turns)
    for m in TURN_METRICS:
        out[m] = round(statistics.fmean(r[m] for r in with_turns), 4) if with_turns else 0.0
    return out


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


async def run(path: Path, *, limit: int | None = None, threads: int = 0, models_dir: Path | None = None,
              progress: bool = True) -> dict[str, Any]:
    """Ingest each question's haystack into a throw-away store and score its search (see the module doc)."""
    from mempald.benchmarks.palace import open_bench_palace
    from mempald.ingest.drawers import SourceInfo
    from mempald.ingest.queues import BACKFILL
    from mempald.search.ranking import SearchOptions
    from mempald.search.searcher import SearchRequest
    from mempald.store.base import Filters

    questions = load(path)[:limit]
    work = Path(tempfile.mkdtemp(prefix="longmemeval-"))
    palace = open_bench_palace(work, threads=threads, models_dir=models_dir)
    daemon = palace.daemon
    opts = replace(SearchOptions(), min_relevance=0.0)
    rows: list[tuple[str, dict[str, float]]] = []
    details: list[dict[str, Any]] = []
    skipped: list[str] = []
    try:
        for q in questions:
            exchanges, session_of, evidence = exchanges_of(q)
            gold = frozenset(s for s in q.answer_sessions if s in {sid for sid, _, _ in q.sessions})
            if not gold:
                skipped.append(q.qid)
                continue
            wing = f"lme-{q.qid}"
            info = SourceInfo(kind="longmemeval", path=f"longmemeval:{q.qid}", source_key=f"longmemeval:{q.qid}",
                              machine="bench", user="bench", wing=wing, room="conversation", redact=False,
                              extract=False)
            await daemon.ingestor.write_exchanges(exchanges, info, BACKFILL)
            await daemon.densifier.drain()
            hits = await daemon.searcher.search(SearchRequest(q.text, limit=50, filters=Filters(wing=(wing,)),
                                                              options=opts, now=q.now))
            await daemon.store.delete(Filters(wing=(wing,), include_deleted=True))  # the store stays one haystack
            drawers = _unique([str(h["exchange_key"]) for h in hits])
            sessions = _unique([session_of[k] for k in drawers if k in session_of])
            ev = set().union(*(evidence.get(s, set()) for s in gold)) if evidence else set()
            row = score(sessions, gold, drawers, ev)
            rows.append((q.qtype, row))
            details.append({"question_id": q.qid, "question_type": q.qtype, "sessions": sessions[:10],
                            "drawers": drawers[:10], "answer_sessions": sorted(gold), "evidence": sorted(ev), **row})
            if progress:
                print(f"  {q.qid}: {len(exchanges)} exchanges, R@5 {row['R@5']:.0f}", file=sys.stderr)
    finally:
        palace.close()
        shutil.rmtree(work, ignore_errors=True)
    types = sorted({t for t, _ in rows})
    return {"data": str(path), "overall": aggregate([r for _, r in rows]),
            "per_type": {t: aggregate([r for k, r in rows if k == t]) for t in types},
            "skipped_no_answer_session": skipped, "questions": details}


def table(res: dict[str, Any]) -> str:
    cols = (*SESSION_METRICS, *TURN_METRICS)
    lines = [f"{'':<28}{'questions':>10}" + "".join(f"{c:>14}" for c in cols)]
    for name, m in [("overall", res["overall"]), *res["per_type"].items()]:
        lines.append(f"{name[:27]:<28}{int(m['questions']):>10}" + "".join(f"{m[c]:>14.3f}" for c in cols))
    o = res["overall"]
    lines.append(f"session R@5 {o['R@5']:.3f}  R@10 {o['R@10']:.3f}  NDCG@10 {o['NDCG@10']:.3f}  "
                 f"(recall-any, as MemPalace and mempal report it); turn R@10 {o['turn_R@10']:.3f} "
                 f"over {o['questions_with_turns']} questions with has_answer turns")
    if res["skipped_no_answer_session"]:
        lines.append(f"left out (no answer session in the haystack): {len(res['skipped_no_answer_session'])}")
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, help="a LongMemEval_S-layout JSON file (e.g. longmemeval_s_cleaned.json)")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions")
    p.add_argument("--threads", type=int, default=0, help="embedding threads (0: the model's default)")
    p.add_argument("--json", dest="json_out", type=Path, default=None, help="also write every figure here")


def main(args: argparse.Namespace) -> int:
    import anyio

    try:
        res = anyio.run(lambda: run(args.file, limit=args.limit, threads=args.threads))
    except LayoutError as exc:
        print(f"longmemeval: {exc}", file=sys.stderr)
        return 2
    print(table(res))
    if args.json_out:
        args.json_out.write_text(json.dumps(res, indent=2))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser("bench", help="retrieval benchmarks run here through the real ingest and search")
    which = bench.add_subparsers(dest="bench", required=True)
    p = which.add_parser("longmemeval", help="LongMemEval (session R@5, R@10, NDCG@10; turn recall)")
    add_arguments(p)
    p.set_defaults(func=main)
