"""Prompt-recall benchmark: what the UserPromptSubmit hook would inject, through mempald's real ingest, store,
ranking and recall selection.

    python bench/recall.py [--set coding|locomo|both] [--locomo PATH] [--coding-store DIR] [--locomo-store DIR]
                           [--limit N] [--fit] [--json PATH]

Two sets of prompts, each with answerable prompts (their evidence is in the palace) and unanswerable ones:

* coding: ``bench/recall_coding.json``, prompts written for mempald against the real Claude Code, Codex and Aider
  transcripts in ``../shared/fixtures/formats`` (repeated errors, file names, "what did we decide about X",
  paraphrases), each asked in its project's wing; the evidence is named by fixture file and exchange id. The
  unrelated coding prompts are asked in the projects in turn.
* locomo: every LoCoMo question with evidence, asked in its own conversation's wing (answerable) and in the
  next conversation's wing (unanswerable: the same question about people who are not there). The store is the one
  ``bench/locomo.py --store DIR`` builds (pass the same DIR as ``--locomo-store`` to reuse it).

Each prompt is searched once as recall searches (``PromptContext.request``, floor 0); then, for the default floor
and a sweep of floors, recall's own selection and composition (``select_memories``, ``compose``, 600 tokens) tell
what would be injected. Printed per set and per half (coding: projects alternately; LoCoMo: even and odd
conversations): the share of answerable prompts whose injected memories include their evidence ("answered"), the
share of unanswerable prompts that get anything injected ("false"), and model tokens injected per prompt.

The default floor is the one with the best worst-half gain (answered - false, the smallest over the four halves):
a default must hold on every split of the data, not only on the best figure over all of it. ``--fit`` also fits
the logistic weights of ``mempald.search.fusion.relevance`` on the candidates (each set weighted equally, on all
the data and on each half, to show the weights are stable), and prints the sweep with the weights fitted.

The LoCoMo data file is CC BY-NC 4.0: read by path, never copied into this repository.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import locomo  # noqa: E402

from mempald.config import parse_settings  # noqa: E402
from mempald.embed.embedder import Embedder  # noqa: E402
from mempald.features.recall import PromptContext, compose, select_memories  # noqa: E402
from mempald.ingest.queues import BACKFILL  # noqa: E402
from mempald.runtime.root import Backends, Daemon  # noqa: E402
from mempald.search import fusion, ranking  # noqa: E402
from mempald.state.db import State  # noqa: E402
from mempald.store.edge import EdgeStore  # noqa: E402

FIXTURES = REPO.parent / "shared" / "fixtures" / "formats"
CODING = REPO / "bench" / "recall_coding.json"
SWEEP = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
MAX_TOKENS = 600  # hooks.recall_max_tokens
FIXTURE_VERSION = 1  # bump when the coding store must be rebuilt (ingest changes)
MARKER = "recall-fixtures.json"


@dataclass
class Prompt:
    pid: str
    wing: str
    text: str
    half: int  # 0 or 1
    evidence: set[tuple[str, str]] = field(default_factory=set)  # (file suffix or "", exchange key or prefix)
    hits: list[dict[str, Any]] = field(default_factory=list)

    @property
    def answerable(self) -> bool:
        return bool(self.evidence)

    def holds(self, h: dict[str, Any]) -> bool:
        src, key = str(h.get("source_path") or ""), str(h.get("exchange_key") or "")
        return any((not f or src.endswith(f)) and (key == k or (len(k) == 8 and key.startswith(k)))
                   for f, k in self.evidence)


# ---------------------------------------------------------------------------------------------------------
# the stores


def open_daemon(work: Path, settings_raw: dict[str, Any], threads: int) -> tuple[Daemon, EdgeStore, State]:
    embedder = Embedder(models_dir=work / "models", threads=threads)
    store = EdgeStore(work / "store", embedder.dim, ranker=ranking.rank)
    state = State(work / "state.sqlite3")
    return Daemon(parse_settings(settings_raw, env={}), Backends(embedder, store, None, state)), store, state


def fixture_files() -> list[Path]:
    roots = [FIXTURES / "claude_code", FIXTURES / "codex", FIXTURES / "aider"]
    return [p for r in roots for p in sorted(r.rglob("*")) if p.is_file() and "reference" not in p.parts
            and not p.name.endswith(".meta.json")]


def coding_settings() -> dict[str, Any]:
    return {"store": {"machine": "bench"}, "ingest": {"lock_timeout_s": 120},
            "sources": {"claude_projects": "", "codex_sessions": str(FIXTURES / "codex"),
                        "watch": [{"path": str(FIXTURES / "aider")}, {"path": str(FIXTURES / "claude_code")}]}}


async def coding_daemon(work: Path, threads: int) -> tuple[Daemon, EdgeStore, State]:
    """A daemon over the fixtures, ingested by the real readers and normalizers (kept in ``work`` for reuse)."""
    reuse, stamp = _prepare(work)
    daemon, store, state = open_daemon(work, coding_settings(), threads)
    if not reuse:
        for path in fixture_files():
            src = daemon.sources.source_for(path)
            if src is not None:
                await daemon.ingestor.ingest_path(path, src, BACKFILL)
        await daemon.densifier.drain()
        store.flush()
        await anyio.Path(work / MARKER).write_text(stamp)
    return daemon, store, state


def _prepare(work: Path) -> tuple[bool, str]:
    """Whether ``work`` holds the fixtures' store already (else it is emptied), and the stamp that says so."""
    marker = work / MARKER
    stamp = json.dumps({"version": FIXTURE_VERSION, "files": [str(p) for p in fixture_files()]})
    reuse = marker.is_file() and marker.read_text() == stamp
    if not reuse and work.exists() and any(work.iterdir()):
        if not (work / "store").exists():
            raise SystemExit(f"--coding-store {work}: not empty and not a recall benchmark store; refusing it")
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    return reuse, stamp


def coding_prompts(data: Path) -> list[Prompt]:
    raw = json.loads(data.read_text())
    wings = sorted({p["wing"] for p in raw["answerable"]} | {p["wing"] for p in raw["unrelated"]})
    half = {w: i % 2 for i, w in enumerate(wings)}
    out = [Prompt(p["id"], p["wing"], p["prompt"], half[p["wing"]],
                  {(e["file"], e["exchange"]) for e in p["evidence"]}) for p in raw["answerable"]]
    out += [Prompt(p["id"], p["wing"], p["prompt"], n % 2) for n, p in enumerate(raw["unrelated"])]
    return out


def locomo_prompts(samples: list[locomo.Sample], limit: int | None) -> list[Prompt]:
    out: list[Prompt] = []
    for i, s in enumerate(samples):
        other = samples[(i + 1) % len(samples)].sample_id
        known = {e.key for e in s.exchanges}
        qs = [(q, locomo.gold_ids(q.get("evidence", []), known)) for q in s.questions]
        qs = [(q, g) for q, g in qs if g][:limit]
        for n, (q, gold) in enumerate(qs):
            out.append(Prompt(f"{s.sample_id}/{n}", s.sample_id, str(q["question"]), i % 2, {("", k) for k in gold}))
            out.append(Prompt(f"{s.sample_id}/{n}@{other}", other, str(q["question"]), i % 2))
    return out


async def search_all(daemon: Daemon, prompts: list[Prompt]) -> None:
    ctx = PromptContext(daemon.settings, daemon.searcher, daemon.inbox, daemon.embedder, daemon.store)
    for p in prompts:
        p.hits = await daemon.searcher.search(ctx.request(p.text, p.wing, 0.0))


# ---------------------------------------------------------------------------------------------------------
# scoring


def rescored(hits: list[dict[str, Any]], weights: Sequence[float] | None) -> list[dict[str, Any]]:
    if weights is None:
        return hits
    out = []
    for h in hits:
        sc = h["scores"]
        out.append({**h, "relevance": fusion.relevance(sc["dense"] or 0.0, sc["keyword"], sc["rarity"], weights)})
    return out


def measure(prompts: list[Prompt], floor: float, count_tokens: Any, weights: Sequence[float] | None) -> dict[str, Any]:
    answered, false, tok_a, tok_u = [], [], [], []
    for p in prompts:
        chosen = select_memories(rescored(p.hits, weights), floor, None)
        text, kept = compose((), 0, chosen, 9000, MAX_TOKENS, count_tokens)
        tokens = count_tokens(text) if kept else 0
        if p.answerable:
            answered.append(any(p.holds(h) for h in kept))
            tok_a.append(tokens)
        else:
            false.append(bool(kept))
            tok_u.append(tokens)
    mean = statistics.fmean
    return {"answered": round(mean(answered), 3) if answered else 0.0, "false": round(mean(false), 3) if false else 0.0,
            "tokens_answerable": round(mean(tok_a), 1) if tok_a else 0.0,
            "tokens_unanswerable": round(mean(tok_u), 1) if tok_u else 0.0,
            "answerable": len(answered), "unanswerable": len(false)}


def sweep(sets: dict[str, list[Prompt]], count_tokens: Any, weights: Sequence[float] | None,
          floors: Sequence[float]) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for floor in floors:
        row: dict[str, Any] = {}
        for name, prompts in sets.items():
            row[name] = measure(prompts, floor, count_tokens, weights)
            for h in (0, 1):
                row[f"{name}/half{h}"] = measure([p for p in prompts if p.half == h], floor, count_tokens, weights)
        row["worst_half_gain"] = round(min(v["answered"] - v["false"] for k, v in row.items() if "/half" in k), 3)
        rows[f"{floor:g}"] = row
    best = max(rows, key=lambda f: (rows[f]["worst_half_gain"], -abs(float(f) - 0.5)))
    return {"rows": rows, "best_floor": float(best)}


def fit(sets: dict[str, list[Prompt]]) -> dict[str, list[float]]:
    """Logistic weights (bias, dense, coverage, rarity) of ``fusion.relevance``: a candidate is positive when it is
    evidence for its prompt; each set carries the same total weight."""
    from sklearn.linear_model import LogisticRegression

    def data(prompts: list[Prompt], w: float) -> tuple[list[list[float]], list[int], list[float]]:
        xs, ys = [], []
        for p in prompts:
            for h in p.hits:
                sc = h["scores"]
                xs.append([sc["dense"] or 0.0, sc["keyword"], sc["rarity"]])
                ys.append(int(p.holds(h)))
        return xs, ys, [w / max(1, len(xs))] * len(xs)

    out: dict[str, list[float]] = {}
    for name, pick in (("all", None), ("half0", 0), ("half1", 1)):
        xs: list[list[float]] = []
        ys: list[int] = []
        ws: list[float] = []
        for prompts in sets.values():
            x, y, w = data([p for p in prompts if pick is None or p.half == pick], 1.0)
            xs += x
            ys += y
            ws += w
        if len(set(ys)) < 2:
            continue
        m = LogisticRegression(C=10.0, max_iter=1000).fit(xs, ys, sample_weight=[w * len(ws) for w in ws])
        out[name] = [round(float(m.intercept_[0]), 3), *(round(float(c), 3) for c in m.coef_[0])]
    return out


def table(res: dict[str, Any], names: Sequence[str]) -> str:
    cols = [n for name in names for n in (name, f"{name}/half0", f"{name}/half1")]
    lines = ["floor  " + "".join(f"{c:>34}" for c in cols) + "   worst-half gain",
             "       " + "".join(f"{'answered  false  tokens(a/u)':>34}" for _ in cols)]
    for floor, row in res["rows"].items():
        cells = "".join(f"{row[c]['answered']:>12.3f}{row[c]['false']:>7.3f}"
                        f"{row[c]['tokens_answerable']:>8.0f}/{row[c]['tokens_unanswerable']:<6.0f}" for c in cols)
        lines.append(f"{floor:<7}{cells}   {row['worst_half_gain']:.3f}")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    sets: dict[str, list[Prompt]] = {}
    count_tokens = None
    temp: list[Path] = []
    if args.set in ("coding", "both"):
        work = args.coding_store or Path(tempfile.mkdtemp(prefix="recall-coding-"))
        if args.coding_store is None:
            temp.append(work)
        daemon, store, state = await coding_daemon(work, args.threads)
        try:
            prompts = coding_prompts(args.prompts)
            await search_all(daemon, prompts)
            sets["coding"] = prompts
            count_tokens = daemon.embedder.count_tokens
        finally:
            store.close()
            state.close()
    if args.set in ("locomo", "both"):
        ns = argparse.Namespace(store=args.locomo_store, data=args.locomo)
        work, reuse = locomo._open_work(ns)
        if args.locomo_store is None:
            temp.append(work)
        samples = locomo.load(args.locomo)
        daemon, store, state = open_daemon(work, {
            "ingest": {"redact_secrets": False, "extract_general": False, "lock_timeout_s": 60},
            "store": {"machine": "bench"}, "embed": {"batch_size": 8},
            "sources": {"claude_projects": "", "codex_sessions": ""}}, args.threads)
        try:
            if not reuse:
                daemon.densifier.batch_size = 64
                for s in samples:
                    await locomo._ingest(daemon.ingestor, daemon.densifier, s)
                (work / "locomo-ingested.json").write_text(json.dumps(locomo._fingerprint(args.locomo)))
            prompts = locomo_prompts(samples, args.limit)
            await search_all(daemon, prompts)
            sets["locomo"] = prompts
            count_tokens = daemon.embedder.count_tokens
        finally:
            store.close()
            state.close()
    for t in temp:
        shutil.rmtree(t, ignore_errors=True)
    out: dict[str, Any] = {"weights": list(fusion.RELEVANCE_WEIGHTS), "default_floor": args.default_floor}
    floors = sorted({*SWEEP, args.default_floor})
    out["sweep"] = sweep(sets, count_tokens, None, floors)
    print(f"relevance weights {tuple(fusion.RELEVANCE_WEIGHTS)}; default floor {args.default_floor:g}")
    print(table(out["sweep"], list(sets)))
    print(f"best worst-half gain at floor {out['sweep']['best_floor']:g}")
    if args.fit:
        fitted = fit(sets)
        out["fitted"] = fitted
        print(f"\nfitted weights (bias, dense, coverage, rarity): {fitted}")
        if "all" in fitted:
            out["sweep_fitted"] = sweep(sets, count_tokens, fitted["all"], floors)
            print(table(out["sweep_fitted"], list(sets)))
            print(f"best worst-half gain at floor {out['sweep_fitted']['best_floor']:g}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=("coding", "locomo", "both"), default="both")
    ap.add_argument("--locomo", type=Path, default=locomo.DEFAULT_DATA, help="the LoCoMo data file")
    ap.add_argument("--prompts", type=Path, default=CODING, help="the coding prompt set")
    ap.add_argument("--coding-store", type=Path, default=None, help="keep the ingested fixtures here and reuse them")
    ap.add_argument("--locomo-store", type=Path, default=None, help="the store of bench/locomo.py --store DIR")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions of each conversation")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--default-floor", type=float, default=None, help="(default: hooks.recall_threshold)")
    ap.add_argument("--fit", action="store_true", help="also fit the relevance weights on these prompts")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.default_floor is None:
        args.default_floor = parse_settings({}, env={}).hooks.recall_threshold
    if args.set in ("coding", "both") and not FIXTURES.is_dir():
        print(f"no format fixtures at {FIXTURES}", file=sys.stderr)
        return 2
    if args.set in ("locomo", "both") and not args.locomo.is_file():
        print(f"no LoCoMo data at {args.locomo}; pass --locomo PATH", file=sys.stderr)
        return 2
    res = anyio.run(run, args)
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
