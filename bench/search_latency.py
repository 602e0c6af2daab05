"""Search latency through the socket, query embedding included, at 10k and 100k drawers.

    python bench/search_latency.py [--n 100000] [--sizes 10000,100000] [--queries 200] [--smoke] [--json PATH]

The stores are pre-filled through mempald's own store code (``bench/_prefill.py``: real drawers, real BM25
vectors, real-model dense vectors re-used from 512 embedded texts), then a real daemon is started on the data
dir and queried over its socket on one kept-open connection: no filter, a wing filter, and wing + time range +
memory type. Targets at 100k: p50 under 20 ms, p99 under 60 ms.

``--warm`` reads the store's files once right before the queries (their pages in the page cache, as on a machine
that has served the store for a while): some VMs page out file pages that go unread for about a minute (Linux
DAMON reclaim), so a 1M store's searches there read from disk while a run is being measured.

Each size is measured in the state the daemon keeps it in: from ``store.index_after`` (20,000) unindexed
vectors on, the daemon builds the indexes when idle, so 100k is measured indexed (built by the same
``build_index`` code) and 10k brute force. ``--both`` also measures every size in the other state (for 100k:
right after a backfill, before the build).
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from _harness import Daemon, bench_env, loadavg, parser, report, sentence, summary, wait_idle, write_config
from _prefill import prefilled

INDEX_AFTER = 20_000  # the daemon's default store.index_after
FILTERS: dict[str, dict[str, Any]] = {
    "none": {},
    "wing": {"wing": "app1"},
    "wing+since+type": {"wing": "app2", "since": "2025-02-01", "memory_type": ["none", "decision", "problem"]},
}


def measure(d: Daemon, queries: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, flt in FILTERS.items():
        for q in queries[:5]:
            d.call("search", {"query": q, "limit": 10, **flt})
        times = []
        for q in queries:
            ms, res = d.timed("search", {"query": q, "limit": 10, **flt})
            times.append(ms)
        out[name] = summary(times)
        out[name]["hits_last"] = len(res["hits"])
    return out


def read_files(folder: Path) -> float:
    """Read every file under ``folder`` once (into the page cache); the seconds it took."""
    t0 = time.monotonic()
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            with f.open("rb") as fh:
                while fh.read(1 << 20):
                    pass
    return round(time.monotonic() - t0, 1)


def main() -> None:
    ap = parser(__doc__ or "", 100_000, 300)
    ap.add_argument("--sizes", default=None, help="comma-separated drawer counts (default 10000,<n>)")
    ap.add_argument("--queries", type=int, default=None)
    ap.add_argument("--both", action="store_true", help="measure each size indexed and brute force")
    ap.add_argument("--warm", action="store_true", help="read the store's files right before the queries")
    args = ap.parse_args()
    if args.sizes:
        sizes = [int(x) for x in args.sizes.split(",")]
    elif args.smoke:
        sizes = [args.n or 300]
    else:
        sizes = [10_000, args.n or 100_000]
    nq = args.queries or (20 if args.smoke else 200)
    rnd = random.Random(9)
    queries = [sentence(rnd, 4, 14) for _ in range(nq)]
    results: dict[str, Any] = {"sizes": {}, "prefilled": True, "loadavg_start": loadavg()}
    rows: list[tuple[str, Any]] = []
    runs = [(n, n >= INDEX_AFTER) for n in sizes]
    if args.both:
        runs += [(n, n < INDEX_AFTER) for n in sizes]
    for n, indexed in runs:
        state = "indexed" if indexed else "brute force"
        with bench_env(keep=args.keep) as be:
            info = prefilled(be.data_dir, n, indexed=indexed)
            write_config(be, "[store]\nindex_after = 0\n")  # no build while measuring
            with Daemon(be).start() as d:
                st = wait_idle(d, 300)
                time.sleep(1.0)
                if args.warm:
                    info["warm_s"] = read_files(be.data_dir / "store")
                load = loadavg()
                figs = measure(d, queries)
        key = f"{n}" if indexed == (n >= INDEX_AFTER) else f"{n}-{'indexed' if indexed else 'brute'}"
        results["sizes"][key] = {"drawers": st["drawers"], "indexed": indexed, "prefill": info, "search_ms": figs,
                                 "loadavg": load}
        for name, s in figs.items():
            rows.append((f"{n:>7} drawers ({state}), filter {name}",
                         f"p50 {s['p50']:.1f} ms  p99 {s['p99']:.1f} ms  (n={s['n']}, load {load[0]:.2f})"))
    rows.append(("targets at 100k", "p50 < 20 ms, p99 < 60 ms"))
    report("search_latency", rows, results, args.json,
           title="search latency (socket, query embedding included; stores pre-filled)")


if __name__ == "__main__":
    main()
