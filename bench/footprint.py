"""Footprint: idle RSS, disk and startup time to ready at 100k drawers.

    python bench/footprint.py [--n 100000] [--starts 5] [--smoke] [--json PATH]

The store is pre-filled through mempald's own store code (``bench/_prefill.py``), then the real daemon is
started ``--starts`` times on it: startup = from process spawn to the first ``ping`` answered on the socket
(model loaded, store opened, socket bound); idle RSS = VmRSS once nothing is queued and a few searches ran.
Targets: idle RSS under 600 MB, startup under 3 s.
"""

from __future__ import annotations

import time

from _harness import Daemon, bench_env, dir_size_mb, loadavg, parser, report, size, summary, wait_idle
from _prefill import prefilled


def main() -> None:
    ap = parser(__doc__ or "", 100_000, 300)
    ap.add_argument("--starts", type=int, default=None)
    args = ap.parse_args()
    n = size(args)
    starts = args.starts or (1 if args.smoke else 5)
    load_start = loadavg()
    with bench_env(keep=args.keep) as be:
        prefilled(be.data_dir, n)
        ready: list[float] = []
        idle_mb: list[float] = []
        split: dict[str, float] = {}
        peak_mb: list[float] = []
        for _ in range(starts):
            with Daemon(be).start() as d:
                ready.append(d.ready_s * 1000.0)
                st = wait_idle(d, 300)
                for q in ("database migration lock", "why does the deploy fail", "cache timeout retry"):
                    d.call("search", {"query": q})
                d.call("status")
                time.sleep(2.0)
                idle_mb.append(d.rss_mb())
                split = d.rss_split_mb()
                peak_mb.append(d.peak_rss_mb())
        store_mb = dir_size_mb(be.data_dir / "store")
        models_mb = dir_size_mb(be.data_dir / "models")
        total_mb = dir_size_mb(be.data_dir)
    res = {"drawers": st["drawers"], "prefilled": True, "startup_ms": summary(ready),
           "idle_rss_mb": summary(idle_mb), "idle_rss_split_mb": split, "peak_rss_mb": summary(peak_mb),
           "disk_store_mb": round(store_mb, 1),
           "disk_models_mb": round(models_mb, 1), "disk_total_mb": round(total_mb, 1), "loadavg_start": load_start}
    report("footprint", [
        ("drawers", st["drawers"]),
        ("startup to ready p50 / max (ms)",
         f"{res['startup_ms']['p50']} / {res['startup_ms']['max']}  (target < 3000)"),
        ("idle RSS p50 (MB)", f"{res['idle_rss_mb']['p50']}  (target < 600)"),
        ("idle RSS anon / file-backed (MB)", f"{split.get('RssAnon')} / {split.get('RssFile')}"),
        ("peak RSS p50 (MB)", res["peak_rss_mb"]["p50"]),
        ("disk: store / models / total (MB)", f"{res['disk_store_mb']} / {res['disk_models_mb']} / "
                                              f"{res['disk_total_mb']}"),
        ("load at start", " ".join(f"{x:.2f}" for x in load_start)),
    ], res, args.json)


if __name__ == "__main__":
    main()
