"""Freshness for OpenCode: how long after OpenCode writes a new prompt ``search`` finds it by keyword.

    python bench/freshness_opencode.py [--n 20] [--smoke] [--json PATH] [--keep]

The home is laid out as OpenCode lays it out (``tests/fixtures/opencode``): its storage folder of small JSON
files (OpenCode before 1.2) and its SQLite database (1.2+, written in WAL mode while the daemon reads it), both
found by default. Each probe writes one prompt with a unique word as OpenCode does (a message file and its part
file; a message row and its part row), then searches every 25 ms until the prompt is found. Target (issue 42):
p95 under 2 s.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from _harness import REPO, Daemon, bench_env, loadavg, parser, report, size, summary, wait_idle

sys.path.insert(0, str(REPO))
# the samples, in OpenCode's shape
from tests.unit.normalize.opencode_samples import STORAGE, build_db

POLL_S = 0.025
GIVE_UP_S = 30.0
SESSION = "ses_9ce10518002fdaJPZr0JIDRobc"


def _write(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2))


def write_files(storage: Path, i: int, word: str) -> str:
    stamp = int(time.time() * 1000)
    mid, pid = f"msg_f{stamp:011x}{i:04d}Bench", f"prt_f{stamp:011x}{i:04d}Bench"
    _write(storage / "message" / SESSION / f"{mid}.json", {
        "id": mid, "sessionID": SESSION, "role": "user", "time": {"created": stamp}, "agent": "build",
        "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}})
    _write(storage / "part" / mid / f"{pid}.json", {
        "id": pid, "sessionID": SESSION, "messageID": mid, "type": "text",
        "text": f"Why does the {word} queue stall after a deploy?", "time": {"start": stamp, "end": stamp}})
    return mid


def write_rows(db: Path, i: int, word: str) -> str:
    stamp = int(time.time() * 1000)
    mid, pid = f"msg_d{stamp:011x}{i:04d}Bench", f"prt_d{stamp:011x}{i:04d}Bench"
    con = sqlite3.connect(db)
    con.execute("INSERT INTO message VALUES (?,?,?,?,?)", (mid, SESSION, stamp, stamp, json.dumps(
        {"role": "user", "time": {"created": stamp}, "agent": "build"})))
    con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (pid, mid, SESSION, stamp, stamp, json.dumps(
        {"type": "text", "text": f"Why does the {word} queue stall after a deploy?"})))
    con.commit()
    con.close()
    return mid


def probe(d: Daemon, write: Any, target: Path, i: int) -> float | None:
    word = f"zq{uuid.uuid4().hex[:10]}"
    key = write(target, i, word)
    t0 = time.monotonic()
    while time.monotonic() - t0 < GIVE_UP_S:
        if any(h.get("exchange_key") == key for h in d.call("search", {"query": word, "limit": 10})["hits"]):
            return time.monotonic() - t0
        time.sleep(POLL_S)
    return None


def main() -> None:
    ap = parser(__doc__ or "", 20, 3)
    args = ap.parse_args()
    n = size(args)
    load_start = loadavg()
    out: dict[str, Any] = {"n": n, "loadavg_start": load_start}
    with bench_env(keep=args.keep) as be:
        data = be.home / ".local" / "share" / "opencode"
        shutil.copytree(STORAGE, data / "storage")
        data.mkdir(parents=True, exist_ok=True)
        build_db(STORAGE, data / "opencode.db")
        with Daemon(be).start() as d:
            wait_idle(d, 240)
            for name, write, target in (("storage", write_files, data / "storage"),
                                        ("database", write_rows, data / "opencode.db")):
                took = [probe(d, write, target, i) for i in range(n)]
                ms = [t * 1000 for t in took if t is not None]
                out[name] = {"keyword_ms": summary(ms), "missed": sum(1 for t in took if t is None)}
    s, b = out["storage"], out["database"]
    report("freshness_opencode", [
        ("prompts per store", n),
        ("storage folder keyword p50 / p95 (ms)",
         f"{s['keyword_ms']['p50']} / {s['keyword_ms']['p95']}  (target p95 < 2000)"),
        ("database keyword p50 / p95 (ms)",
         f"{b['keyword_ms']['p50']} / {b['keyword_ms']['p95']}  (target p95 < 2000)"),
        ("missed (storage / database)", f"{s['missed']} / {b['missed']}"),
        ("load at start", " ".join(f"{x:.2f}" for x in load_start)),
    ], out, args.json)


if __name__ == "__main__":
    main()
