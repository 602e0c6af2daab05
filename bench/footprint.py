"""Footprint: idle RSS, disk and startup time to ready at 100k drawers.

    python bench/footprint.py [--n 100000] [--starts 5] [--smoke] [--json PATH]

The store is pre-filled through mempald's own store code (``bench/_prefill.py``), unindexed, as a backfill
leaves it. The real daemon is started on it and left alone: it builds the indexes itself (a separate process,
``store.index_quiet_s`` lowered to 5 s here) and swaps them in; then it is restarted ``--starts`` times.
Startup = from process spawn to the first ``ping`` answered on the socket (model loaded, store opened, socket
bound); idle RSS = VmRSS of the daemon and its store process together, once nothing is queued and a few
searches ran. Targets: idle RSS under 600 MB, startup under 3 s.

``--indexed`` starts from the store with its indexes already built (by ``build_index``, the code the daemon's
rebuild runs; its duration is the prefill's ``index_build_s``) and skips the daemon's own build: at a million
drawers an unbuilt store holds its vectors and sparse index in memory (about 12 GB), and the build's copy as
much again, more than a small machine has.
"""

from __future__ import annotations

import time
from typing import Any

from _harness import (
    BenchEnv,
    Daemon,
    bench_env,
    dir_size_mb,
    loadavg,
    parser,
    report,
    size,
    summary,
    wait_idle,
    write_config,
)
from _prefill import prefilled


def settle(d: Daemon) -> None:
    for q in ("database migration lock", "why does the deploy fail", "cache timeout retry"):
        d.call("search", {"query": q})
    d.call("status")
    time.sleep(2.0)


def daemon_build(be: BenchEnv) -> tuple[float, dict[str, float], dict[str, Any], dict[str, float]]:
    """Start the daemon on the unbuilt store and wait for its own index build: (startup ms before it, RSS split
    before, the build's figures, RSS split after)."""
    with Daemon(be).start() as d:
        ready_ms = d.ready_s * 1000.0
        wait_idle(d, 300)
        settle(d)
        before = d.rss_split_mb()
        t0 = time.monotonic()
        while (st := d.call("status"))["index"]["builds"] < 1:
            if st["index"]["last_error"] or time.monotonic() - t0 > 3600:
                raise RuntimeError(f"no index build: {st['index']}\n{d.logs()[-3000:]}")
            time.sleep(1.0)
        build = dict(st["index"]["last"])
        build["wall_s"] = round(time.monotonic() - t0, 1)
        settle(d)
        return ready_ms, before, build, d.rss_split_mb()


def main() -> None:
    ap = parser(__doc__ or "", 100_000, 300)
    ap.add_argument("--starts", type=int, default=None)
    ap.add_argument("--indexed", action="store_true", help="start from the built store (no build by the daemon)")
    args = ap.parse_args()
    n = size(args)
    starts = args.starts or (1 if args.smoke else 5)
    load_start = loadavg()
    index_after = 20 if args.smoke else 20_000
    with bench_env(keep=args.keep) as be:
        fill = prefilled(be.data_dir, n, indexed=args.indexed)
        if args.indexed:
            write_config(be, "[store]\nindex_after = 0\n")
            unindexed_ready_ms = 0.0
            before: dict[str, float] = {}
            after_build: dict[str, float] = {}
            build: dict[str, Any] = {"build_s": fill.get("index_build_s", "cached")}
        else:
            write_config(be, f"[store]\nindex_after = {index_after}\nindex_quiet_s = 5\n")
            unindexed_ready_ms, before, build, after_build = daemon_build(be)
        ready: list[float] = []
        idle_mb: list[float] = []
        split: dict[str, float] = {}
        splits: list[dict[str, float]] = []  # every start's, in order (the first follows the store's copy)
        peak_mb: list[float] = []
        for _ in range(starts):
            with Daemon(be).start() as d:
                ready.append(d.ready_s * 1000.0)
                st = wait_idle(d, 300)
                settle(d)
                idle_mb.append(d.rss_mb())
                split = d.rss_split_mb()
                splits.append(split)
                peak_mb.append(d.peak_rss_mb())
        store_mb = dir_size_mb(be.data_dir / "store")
        models_mb = dir_size_mb(be.data_dir / "models")
        total_mb = dir_size_mb(be.data_dir)
    res = {"drawers": st["drawers"], "prefilled": True, "startup_ms": summary(ready),
           "unindexed": {"startup_ms": round(unindexed_ready_ms, 1), "idle_rss_split_mb": before},
           "index_build": build, "rss_after_build_split_mb": after_build,
           "idle_rss_mb": summary(idle_mb), "idle_rss_split_mb": split, "idle_rss_split_per_start_mb": splits,
           "peak_rss_mb": summary(peak_mb),
           "disk_store_mb": round(store_mb, 1),
           "disk_models_mb": round(models_mb, 1), "disk_total_mb": round(total_mb, 1), "loadavg_start": load_start}
    report("footprint", [
        ("drawers", st["drawers"]),
        *([("index build (build_index, before the daemon started) (s)", build["build_s"])] if args.indexed else [
            ("unindexed (after a backfill): startup (ms) / idle RSS (MB)",
             f"{res['unindexed']['startup_ms']} / {before.get('VmRSS')}"),
            ("index build by the daemon: copy / build / open / swap (s)",
             f"{build.get('copy_s')} / {build.get('build_s')} / {build.get('open_s')} / {build.get('swap_s')}"),
            ("idle RSS right after the build (MB)", after_build.get("VmRSS")),
        ]),
        ("startup to ready p50 / max (ms)",
         f"{res['startup_ms']['p50']} / {res['startup_ms']['max']}  (target < 3000)"),
        ("idle RSS p50 / max (MB)", f"{res['idle_rss_mb']['p50']} / {res['idle_rss_mb']['max']}  (target < 600)"),
        ("idle RSS anon / file-backed, each start (MB)",
         ", ".join(f"{sp.get('RssAnon')} / {sp.get('RssFile')}" for sp in splits)),
        ("peak RSS p50 (MB)", res["peak_rss_mb"]["p50"]),
        ("disk: store / models / total (MB)", f"{res['disk_store_mb']} / {res['disk_models_mb']} / "
                                              f"{res['disk_total_mb']}"),
        ("load at start", " ".join(f"{x:.2f}" for x in load_start)),
    ], res, args.json)


if __name__ == "__main__":
    main()
