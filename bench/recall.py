"""Prompt-recall benchmark: what the UserPromptSubmit hook would inject, through mempald's real ingest, store,
ranking and recall selection.

    python bench/recall.py [--set coding|locomo|both] [--locomo PATH] [--coding-store DIR] [--locomo-store DIR]
                           [--limit N] [--fit] [--json PATH]

Two sets of prompts, each with answerable prompts (their evidence is in the palace) and unanswerable ones:

* coding: ``bench/recall_coding.json``, prompts written for mempald against the real Claude Code, Codex and Aider
  transcripts in ``../shared/fixtures/formats`` (repeated errors, file names, "what did we decide about X",
  paraphrases), each asked in its project's wing; the evidence is named by fixture file and exchange id. The
  unrelated coding prompts are asked in the projects in turn.
* fresh, other: the coding prompts asked away from their project, from a folder with no memory and from the next
  project (which has memory of its own), with near-miss prompts (the fixtures' vocabulary, nothing that answers).
* locomo: every LoCoMo question with evidence, asked in its own conversation's wing and in the next conversation's
  wing (the same question where those people are not: their memory is in another wing). The store is the one
  ``bench/locomo.py --store DIR`` builds (pass the same DIR as ``--locomo-store`` to reuse it).

Each prompt is searched once as recall searches (``PromptContext.request``, floor 0); then, for the default floor
and a sweep of floors, recall's own selection and composition (``select_memories``, ``compose``, 600 tokens) tell
what would be injected. Printed per set and per half (coding: projects alternately; LoCoMo: even and odd
conversations): the share of prompts asked where their evidence is whose injected memories include it
("answered"), the same for prompts asked away from it ("elsewhere"), the share of prompts asked away from their
evidence (or with none) that get a memory of a wing that does not hold it ("false"), and model tokens injected per
prompt; the gain is answered + elsewhere - false.

The default floor is the one with the best worst-half gain (the smallest over the halves of every set):
a default must hold on every split of the data, not only on the best figure over all of it. ``--fit`` chooses the
weights of ``mempald.search.fusion.relevance``: for each of a few directions of the linear evidence score
(dense, coverage, rarity) the score is calibrated by Platt scaling (the logistic regression of "this candidate is
its prompt's evidence" on it, each set weighted equally), swept over the floors, and the direction with the best
worst-half gain wins; its calibrated weights and floor are the defaults.

The LoCoMo data file is CC BY-NC 4.0: read by path, never copied into this repository.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import locomo  # noqa: E402

from mempald.config import parse_settings  # noqa: E402
from mempald.embed.embedder import Embedder  # noqa: E402
from mempald.features.recall import (  # noqa: E402
    PromptContext,
    compose,
    merge_scopes,
    select_memories,
)
from mempald.ingest.queues import BACKFILL  # noqa: E402
from mempald.runtime.root import Backends, Daemon  # noqa: E402
from mempald.search import fusion, ranking  # noqa: E402
from mempald.state.db import State  # noqa: E402
from mempald.store.base import Filters  # noqa: E402
from mempald.store.edge import EdgeStore  # noqa: E402

FIXTURES = REPO.parent / "shared" / "fixtures" / "formats"
CODING = REPO / "bench" / "recall_coding.json"
SWEEP = (0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
MAX_TOKENS = 600  # hooks.recall_max_tokens
DEFAULTS = parse_settings({}, env={})
# the floor for memories of other projects (2.0: never beyond the project)
BEYOND_SWEEP = (0.13, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8, 2.0)
FIXTURE_VERSION = 1  # bump when the coding store must be rebuilt (ingest changes)
MARKER = "recall-fixtures.json"


FRESH = "a-new-project"  # the wing of a folder with no memory (cross-project prompts are asked from it)


@dataclass
class Prompt:
    pid: str
    wing: str
    text: str
    half: int  # 0 or 1
    evidence: set[tuple[str, str]] = field(default_factory=set)  # (file suffix or "", exchange key or prefix)
    home: str | None = None  # the wing its evidence is in (default: where it is asked, if it has evidence)
    hits: list[dict[str, Any]] = field(default_factory=list)  # the search of its own wing (empty: no memory)
    beyond: list[dict[str, Any]] = field(default_factory=list)  # the search of every wing

    def __post_init__(self) -> None:
        if self.home is None:
            self.home = self.wing if self.evidence else ""

    @property
    def answerable(self) -> bool:
        return bool(self.evidence)

    @property
    def away(self) -> bool:
        """Asked away from its evidence (in another project, a folder with no memory, or with none anywhere)."""
        return self.home != self.wing

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


def cross_prompts(data: Path) -> dict[str, list[Prompt]]:
    """The coding prompts asked away from their project. ``fresh``: from a folder with no memory (every answerable
    prompt, and the near misses: the fixtures' vocabulary, nothing that answers). ``other``: from another project
    that has memory (each answerable prompt in the next wing, the near misses in the projects in turn). The halves
    are the answerable prompts' own (by their project) and the near misses' alternately."""
    raw = json.loads(data.read_text())
    wings = sorted({p["wing"] for p in raw["answerable"]} | {p["wing"] for p in raw["unrelated"]})
    half = {w: i % 2 for i, w in enumerate(wings)}
    nxt = {w: wings[(i + 1) % len(wings)] for i, w in enumerate(wings)}
    near = raw.get("near_miss", [])
    fresh = [Prompt(f"{p['id']}@fresh", FRESH, p["prompt"], half[p["wing"]],
                    {(e["file"], e["exchange"]) for e in p["evidence"]}, p["wing"]) for p in raw["answerable"]]
    fresh += [Prompt(f"{p['id']}@fresh", FRESH, p["prompt"], n % 2) for n, p in enumerate(near)]
    other = [Prompt(f"{p['id']}@{nxt[p['wing']]}", nxt[p["wing"]], p["prompt"], half[p["wing"]],
                    {(e["file"], e["exchange"]) for e in p["evidence"]}, p["wing"]) for p in raw["answerable"]]
    other += [Prompt(f"{p['id']}@{wings[n % len(wings)]}", wings[n % len(wings)], p["prompt"], n % 2)
              for n, p in enumerate(near)]
    return {"fresh": fresh, "other": other}


def locomo_prompts(samples: list[locomo.Sample], limit: int | None) -> list[Prompt]:
    out: list[Prompt] = []
    for i, s in enumerate(samples):
        other = samples[(i + 1) % len(samples)].sample_id
        known = {e.key for e in s.exchanges}
        qs = [(q, locomo.gold_ids(q.get("evidence", []), known)) for q in s.questions]
        qs = [(q, g) for q, g in qs if g][:limit]
        for n, (q, gold) in enumerate(qs):
            evidence = {(f"locomo:{s.sample_id}", k) for k in gold}  # turn ids repeat across conversations
            out.append(Prompt(f"{s.sample_id}/{n}", s.sample_id, str(q["question"]), i % 2, evidence))
            out.append(Prompt(f"{s.sample_id}/{n}@{other}", other, str(q["question"]), i % 2, evidence, s.sample_id))
    return out


async def search_all(daemon: Daemon, prompts: list[Prompt], overrides: Sequence[str] = ()) -> None:
    """Each prompt's two searches as recall makes them: its own wing (none when that wing holds no drawers) and
    every wing."""
    ctx = PromptContext(daemon.settings, daemon.searcher, daemon.inbox, daemon.embedder, daemon.store)
    held: dict[str, bool] = {}
    for p in prompts:
        if p.wing not in held:
            held[p.wing] = await daemon.store.count(Filters(wing=(p.wing,))) > 0
        for wing in ((p.wing, None) if held[p.wing] else (None,)):
            req = ctx.request(p.text, wing, 0.0)
            if overrides:
                req = replace(req, options=replace(req.options, **{
                    k: type(getattr(req.options, k))(float(v)) for k, _, v in (o.partition("=") for o in overrides)}))
            hits = await daemon.searcher.search(req)
            if wing is None:
                p.beyond = hits
            else:
                p.hits = hits


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


def outcome(p: Prompt, floor: float, count_tokens: Any, weights: Sequence[float] | None,
            beyond: float | None = None) -> tuple[bool, bool, int]:
    """What recall would inject for ``p`` at ``floor`` (and ``beyond``, the floor of memories of other wings;
    None: the default): (its evidence is injected; a memory of a wing that does not hold its evidence is injected;
    tokens)."""
    beyond = DEFAULTS.hooks.recall_beyond_threshold if beyond is None else beyond
    candidates = merge_scopes(rescored(p.hits, weights), rescored(p.beyond, weights), p.wing if p.hits else None)
    chosen = select_memories(candidates, floor, None, beyond_threshold=beyond,
                             wing=p.wing if p.hits else None)
    text, kept = compose((), 0, chosen, 9000, MAX_TOKENS, count_tokens)
    tokens = count_tokens(text) if kept else 0
    return any(p.holds(h) for h in kept), any(h.get("wing") != p.home for h in kept), tokens


def summarise(rows: list[tuple[Prompt, bool, bool, int]]) -> dict[str, Any]:
    """``answered``: prompts asked where their evidence is that get it; ``elsewhere``: prompts asked away from it
    (another project, a folder with no memory) that get it; ``false``: prompts asked away from their evidence (or
    with none) that get a memory of a wing without it; tokens injected per answerable / other prompt; ``gain``:
    answered + elsewhere - false (each where the set has such prompts)."""
    here = [(ok, t) for p, ok, _f, t in rows if p.answerable and not p.away]
    there = [(ok, t) for p, ok, _f, t in rows if p.answerable and p.away]
    away = [(f, t) for p, _ok, f, t in rows if p.away]

    def mean(xs: list[float]) -> float:
        return round(statistics.fmean(xs), 3) if xs else 0.0

    out = {"answered": mean([float(ok) for ok, _ in here]), "elsewhere": mean([float(ok) for ok, _ in there]),
           "false": mean([float(f) for f, _ in away]),
           "tokens_answerable": round(mean([float(t) for _, t in here + there]), 1),
           "tokens_unanswerable": round(mean([float(t) for p, _o, _f, t in rows if not p.answerable]), 1),
           "answerable": len(here), "answerable_elsewhere": len(there), "away": len(away)}
    out["gain"] = round(out["answered"] + out["elsewhere"] - out["false"], 3)
    return out


def sweep(sets: dict[str, list[Prompt]], count_tokens: Any, weights: Sequence[float] | None,
          floors: Sequence[float], beyond: float | None = None) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for floor in floors:
        row: dict[str, Any] = {}
        for name, prompts in sets.items():
            done = [(p, *outcome(p, floor, count_tokens, weights, beyond)) for p in prompts]
            row[name] = summarise(done)
            for h in (0, 1):
                row[f"{name}/half{h}"] = summarise([d for d in done if d[0].half == h])
        row["worst_half_gain"] = round(min(v["gain"] for k, v in row.items() if "/half" in k), 3)
        rows[f"{floor:g}"] = row
    best = max(rows, key=lambda f: (rows[f]["worst_half_gain"], -abs(float(f) - 0.5)))
    return {"rows": rows, "best_floor": float(best)}


# Directions of the linear evidence score (dense, coverage, rarity); each is calibrated (Platt) and swept.
DIRECTIONS = tuple((9.0, c, r) for c in (0.0, 2.0, 4.0, 6.0) for r in (1.5, 3.0, 4.5))


def calibrate(sets: dict[str, list[Prompt]], direction: Sequence[float]) -> list[float]:
    """Platt scaling of ``z = direction . (dense, coverage, rarity)``: the logistic regression of "this candidate
    is its prompt's evidence" on z (each set carrying the same total weight), as ``fusion.relevance`` weights."""
    from sklearn.linear_model import LogisticRegression

    xs: list[list[float]] = []
    ys: list[int] = []
    ws: list[float] = []
    for prompts in sets.values():
        cands = [(p, h) for p in prompts for h in p.hits]
        for p, h in cands:
            sc = h["scores"]
            xs.append([direction[0] * (sc["dense"] or 0.0) + direction[1] * sc["keyword"]
                       + direction[2] * sc["rarity"]])
            ys.append(int(p.holds(h)))
            ws.append(1.0 / max(1, len(cands)))
    m = LogisticRegression(C=100.0, max_iter=1000).fit(xs, ys, sample_weight=[w * len(ws) for w in ws])
    a, b = float(m.coef_[0][0]), float(m.intercept_[0])
    return [round(b, 3), *(round(a * d, 3) for d in direction)]


def fit(sets: dict[str, list[Prompt]], count_tokens: Any, floors: Sequence[float]) -> dict[str, Any]:
    """Each direction, calibrated, swept; the best is the one whose best floor has the best worst-half gain."""
    tried = []
    for direction in DIRECTIONS:
        weights = calibrate(sets, direction)
        sw = sweep(sets, count_tokens, weights, floors)
        gain = sw["rows"][f"{sw['best_floor']:g}"]["worst_half_gain"]
        tried.append({"direction": list(direction), "weights": weights, "best_floor": sw["best_floor"],
                      "worst_half_gain": gain, "sweep": sw})
        print(f"  direction {direction}: weights {weights}, best floor {sw['best_floor']:g}, "
              f"worst-half gain {gain:.3f}", file=sys.stderr)
    best = max(tried, key=lambda t: t["worst_half_gain"])
    return {"tried": [{k: v for k, v in t.items() if k != "sweep"} for t in tried], "best": best}


def beyond_sweep(sets: dict[str, list[Prompt]], count_tokens: Any, floor: float) -> dict[str, Any]:
    """The floor for memories of other projects swept at the default floor (rows keyed by that floor)."""
    rows = {f"{b:g}": sweep(sets, count_tokens, None, [floor], b)["rows"][f"{floor:g}"] for b in BEYOND_SWEEP}
    best = max(rows, key=lambda b: (rows[b]["worst_half_gain"], -float(b)))
    return {"rows": rows, "best_floor": float(best)}


def table(res: dict[str, Any], names: Sequence[str], label: str = "floor") -> str:
    cols = [n for name in names for n in (name, f"{name}/half0", f"{name}/half1")]
    lines = [f"{label:<7}" + "".join(f"{c:>40}" for c in cols) + "   worst-half gain",
             "       " + "".join(f"{'answered elsewhere false tokens(a/u)':>40}" for _ in cols)]
    for floor, row in res["rows"].items():
        cells = "".join(f"{row[c]['answered']:>10.3f}{row[c]['elsewhere']:>9.3f}{row[c]['false']:>7.3f}"
                        f"{row[c]['tokens_answerable']:>7.0f}/{row[c]['tokens_unanswerable']:<6.0f}" for c in cols)
        lines.append(f"{floor:<7}{cells}   {row['worst_half_gain']:.3f}")
    return "\n".join(lines)


def loaded(args: argparse.Namespace) -> tuple[dict[str, list[Prompt]], Any]:
    """The prompts with the candidates a ``--save-hits`` run kept (to sweep and fit again without searching)."""
    saved = json.loads(args.load_hits.read_text())
    sets: dict[str, list[Prompt]] = {}
    if "coding" in saved:
        sets["coding"] = coding_prompts(args.prompts)
        for name, prompts in cross_prompts(args.prompts).items():
            if name in saved:
                sets[name] = prompts
    if "locomo" in saved:
        sets["locomo"] = locomo_prompts(locomo.load(args.locomo), args.limit)
    for name, prompts in sets.items():
        for p in prompts:
            p.hits, p.beyond = saved[name][p.pid]
    embedder = Embedder(models_dir=Path(tempfile.gettempdir()) / "mempal-recall-models")
    return sets, functools.lru_cache(maxsize=500_000)(embedder.count_tokens)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    sets: dict[str, list[Prompt]] = {}
    count_tokens = None
    temp: list[Path] = []
    if args.load_hits:
        sets, count_tokens = await anyio.to_thread.run_sync(lambda: loaded(args))
    if args.set in ("coding", "both") and not args.load_hits:
        work = args.coding_store or Path(tempfile.mkdtemp(prefix="recall-coding-"))
        if args.coding_store is None:
            temp.append(work)
        daemon, store, state = await coding_daemon(work, args.threads)
        try:
            sets["coding"] = coding_prompts(args.prompts)
            sets.update(cross_prompts(args.prompts))
            for name in ("coding", "fresh", "other"):
                await search_all(daemon, sets[name], args.option or ())
            count_tokens = functools.lru_cache(maxsize=500_000)(daemon.embedder.count_tokens)
        finally:
            store.close()
            state.close()
    if args.set in ("locomo", "both") and not args.load_hits:
        ns = argparse.Namespace(store=args.locomo_store, data=args.locomo)
        work, reuse = locomo._open_work(ns)
        if args.locomo_store is None:
            temp.append(work)
        samples = locomo.load(args.locomo)
        daemon, store, state = open_daemon(work, {
            "ingest": {"redact_secrets": False, "extract_general": False, "lock_timeout_s": 60},
            "store": {"machine": "bench"},
            "sources": {"claude_projects": "", "codex_sessions": ""}}, args.threads)
        try:
            if not reuse:
                for s in samples:
                    await locomo._ingest(daemon.ingestor, daemon.densifier, s)
                (work / "locomo-ingested.json").write_text(json.dumps(locomo._fingerprint(args.locomo)))
            prompts = locomo_prompts(samples, args.limit)
            await search_all(daemon, prompts, args.option or ())
            sets["locomo"] = prompts
            count_tokens = functools.lru_cache(maxsize=500_000)(daemon.embedder.count_tokens)
        finally:
            store.close()
            state.close()
    for t in temp:
        shutil.rmtree(t, ignore_errors=True)
    out: dict[str, Any] = {"weights": list(fusion.RELEVANCE_WEIGHTS), "default_floor": args.default_floor,
                           "default_beyond": args.default_beyond}
    if args.save_hits:
        out["hits"] = {name: {p.pid: (p.hits, p.beyond) for p in prompts} for name, prompts in sets.items()}
    floors = sorted({*SWEEP, args.default_floor})
    out["sweep"] = sweep(sets, count_tokens, None, floors, args.default_beyond)
    print(f"relevance weights {tuple(fusion.RELEVANCE_WEIGHTS)}; default floor {args.default_floor:g}, "
          f"beyond the project {args.default_beyond:g}")
    print(table(out["sweep"], list(sets)))
    print(f"best worst-half gain at floor {out['sweep']['best_floor']:g}")
    out["beyond"] = beyond_sweep(sets, count_tokens, args.default_floor)
    print(f"\nthe floor beyond the project (floor {args.default_floor:g} in it):")
    print(table(out["beyond"], list(sets), label="beyond"))
    print(f"best worst-half gain beyond the project at {out['beyond']['best_floor']:g}")
    if args.fit:
        fitted = fit(sets, count_tokens, floors)
        out["fitted"] = fitted
        best = fitted["best"]
        print(f"\nbest direction {tuple(best['direction'])}, calibrated weights (bias, dense, coverage, rarity) "
              f"{tuple(best['weights'])}:")
        print(table(best["sweep"], list(sets)))
        print(f"best worst-half gain at floor {best['best_floor']:g}")
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
    ap.add_argument("--default-beyond", type=float, default=None, help="(default: hooks.recall_beyond_threshold)")
    ap.add_argument("--option", action="append", metavar="OPTION=VALUE",
                    help="override an option of recall's search (research; e.g. --option neighbour_decay=0.8)")
    ap.add_argument("--fit", action="store_true", help="also fit the relevance weights on these prompts")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--save-hits", type=Path, default=None, help="also keep every prompt's candidates here")
    ap.add_argument("--load-hits", type=Path, default=None, help="sweep (and fit) the candidates of --save-hits")
    args = ap.parse_args(argv)
    if args.default_floor is None:
        args.default_floor = DEFAULTS.hooks.recall_threshold
    if args.default_beyond is None:
        args.default_beyond = DEFAULTS.hooks.recall_beyond_threshold
    if args.set in ("coding", "both") and not FIXTURES.is_dir():
        print(f"no format fixtures at {FIXTURES}", file=sys.stderr)
        return 2
    if args.set in ("locomo", "both") and not args.locomo.is_file():
        print(f"no LoCoMo data at {args.locomo}; pass --locomo PATH", file=sys.stderr)
        return 2
    res = anyio.run(run, args)
    hits = res.pop("hits", None)
    if args.save_hits:
        args.save_hits.write_text(json.dumps(hits))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
