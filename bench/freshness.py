"""Freshness: how long after an exchange is appended to a watched transcript ``search`` finds it.

    python bench/freshness.py [--n 50] [--backlog 3000] [--smoke] [--json PATH] [--keep]

Two phases, each with ``--n`` appends (at least 50 for the full run):
- idle: the daemon has nothing else to do;
- backfilling: the daemon was started on ``--backlog`` older exchanges and is still reading or embedding
  them (the status at each append is recorded: file and dense backlog).
Each append writes one complete exchange with a unique word to a live session file. The client then searches
every 25 ms: "keyword" is the first time a search for the unique word returns the exchange, "semantic" the
first time a search for the whole prompt returns it with a dense score (its dense vector is stored and it is
among the dense candidates). Targets: keyword p95 under 1 s (also while
backfilling), semantic p95 under 3 s when idle.
"""

from __future__ import annotations

import random
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _harness import (
    Daemon,
    bench_env,
    exchange_lines,
    is_idle,
    loadavg,
    paragraph,
    parser,
    report,
    size,
    summary,
    wait_idle,
    write_corpus,
)

POLL_S = 0.025
GIVE_UP_S = 60.0


def probe(d: Daemon, live: Path, session: str, i: int, rnd: random.Random) -> dict[str, Any]:
    word = f"zq{uuid.uuid4().hex[:10]}"
    prompt = f"Why does the {word} migration lock the orders table during the nightly deploy run {i}?"
    answer = f"The {word} migration takes an exclusive lock; " + paragraph(rnd, 60)
    key = str(uuid.uuid4())
    lines = exchange_lines(rnd, session, "/home/u/projects/live", key,
                           datetime.now(UTC) - timedelta(seconds=5), prompt=prompt, answer=answer)
    with live.open("a") as fh:
        fh.write("\n".join(lines) + "\n")
    t0 = time.monotonic()
    keyword: float | None = None
    semantic: float | None = None
    while time.monotonic() - t0 < GIVE_UP_S:
        if keyword is None:
            hits = d.call("search", {"query": word, "limit": 10})["hits"]
            if any(h.get("exchange_key") == key for h in hits):
                keyword = time.monotonic() - t0
        hits = d.call("search", {"query": prompt, "limit": 50})["hits"]
        mine = [h for h in hits if h.get("exchange_key") == key]
        if mine and mine[0]["scores"]["dense"] is not None:
            semantic = time.monotonic() - t0
            keyword = keyword if keyword is not None else semantic
            break
        time.sleep(POLL_S)
    return {"keyword_s": keyword, "semantic_s": semantic}


def phase(d: Daemon, live: Path, session: str, n: int, rnd: random.Random, gap: float) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        st = d.call("status")
        res = probe(d, live, session, i, rnd)
        res.update(file_backlog=st["file_backlog"], dense_backlog=st["dense_backlog"])
        out.append(res)
        time.sleep(gap)
    return out


def figures(samples: list[dict[str, Any]]) -> dict[str, Any]:
    kw = [s["keyword_s"] * 1000 for s in samples if s["keyword_s"] is not None]
    se = [s["semantic_s"] * 1000 for s in samples if s["semantic_s"] is not None]
    return {"keyword_ms": summary(kw), "semantic_ms": summary(se),
            "missed_keyword": sum(1 for s in samples if s["keyword_s"] is None),
            "missed_semantic": sum(1 for s in samples if s["semantic_s"] is None),
            "during_file_backfill": sum(1 for s in samples if s["file_backlog"]),
            "during_dense_backfill": sum(1 for s in samples if s["dense_backlog"] > 0),
            "samples": samples}


def main() -> None:
    ap = parser(__doc__ or "", 50, 3)
    ap.add_argument("--backlog", type=int, default=None, help="exchanges backfilled in phase 2 (default 3000)")
    args = ap.parse_args()
    n = size(args)
    backlog = args.backlog if args.backlog is not None else (16 if args.smoke else 3000)
    rnd = random.Random(5)
    session = str(uuid.uuid4())
    load_start = loadavg()
    with bench_env(keep=args.keep) as be:
        live = be.projects / "-home-u-projects-live" / f"{session}.jsonl"
        live.parent.mkdir(parents=True)
        live.write_text("\n".join(exchange_lines(rnd, session, "/home/u/projects/live", str(uuid.uuid4()),
                                                 datetime.now(UTC) - timedelta(hours=1))) + "\n")
        with Daemon(be).start() as d:
            wait_idle(d, 120)
            idle = phase(d, live, session, n, rnd, gap=0.2)
        # phase 2: a fresh daemon on the same data dir with a big backlog of older transcripts
        write_corpus(be.projects, backlog, seed=11)
        with Daemon(be).start() as d:
            time.sleep(1.0)  # let the catch-up scan queue the backlog
            busy = phase(d, live, session, n, rnd, gap=0.5)
            st = d.call("status")
            still_busy = not is_idle(st)
    res: dict[str, Any] = {"n": n, "backlog_exchanges": backlog, "idle": figures(idle), "backfilling": figures(busy),
           "backfill_still_running_at_end": still_busy, "loadavg_start": load_start}
    i, b = res["idle"], res["backfilling"]
    report("freshness", [
        ("appends per phase", n),
        ("idle keyword p50 / p95 (ms)", f"{i['keyword_ms']['p50']} / {i['keyword_ms']['p95']}  (target p95 < 1000)"),
        ("idle semantic p50 / p95 (ms)",
         f"{i['semantic_ms']['p50']} / {i['semantic_ms']['p95']}  (target p95 < 3000)"),
        ("backfill keyword p50 / p95 (ms)",
         f"{b['keyword_ms']['p50']} / {b['keyword_ms']['p95']}  (target p95 < 1000)"),
        ("backfill semantic p50 / p95 (ms)", f"{b['semantic_ms']['p50']} / {b['semantic_ms']['p95']}"),
        ("appends during file / dense backfill", f"{b['during_file_backfill']} / {b['during_dense_backfill']}"),
        ("missed (keyword / semantic)", f"{i['missed_keyword'] + b['missed_keyword']} / "
                                        f"{i['missed_semantic'] + b['missed_semantic']}"),
        ("load at start", " ".join(f"{x:.2f}" for x in load_start)),
    ], res, args.json)


if __name__ == "__main__":
    main()
