"""Responsiveness: ``status`` round trips while the daemon backfills and while the store takes bulk writes.

    python bench/responsiveness.py [--n 3000] [--seconds 60] [--smoke] [--json PATH]

Starts a real daemon on ``--n`` unread exchanges and calls ``status`` in a tight loop (one kept-open
connection, 20 ms apart) for ``--seconds``, tagging each call with the phase the daemon was in: reading
files (parse, BM25, bulk upserts into the store: the store's write/maintenance path) or embedding only
(dense vectors written back). Then the index maintenance: a daemon on a pre-filled, unindexed store of
``--build-drawers`` drawers (100k; ``bench/_prefill.py``) builds its indexes (copy, build in a separate
process, open, replay, swap) while ``status`` and ``search`` are called throughout. Target: p99 under 50 ms
at all times.
"""

from __future__ import annotations

import time
from typing import Any

from _harness import (
    Daemon,
    bench_env,
    loadavg,
    parser,
    report,
    size,
    summary,
    wait_idle,
    write_config,
    write_corpus,
)
from _prefill import prefilled


def main() -> None:
    ap = parser(__doc__ or "", 3000, 16)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--build-drawers", type=int, default=None, help="store size for the index build phase")
    args = ap.parse_args()
    n = size(args)
    seconds = args.seconds or (1.5 if args.smoke else 60.0)
    load_start = loadavg()
    phases: dict[str, list[float]] = {"reading_files": [], "embedding": [], "idle": []}
    with bench_env(keep=args.keep) as be:
        write_corpus(be.projects, n, seed=21)
        with Daemon(be).start() as d:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                ms, st = d.timed("status")
                phase = ("reading_files" if st["file_backlog"] or st["scans"] < 1 else
                         "embedding" if st["dense_backlog"] else "idle")
                phases[phase].append(ms)
                time.sleep(0.02)
            if args.smoke:
                wait_idle(d, 120)
                for _ in range(10):
                    phases["idle"].append(d.timed("status")[0])
            last: dict[str, Any] = d.call("status")
    build_n = args.build_drawers or (300 if args.smoke else 100_000)
    phases["index_build"] = []
    searches: list[float] = []
    with bench_env(keep=args.keep) as be:
        prefilled(be.data_dir, build_n)
        write_config(be, f"[store]\nindex_after = {min(20_000, build_n // 2)}\nindex_quiet_s = 2\n")
        with Daemon(be).start() as d:
            wait_idle(d, 300)
            t0 = time.monotonic()
            while time.monotonic() - t0 < 1800:
                ms, st = d.timed("status")
                index = st["index"]
                if index["state"] == "building":
                    phases["index_build"].append(ms)
                    searches.append(d.timed("search", {"query": "why does the deploy fail", "limit": 10})[0])
                if index["builds"] >= 1 or index["last_error"]:
                    break
                time.sleep(0.02)
            build = dict(d.call("status")["index"])
    res = {"n_exchanges": n, "seconds": seconds, "status_ms": {k: summary(v) for k, v in phases.items()},
           "search_during_build_ms": summary(searches), "index_build": build, "build_drawers": build_n,
           "drawers_at_end": last["drawers"], "dense_backlog_at_end": last["dense_backlog"],
           "loadavg_start": load_start}
    rows: list[tuple[str, Any]] = []
    for k, s in res["status_ms"].items():
        rows.append((f"status while {k}", f"p50 {s['p50']} ms  p99 {s['p99']} ms  max {s['max']} ms  (n={s['n']})"))
    sr = res["search_during_build_ms"]
    rows.append(("search during the index build", f"p50 {sr['p50']} ms  p99 {sr['p99']} ms  max {sr['max']} ms "
                                                   f"(n={sr['n']}; build {build.get('last', {})})"))
    rows += [("target", "p99 < 50 ms at all times"), ("load at start", " ".join(f"{x:.2f}" for x in load_start))]
    report("responsiveness", rows, res, args.json)


if __name__ == "__main__":
    main()
