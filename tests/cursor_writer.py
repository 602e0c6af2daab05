"""An editor writing its ``state.vscdb`` as Cursor does while it streams an answer: a commit every 50 ms, run as a
process of its own beside mempald (tests and ``bench/cursor_backfill.py``).

    python tests/cursor_writer.py DB JOURNAL_MODE (SECONDS | STOP_FILE)

Prints ``ready``, then, when done, one JSON line: ``commits``, ``failures`` (a commit that could not be made within
5 s), ``max_lock_wait`` (the longest a commit waited on another connection's lock: the only way a reader can hold
a writer back; the connection's own busy handler is off and the waits are timed here) and ``max_commit`` (the
longest commit, wall clock, CPU scheduling included).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time

GIVE_UP_S = 5.0


def _step(db: sqlite3.Connection, sql: str, params: tuple[object, ...] = ()) -> float:
    """Run ``sql``, retrying while the database is busy; the time spent waiting on the lock."""
    waited = 0.0
    while True:
        try:
            db.execute(sql, params)
            return waited
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if waited > GIVE_UP_S:
                raise
            t0 = time.monotonic()
            time.sleep(0.001)
            waited += time.monotonic() - t0


def main(argv: list[str]) -> int:
    path, mode, until = argv[0], argv[1], argv[2]
    db = sqlite3.connect(path, timeout=0, isolation_level=None)
    db.execute(f"PRAGMA journal_mode={mode}")
    db.execute("PRAGMA synchronous=NORMAL")  # what a commit waits for is the lock, not the disk
    deadline = time.monotonic() + float(until) if until.replace(".", "", 1).isdigit() else None
    lock_waits: list[float] = [0.0]
    commits: list[float] = [0.0]
    failures = n = 0
    print("ready", flush=True)
    while (deadline is None and not os.path.exists(until)) or (deadline is not None and time.monotonic() < deadline):
        n += 1
        value = json.dumps({"_v": 3, "type": 2, "bubbleId": f"b{n % 40}", "n": n, "text": "streaming " * 2000,
                            "again": n})
        t0 = time.monotonic()
        try:
            waited = _step(db, "BEGIN IMMEDIATE")
            db.execute("INSERT INTO cursorDiskKV (key, value) VALUES (?, ?)", (f"bubbleId:c-busy:b{n % 40}", value))
            db.execute("INSERT INTO ItemTable (key, value) VALUES (?, ?)", ("workbench.state", json.dumps({"n": n})))
            waited += _step(db, "COMMIT")
            lock_waits.append(waited)
        except sqlite3.Error:
            failures += 1
            if db.in_transaction:
                db.execute("ROLLBACK")
        commits.append(time.monotonic() - t0)
        time.sleep(0.05)
    print(json.dumps({"commits": n, "failures": failures, "max_lock_wait": max(lock_waits),
                      "max_commit": max(commits)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
