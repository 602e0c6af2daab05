"""Responsiveness: ``status`` round trips while the daemon backfills and while the store takes bulk writes.

    python bench/responsiveness.py [--n 3000] [--seconds 60] [--smoke] [--json PATH]

Starts a real daemon on ``--n`` unread exchanges and calls ``status`` in a tight loop (one kept-open
connection, 20 ms apart) for ``--seconds``, tagging each call with the phase the daemon was in: reading
files (parse, BM25, bulk upserts into the store: the store's write/maintenance path) or embedding only
(dense vectors written back). Then the index maintenance: a daemon on a pre-filled, unindexed store of
``--build-drawers`` drawers (100k; ``bench/_prefill.py``) builds its indexes (copy, build in a separate
process, open, replay, swap) while ``status`` and ``search`` are called throughout. Last, a burst of many small
files: ``--burst`` new one-exchange transcripts (20,000) written at once into the watched folder of an idle
daemon, ``status`` called throughout until every one is stored (keyword-searchable; the dense pass goes on
after), with the burst's throughput. Target: p99 under 50 ms at all times.
"""

from __future__ import annotations

import argparse
import threading
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


def exchanges(st: dict[str, Any]) -> int:
    """Exchanges stored from every watched source (the burst lands in ~/.claude/projects)."""
    return sum(int(s["exchanges"]) for s in st["sources"])


def backfill_phase(args: argparse.Namespace, n: int, seconds: float,
                   phases: dict[str, list[float]]) -> dict[str, Any]:
    """``status`` while a daemon reads and embeds ``n`` unread exchanges; its last status."""
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
            return last


def build_phase(args: argparse.Namespace, build_n: int, phases: dict[str, list[float]],
                searches: list[float]) -> dict[str, Any]:
    """``status`` and ``search`` while a daemon builds the index of a pre-filled store; the build's report."""
    with bench_env(keep=args.keep) as be:
        prefilled(be.data_dir, build_n)
        write_config(be, f"[store]\nindex_after = {min(20_000, build_n // 2)}\nindex_quiet_s = 2\n")
        with Daemon(be).start(timeout=120 + build_n / 2000) as d:  # an unbuilt store loads all into memory
            wait_idle(d, 300)
            t0 = time.monotonic()
            deadline = 1800 + build_n * 0.006  # a 1M-drawer build takes about 50 min on two cores
            while time.monotonic() - t0 < deadline:
                ms, st = d.timed("status")
                index = st["index"]
                if index["state"] == "building":
                    phases["index_build"].append(ms)
                    searches.append(d.timed("search", {"query": "why does the deploy fail", "limit": 10})[0])
                if index["builds"] >= 1 or index["last_error"]:
                    break
                time.sleep(0.02)
            return dict(d.call("status")["index"])


def burst_phase(args: argparse.Namespace, burst_n: int, phases: dict[str, list[float]]) -> dict[str, Any]:
    """``status`` while ``burst_n`` new one-exchange transcripts land at once in an idle daemon's watched
    folder, until every one is stored; the burst's figures."""
    with bench_env(keep=args.keep) as be:
        be.projects.mkdir(parents=True, exist_ok=True)
        with Daemon(be).start() as d:
            wait_idle(d, 120)
            before = exchanges(d.call("status"))
            done = threading.Event()
            written: dict[str, float] = {}

            def write() -> None:
                t = time.monotonic()
                write_corpus(be.projects, burst_n, per_session=1, seed=33)
                written["s"] = time.monotonic() - t
                done.set()

            t0 = time.monotonic()
            threading.Thread(target=write, daemon=True).start()
            stored = 0
            while time.monotonic() - t0 < 3600:
                ms, st = d.timed("status")
                phases["small_file_burst"].append(ms)
                stored = exchanges(st) - before
                if done.is_set() and stored >= burst_n and not st["file_backlog"]:
                    break
                time.sleep(0.02)
            took = time.monotonic() - t0
            st = d.call("status")
            return {"files": burst_n, "stored_exchanges": stored, "seconds": round(took, 1),
                    "writing_s": round(written.get("s", 0.0), 1),
                    "files_per_s": round(burst_n / took, 1) if took else None,
                    "dense_backlog_after": st["dense_backlog"], "drawers_after": st["drawers"]}


def main() -> None:
    ap = parser(__doc__ or "", 3000, 16)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--build-drawers", type=int, default=None, help="store size for the index build phase")
    ap.add_argument("--burst", type=int, default=None, help="small files in the burst phase (0: skip it)")
    ap.add_argument("--skip", default="", help="comma-separated phases to leave out: backfill, build")
    args = ap.parse_args()
    n = size(args)
    seconds = args.seconds or (1.5 if args.smoke else 60.0)
    skip = {x.strip() for x in args.skip.split(",") if x.strip()}
    load_start = loadavg()
    phases: dict[str, list[float]] = {"reading_files": [], "embedding": [], "idle": [], "index_build": [],
                                      "small_file_burst": []}
    last: dict[str, Any] = {"drawers": None, "dense_backlog": None}
    if "backfill" not in skip:
        last = backfill_phase(args, n, seconds, phases)
    build_n = args.build_drawers or (300 if args.smoke else 100_000)
    searches: list[float] = []
    build: dict[str, Any] = {}
    if "build" not in skip:
        build = build_phase(args, build_n, phases, searches)
    burst_n = args.burst if args.burst is not None else (50 if args.smoke else 20_000)
    burst: dict[str, Any] = burst_phase(args, burst_n, phases) if burst_n else {}
    res = {"n_exchanges": n, "seconds": seconds, "status_ms": {k: summary(v) for k, v in phases.items()},
           "search_during_build_ms": summary(searches), "index_build": build, "build_drawers": build_n,
           "drawers_at_end": last["drawers"], "dense_backlog_at_end": last["dense_backlog"],
           "burst": burst, "loadavg_start": load_start}
    rows: list[tuple[str, Any]] = []
    for k, s in res["status_ms"].items():
        rows.append((f"status while {k}", f"p50 {s['p50']} ms  p99 {s['p99']} ms  max {s['max']} ms  (n={s['n']})"))
    sr = res["search_during_build_ms"]
    rows.append(("search during the index build", f"p50 {sr['p50']} ms  p99 {sr['p99']} ms  max {sr['max']} ms "
                                                   f"(n={sr['n']}; build {build.get('last', {})})"))
    if burst_n:
        rows.append(("small-file burst", f"{burst.get('stored_exchanges')} of {burst_n} files stored in "
                                         f"{burst.get('seconds')} s ({burst.get('files_per_s')} files/s; writing "
                                         f"them took {burst.get('writing_s')} s)"))
    rows += [("target", "p99 < 50 ms at all times"), ("load at start", " ".join(f"{x:.2f}" for x in load_start))]
    report("responsiveness", rows, res, args.json)


if __name__ == "__main__":
    main()
