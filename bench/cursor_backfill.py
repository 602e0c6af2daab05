"""Cursor backfill: a ``state.vscdb`` in the real schema read whole, incrementally, while Cursor keeps writing.

    python bench/cursor_backfill.py [--n 5000] [--exchanges 10] [--pad-kb 0] [--smoke] [--json PATH] [--keep]

1. Builds ``~/.config/Cursor/User`` in a temp HOME: the global ``state.vscdb`` (``ItemTable``, ``cursorDiskKV``)
   with N conversations (``composerData:<id>`` headers, ``bubbleId:<id>:<bubble>`` messages: prompts, answers,
   tool calls whose ``toolFormerData.result`` carries ``--pad-kb`` of output, thinking; prompts and answers of
   the same lengths as ``bench/backfill.py``'s Claude Code corpus, so the rates per exchange compare) and one
   workspace database naming its folder, WAL mode as Cursor keeps it. ``--n 5000 --pad-kb 20`` makes ~1 GB.
2. ``read``: the format's own read (``cursor.gather`` through ``sqlite_ro``, batch after batch until ``since``
   stops moving, then ``parse``) while a writer process commits a bubble every 50 ms: exchanges/s, this
   process's peak RSS growth, and the writer's max commit time (the "never disturb the editor" figure).
3. ``follow``: one more exchange written by the writer; the time until a read from the last context returns it.

``--daemon``: the real ``python -m mempald`` finds the store at Cursor's place in the temp HOME and reads it;
polled through ``status`` until every unit is read (every drawer keyword-searchable): exchanges/s from process
start and the daemon's RSS growth (VmHWM over its RSS once ready); then a new exchange written by the writer
process, timed until ``search`` finds it. Run ``bench/backfill.py --keyword-only --n <exchanges>`` in turn for
the Claude Code figure on the same machine.
"""

from __future__ import annotations

import json
import random
import resource
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _harness import REPO, Daemon, bench_env, loadavg, paragraph, parser, report, size
from _rss import RssSampler

sys.path.insert(0, str(REPO))

from mempal.cli.render import reading_line
from mempald.normalize import cursor
from mempald.normalize.model import CursorContext
from mempald.sources.look import LOOK
from tests.cursor_samples import create_db, put

T0 = 1766691308486
WRITER = REPO / "tests" / "cursor_writer.py"  # Cursor streaming: a commit every 50 ms, its lock waits timed


def build(user: Path, n: int, exchanges: int, pad_kb: int, seed: int = 7) -> tuple[Path, int]:
    rnd = random.Random(seed)
    db_path = user / "globalStorage" / "state.vscdb"
    db = create_db(db_path)
    db.execute("BEGIN")
    pad = "x" * (pad_kb * 1024)
    total = 0
    for c in range(n):
        cid = f"c{c:06d}-4e55-9d61-0f3c2a7b8e11"
        heads: list[dict[str, Any]] = []
        rows: list[tuple[str, str]] = []
        for e in range(exchanges):
            u, a, t = f"u{e}", f"a{e}", f"t{e}"
            heads += [{"bubbleId": u, "type": 1}, {"bubbleId": t, "type": 2}, {"bubbleId": a, "type": 2}]
            rows.append((f"bubbleId:{cid}:{u}", json.dumps({"_v": 3, "type": 1, "bubbleId": u,
                                                             "text": paragraph(rnd, rnd.choice((8, 15, 30, 60)))})))
            rows.append((f"bubbleId:{cid}:{t}", json.dumps({
                "_v": 3, "type": 2, "bubbleId": t, "text": "", "thinking": {"text": paragraph(rnd, 30)},
                "toolFormerData": {"name": "read_file", "status": "completed",
                                   "rawArgs": json.dumps({"target_file": f"src/m{e}.py"}), "result": pad}})))
            rows.append((f"bubbleId:{cid}:{a}", json.dumps({
                "_v": 3, "type": 2, "bubbleId": a,
                "text": paragraph(rnd, rnd.choice((30, 60, 100, 150, 220)))})))
            total += 1
        db.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", rows)
        put(db, f"composerData:{cid}", {"_v": 10, "composerId": cid, "name": f"chat {c}", "status": "completed",
                                        "createdAt": T0 + c, "lastUpdatedAt": T0 + c,
                                        "fullConversationHeadersOnly": heads})
    db.execute("COMMIT")
    db.close()
    return db_path, total


def read_all(db_path: Path, ctx: CursorContext) -> tuple[int, CursorContext, int]:
    """Every batch until ``since`` stops moving: exchanges read, the last context, batches."""
    look = LOOK
    exchanges, batches = 0, 0
    while True:
        parsed = cursor.parse(cursor.gather(db_path, ctx, look))
        batches += 1
        exchanges += len(parsed.exchanges)
        if parsed.context.since == ctx.since:
            return exchanges, parsed.context, batches
        ctx = parsed.context


def add_conversation(db_path: Path, n: int, prompt: str, answer: str) -> None:
    """Cursor adds one conversation ``cnew`` (a prompt and its answer) to the store, as the follow step's writer."""
    db = sqlite3.connect(db_path, timeout=5.0, isolation_level=None)
    put(db, "bubbleId:cnew:u0", {"_v": 3, "type": 1, "bubbleId": "u0", "text": prompt})
    put(db, "bubbleId:cnew:a0", {"_v": 3, "type": 2, "bubbleId": "a0", "text": answer})
    put(db, "composerData:cnew", {"_v": 10, "composerId": "cnew", "createdAt": T0 + n + 10,
                                  "lastUpdatedAt": T0 + n + 10, "status": "completed",
                                  "fullConversationHeadersOnly": [{"bubbleId": "u0", "type": 1},
                                                                  {"bubbleId": "a0", "type": 2}]})
    db.close()


def daemon_run(args: Any, n: int, load_start: list[float]) -> None:
    with bench_env(keep=args.keep) as be:
        user = be.home / ".config" / "Cursor" / "User"
        db_path, total = build(user, n, args.exchanges, args.pad_kb)
        db_mb = sum(p.stat().st_size for p in db_path.parent.iterdir()) / 2**20
        stop = be.root / "stop-writer"
        writer = subprocess.Popen([sys.executable, str(WRITER), str(db_path), "wal", str(stop)],
                                  stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        d = Daemon(be).start(wait=False)
        try:
            ready_s = d.wait_ready()
            ready_mb = d.rss_mb()
            t0 = d.started_at
            said: list[str] = []  # ``status``'s progress line for the store, mid-way
            with RssSampler(d) as sampler:
                while True:
                    st = d.call("status")
                    lines = [reading_line(r) for src in st["sources"] for r in src.get("reading") or []]
                    if lines and (not said or (len(said) == 1 and "% of its rows" in lines[0] and
                                  float(lines[0].split(": ", 1)[1].split(" %")[0]) >= 40)):
                        said.append(lines[0])  # the first one, and one past 40 %
                    if st["scans"] >= 1 and st["file_backlog"] == 0 and int(st["drawers"]) >= total \
                            and not lines:
                        break
                    time.sleep(0.25)
                done_s = time.monotonic() - t0
                peak_mb = d.peak_rss_mb()
                add_conversation(db_path, n, "the flamingo cache question", "evict the flamingo entries")
                t1 = time.monotonic()
                while not d.call("search", {"query": "flamingo cache question", "session_id": ["cnew"]})["hits"]:
                    time.sleep(0.02)
                follow_s = time.monotonic() - t1
                end = time.monotonic() + 120.0  # an index build started by the backfill: its peak counts too
                while d.call("status").get("index", {}).get("state") == "building" and time.monotonic() < end:
                    time.sleep(0.25)
        finally:
            d.stop()
            stop.touch()
            out, _ = writer.communicate(timeout=60)
        wr = json.loads(out.strip().splitlines()[-1])
    result = {"conversations": n, "exchanges": total, "db_mb": round(db_mb, 1), "ready_s": round(ready_s, 2),
              "keyword_done_s": round(done_s, 2), "exchanges_per_s": round(total / done_s, 1),
              "rss_growth_mb": sampler.growth()["VmRSS"], "anon_growth_mb": sampler.growth()["RssAnon"],
              "file_growth_mb": sampler.growth()["RssFile"], "ready_rss_mb": round(ready_mb, 1),
              "peak_rss_mb": round(sampler.peak["VmRSS"], 1), "sum_of_process_peaks_mb": round(peak_mb, 1),
              "rss_at_peak_by_process": sampler.at_peak(),
              "rss_growth_outside_builds_mb": sampler.growth_outside_builds(),
              "rss_at_peak_outside_builds_by_process": sampler.at_peak(builds=False),
              "follow_s": round(follow_s, 2), "writer_max_lock_wait_ms": round(wr["max_lock_wait"] * 1000, 2),
              "writer_max_commit_ms": round(wr["max_commit"] * 1000, 2), "loadavg_start": load_start,
              "status_said": said}
    report("cursor backfill (daemon, keyword pass)", [
        ("conversations / exchanges", f"{n} / {total}"),
        ("database (MB)", result["db_mb"]),
        ("keyword-searchable all, from process start (s)", result["keyword_done_s"]),
        ("exchanges/s (from start)", result["exchanges_per_s"]),
        ("daemon + its processes, RSS growth past ready (MB)",
         f"{result['rss_growth_mb']} (anonymous {result['anon_growth_mb']}, file-backed {result['file_growth_mb']})"),
        ("  peak RSS / at ready (MB)", f"{result['peak_rss_mb']} / {result['ready_rss_mb']}"),
        ("  at the peak, by process (MB)", result["rss_at_peak_by_process"]),
        ("  growth of all but index builds (MB)", result["rss_growth_outside_builds_mb"]),
        ("  at that peak, by process (MB)", result["rss_at_peak_outside_builds_by_process"]),
        ("a new exchange searchable in (s)", result["follow_s"]),
        ("Cursor's longest lock wait / commit (ms)",
         f"{result['writer_max_lock_wait_ms']} / {result['writer_max_commit_ms']}"),
        *(("status said", line) for line in said),
    ], result, args.json)


def main() -> None:
    ap = parser(__doc__ or "", 5000, 40)
    ap.add_argument("--exchanges", type=int, default=10, help="exchanges per conversation")
    ap.add_argument("--pad-kb", type=int, default=0, help="tool output carried by each tool-call message (KB)")
    ap.add_argument("--daemon", action="store_true", help="the real daemon reads the store (keyword pass)")
    args = ap.parse_args()
    n = size(args)
    load_start = loadavg()
    if args.daemon:
        daemon_run(args, n, load_start)
        return
    with bench_env(keep=args.keep) as be:
        user = be.home / ".config" / "Cursor" / "User"
        t0 = time.monotonic()
        db_path, total = build(user, n, args.exchanges, args.pad_kb)
        build_s = time.monotonic() - t0
        db_mb = sum(p.stat().st_size for p in db_path.parent.iterdir()) / 2**20
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        stop = be.root / "stop-writer"
        writer = subprocess.Popen([sys.executable, str(WRITER), str(db_path), "wal", str(stop)],
                                  stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        t1 = time.monotonic()
        read, ctx, batches = read_all(db_path, CursorContext(format="cursor"))
        read_s = time.monotonic() - t1
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        # follow: Cursor adds a conversation; the next read from the last context finds it
        add_conversation(db_path, n, "a new question", "a new answer")
        t2 = time.monotonic()
        parsed = cursor.parse(cursor.gather(db_path, ctx, LOOK))
        follow_ms = (time.monotonic() - t2) * 1000
        assert any(e.session_id == "cnew" for e in parsed.exchanges)
        stop.touch()
        out, _ = writer.communicate(timeout=30)
        lines = out.strip().splitlines()
        wr = json.loads(lines[-1]) if lines else {}
    result = {"conversations": n, "exchanges": total, "exchanges_read": read, "db_mb": round(db_mb, 1),
              "build_s": round(build_s, 1), "read_s": round(read_s, 2), "batches": batches,
              "exchanges_per_s": round(read / read_s, 1) if read_s else None,
              "rss_growth_mb": round(rss1 - rss0, 1), "follow_ms": round(follow_ms, 1),
              "writer_max_lock_wait_ms": round(float(wr.get("max_lock_wait", 0)) * 1000, 2),
              "writer_max_commit_ms": round(float(wr.get("max_commit", 0)) * 1000, 2),
              "writer_commits": wr.get("commits"),
              "loadavg_start": load_start}
    report("cursor backfill (format read)", [
        ("conversations / exchanges", f"{n} / {total}"),
        ("database (MB)", result["db_mb"]),
        ("read whole (s), batches", f"{result['read_s']}, {batches}"),
        ("exchanges/s", result["exchanges_per_s"]),
        ("peak RSS growth of the reader (MB)", result["rss_growth_mb"]),
        ("a new conversation read in (ms)", result["follow_ms"]),
        ("Cursor's longest lock wait while read (ms)", result["writer_max_lock_wait_ms"]),
        ("Cursor's longest commit while read (ms)", result["writer_max_commit_ms"]),
    ], result, args.json)


if __name__ == "__main__":
    main()
