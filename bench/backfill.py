"""Backfill throughput: a real daemon ingests N exchanges end to end, against fastembed alone on the same texts.

    python bench/backfill.py [--n 10000] [--smoke] [--json PATH] [--keep]

1. Writes N exchanges of real-shaped Claude Code transcripts (prompt, thinking, tool calls with results,
   answer) into a fake ``~/.claude/projects``.
2. Starts ``python -m mempald`` and polls ``status`` until every file is read and every drawer has its dense
   vector (``file_backlog`` 0 and ``dense_backlog`` 0): that wall time, from process start, is the end-to-end
   figure (exchanges/s and drawers/s). Peak RSS is the daemon's VmHWM.
3. Reads back the exact texts the dense worker embedded (drawer text with its context, via the ``drawers``
   method), stops the daemon, and times fastembed alone on them: the model file as it ships
   (``Embedder(fuse=False)``), in arrival order (newest first), batch 8. On the same slices in turn it times
   the fused graph (``mempald.embed.graph``) in the same order and batches, and the dense pass's own way (fused
   graph, ``embed_by_length`` with the default budget), and compares the dense pass's vectors with fastembed
   alone's (the lowest cosine). The ratio of the end-to-end rate to fastembed alone (drawers/s) is the
   issue-23 figure (target: at least 1.4); "dense pass / fastembed alone" splits into the graph's gain and the
   grouping's; ``--alone-sample K`` times them on every (N/K)-th text only, to shorten a long run.
Also checks that no embedded text is longer than the model reads (256 tokens with [CLS]/[SEP]).
"""

from __future__ import annotations

import time
from typing import Any

from _harness import Daemon, bench_env, dir_size_mb, loadavg, parser, report, size, write_corpus
from _rss import RssSampler


def fetch_texts(d: Daemon) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset = None
    while True:
        page = d.call("drawers", {"limit": 1000, "offset": offset, "fields": ["text", "context", "ts"]})
        out.extend(page["drawers"])
        offset = page["next"]
        if offset is None:
            return out


def keyword_report(args: Any, st: dict[str, Any], ready_s: float, total_s: float, peak_mb: float,
                   sampler: RssSampler, load_start: list[float]) -> None:
    """``--keyword-only``: every file read, so every drawer keyword-searchable (the dense pass not awaited)."""
    exchanges = sum(int(s["exchanges"]) for s in st["sources"])
    result = {"exchanges": exchanges, "drawers": int(st["drawers"]), "ready_s": round(ready_s, 2),
              "keyword_done_s": round(total_s, 2), "exchanges_per_s": round(exchanges / total_s, 1),
              "keyword_pass_s": round(total_s - ready_s, 2), "peak_rss_mb": round(peak_mb, 1),
              "rss_growth_mb": sampler.growth()["VmRSS"], "anon_growth_mb": sampler.growth()["RssAnon"],
              "file_growth_mb": sampler.growth()["RssFile"], "rss_at_peak_by_process": sampler.at_peak(),
              "rss_growth_outside_builds_mb": sampler.growth_outside_builds(),
              "rss_at_peak_outside_builds_by_process": sampler.at_peak(builds=False),
              "dense_backlog_at_end": int(st["dense_backlog"]), "loadavg_start": load_start}
    report("backfill, keyword pass", [
        ("exchanges / drawers", f"{exchanges} / {result['drawers']}"),
        ("daemon ready (s)", result["ready_s"]),
        ("keyword-searchable all, from process start (s)", result["keyword_done_s"]),
        ("exchanges/s keyword pass (from start)", result["exchanges_per_s"]),
        ("peak RSS (MB, each process's own peak, summed)", result["peak_rss_mb"]),
        ("daemon + its processes, RSS growth past ready (MB)",
         f"{result['rss_growth_mb']} (anonymous {result['anon_growth_mb']}, file-backed {result['file_growth_mb']})"),
        ("  at the peak, by process (MB)", result["rss_at_peak_by_process"]),
        ("  growth of all but index builds (MB)", result["rss_growth_outside_builds_mb"]),
        ("  at that peak, by process (MB)", result["rss_at_peak_outside_builds_by_process"]),
        ("load at start", " ".join(f"{x:.2f}" for x in load_start)),
    ], result, args.json)


def main() -> None:
    ap = parser(__doc__ or "", 10_000, 16)
    ap.add_argument("--alone-sample", type=int, default=0,
                    help="time fastembed alone on an evenly spaced sample of this many texts (default: all)")
    ap.add_argument("--keyword-only", action="store_true",
                    help="stop once every file is read (the keyword pass): its time and rate, no dense figures")
    args = ap.parse_args()
    n = size(args)
    load_start = loadavg()
    with bench_env(keep=args.keep) as be:
        corpus = write_corpus(be.projects, n)
        d = Daemon(be).start(wait=False)
        try:
            ready_s = d.wait_ready()
            sampler = RssSampler(d).start()  # (the keyword pass's RSS, as bench/cursor_backfill.py measures it)
            t0 = d.started_at
            keyword_done: float | None = None
            max_backlog = 0
            next_note = time.monotonic() + 60.0
            while True:
                st = d.call("status")
                max_backlog = max(max_backlog, st["dense_backlog"])
                if time.monotonic() >= next_note:  # progress, so that a long run killed early still says something
                    next_note += 60.0
                    print(f"progress t={time.monotonic() - t0:.0f}s drawers={st['drawers']} "
                          f"dense_backlog={st['dense_backlog']} file_backlog={st['file_backlog']} "
                          f"rss_mb={d.rss_mb():.0f} load={loadavg()[0]:.2f}", flush=True)
                if keyword_done is None and st["scans"] >= 1 and st["file_backlog"] == 0:
                    keyword_done = time.monotonic() - t0
                    if args.keyword_only:
                        break
                if st["scans"] >= 1 and st["file_backlog"] == 0 and st["dense_backlog"] == 0:
                    break
                time.sleep(0.25 if n <= 1000 else 1.0)
            total_s = time.monotonic() - t0
            if args.keyword_only:
                sampler.stop()
                keyword_report(args, st, ready_s, total_s, d.peak_rss_mb(), sampler, load_start)
                return
            peak_mb = d.peak_rss_mb()
            time.sleep(2.0)
            idle_mb = d.rss_mb()
            idle_split = d.rss_split_mb()
            drawers = int(st["drawers"])
            exchanges = sum(int(s["exchanges"]) for s in st["sources"])
            rows = fetch_texts(d)
        finally:
            d.stop()
        disk_mb = dir_size_mb(be.data_dir)

        import numpy as np

        from mempald.config import EmbedSettings
        from mempald.embed.embedder import MAX_SEQ_LEN, Embedder
        from mempald.ingest.dense import COUNT_FACTOR

        emb = Embedder(models_dir=be.data_dir / "models")
        shipped = Embedder(models_dir=be.data_dir / "models", fuse=False)
        batch = EmbedSettings().batch_size
        rows.sort(key=lambda r: -float(r.get("ts") or 0.0))  # the dense queue's order: newest first
        texts = [emb.with_context(str(r.get("context") or ""), str(r["text"]), 250) for r in rows]
        lengths = emb.count_tokens_batch(texts)
        if 0 < args.alone_sample < len(texts):
            step = len(texts) / args.alone_sample
            texts = [texts[int(i * step)] for i in range(args.alone_sample)]
        over = sum(1 for x in lengths if x > MAX_SEQ_LEN - 2)
        for e in (emb, shipped):
            e.embed(texts[:8], batch_size=8)  # warm-up, like the daemon's first batch after load
        # Alternating slices of 256 texts, so that every path sees the same load on a shared machine: fastembed
        # alone (the shipped file, arrival order, batch 8: the baseline), the fused graph the same way, and the
        # dense pass's way (fused graph, by length, token budget).
        alone_s = fused_s = by_length_s = 0.0
        low = 1.0
        for j in range(0, len(texts), 256):
            part = texts[j : j + 256]
            t1 = time.monotonic()
            before = np.concatenate([shipped.embed(part[i : i + 8], batch_size=8) for i in range(0, len(part), 8)])
            alone_s += time.monotonic() - t1
            t1 = time.monotonic()
            for i in range(0, len(part), 8):
                emb.embed(part[i : i + 8], batch_size=8)
            fused_s += time.monotonic() - t1
            t1 = time.monotonic()
            after = emb.embed_by_length(part, max_count=batch * COUNT_FACTOR, token_budget=batch * MAX_SEQ_LEN)
            by_length_s += time.monotonic() - t1
            low = min(low, float(np.sum(before * after, axis=1).min()))  # both normalised

    result = {
        "n_exchanges_written": corpus.exchanges,
        "exchanges": exchanges,
        "drawers": drawers,
        "drawers_per_exchange": round(drawers / max(1, exchanges), 3),
        "ready_s": round(ready_s, 2),
        "keyword_done_s": round(keyword_done or 0.0, 2),
        "end_to_end_s": round(total_s, 2),
        "exchanges_per_s": round(exchanges / total_s, 2),
        "drawers_per_s": round(drawers / total_s, 2),
        "fastembed_alone_texts": len(texts),
        "fastembed_alone_s": round(alone_s, 2),
        "fastembed_drawers_per_s": round(len(texts) / alone_s, 2),
        "ratio": round((drawers / total_s) / (len(texts) / alone_s), 3),
        "fused_arrival_s": round(fused_s, 2),
        "by_length_s": round(by_length_s, 2),
        "fused_graph_speedup": round(alone_s / fused_s, 3),
        "by_length_speedup": round(fused_s / by_length_s, 3),
        "dense_pass_speedup": round(alone_s / by_length_s, 3),
        "min_cosine_vs_alone": round(low, 7),
        "peak_rss_mb": round(peak_mb, 1),
        "idle_rss_after_mb": round(idle_mb, 1),
        "idle_rss_after_split_mb": idle_split,
        "disk_mb": round(disk_mb, 1),
        "max_dense_backlog": max_backlog,
        "embedded_tokens_max": max(lengths, default=0),
        "embedded_tokens_mean": round(sum(lengths) / max(1, len(lengths)), 1),
        "texts_over_model_length": over,
        "loadavg_start": load_start,
    }
    report("backfill", [
        ("exchanges / drawers", f"{exchanges} / {drawers}"),
        ("daemon ready (s)", result["ready_s"]),
        ("keyword-searchable all (s)", result["keyword_done_s"]),
        ("end to end (s)", result["end_to_end_s"]),
        ("exchanges/s end to end", result["exchanges_per_s"]),
        ("drawers/s end to end", result["drawers_per_s"]),
        ("fastembed alone texts/s", f"{result['fastembed_drawers_per_s']} (on {len(texts)} of the texts)"),
        ("ratio to fastembed alone (target >= 1.4)", result["ratio"]),
        ("dense pass / fastembed alone, same texts", f"{result['dense_pass_speedup']}x (fused graph "
         f"{result['fused_graph_speedup']}x, then by length {result['by_length_speedup']}x)"),
        ("lowest cosine, dense pass vs fastembed alone", result["min_cosine_vs_alone"]),
        ("peak RSS / idle RSS after (MB)", f"{result['peak_rss_mb']} / {result['idle_rss_after_mb']}"),
        ("disk (MB)", result["disk_mb"]),
        ("embedded tokens mean / max", f"{result['embedded_tokens_mean']} / {result['embedded_tokens_max']}"),
        ("texts longer than the model reads", over),
        ("load at start", " ".join(f"{x:.2f}" for x in load_start)),
    ], result, args.json)


if __name__ == "__main__":
    main()
