"""Sync through a shared folder: N drawers of machine A searchable on machine B, without re-embedding.

    python bench/sync.py [--n 10000] [--smoke] [--json PATH]

A's data dir is pre-filled with N drawers of machine ``bench`` (``bench/_prefill.py``: real drawers, real BM25 and
real-model dense vectors); a real daemon A joins a sync folder with ``sync init`` and writes them all as segments
(``export_s``); a second real daemon B, in another home, joins the folder and imports them (``import_s``: from
``sync join`` until B holds N drawers of A, none waiting for its dense vector, none embedded on B). Target for
10,000 drawers: searchable on B in under 60 s.
"""

from __future__ import annotations

import time
from typing import Any

from _harness import Daemon, bench_env, loadavg, parser, report, size
from _prefill import prefilled


def poll(what: Any, timeout: float, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(interval)
    raise SystemExit(f"not done within {timeout} s")


def drawers_of(d: Daemon, machine: str) -> int:
    return int(next((m["drawers"] for m in d.call("machines")["machines"] if m["machine"] == machine), 0))


def main() -> None:
    args = parser(__doc__ or "", 10_000, 300).parse_args()
    n = size(args)
    result: dict[str, Any] = {"n": n, "loadavg_start": loadavg()}
    with bench_env(keep=args.keep) as be_a, bench_env(keep=args.keep) as be_b:
        shared = be_a.root / "shared"
        be_a.env["MEMPAL_STORE_MACHINE"] = "bench"
        be_b.env["MEMPAL_STORE_MACHINE"] = "other"
        result["prefill"] = prefilled(be_a.data_dir, n)
        with Daemon(be_a).start() as a:
            t0 = time.monotonic()
            queued = a.call("sync_init", {"dir": str(shared)}, timeout=600)["queued"]
            poll(lambda: a.call("sync_status")["outbox"] == 0, 600)
            result["export_s"] = round(time.monotonic() - t0, 2)
            result["queued"] = queued
            segs = list((shared / "bench").glob("seg-*.mps"))
            result["segments"] = len(segs)
            result["segment_mb"] = round(sum(p.stat().st_size for p in segs) / 1e6, 1)
        with Daemon(be_b).start() as b:
            t0 = time.monotonic()
            b.call("sync_join", {"dir": str(shared)})
            poll(lambda: drawers_of(b, "bench") >= n and b.call("status")["dense_backlog"] == 0, 600)
            result["import_s"] = round(time.monotonic() - t0, 2)
            st = b.call("sync_status")
            result["embedded_on_b"] = st["embedded_here"]
            hits = b.call("search", {"query": "how did we fix the failing build", "machine": ["bench"]})["hits"]
            result["hits_on_b"] = len(hits)
            result["rss_b_mb"] = round(b.rss_mb(), 1)
    rows = [("drawers", n), ("A: sync init -> all written (s)", result["export_s"]),
            ("segments (MB)", f"{result['segments']} ({result['segment_mb']})"),
            ("B: sync join -> all searchable (s)", result["import_s"]),
            ("embedded again on B", result["embedded_on_b"]), ("hits for a query on B", result["hits_on_b"])]
    report("sync", rows, result, args.json, title=f"sync: {n} drawers from A searchable on B")
    if result["embedded_on_b"] or not result["hits_on_b"]:
        raise SystemExit("B embedded drawers again, or found nothing")


if __name__ == "__main__":
    main()
