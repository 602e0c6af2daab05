"""Store errors: a failing write (a full disk, simulated with ``MEMPAL_FAULTS``, see ``mempald.store.faults``) is
retried with backoff and shown as a status warning; the cursor does not move; nothing is marked done that is
not stored; once the disk has room again everything lands exactly once."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mempald.normalize.claude_code import parse_lines
from tests.conftest import Daemon
from tests.integration.test_crash import keyword_idle, no_duplicates, points
from tests.integration.test_skeleton import assistant_line, lines_of, user_line

SESSION = "5707e000-0000-4000-8000-00000000d15c"


def write_exchanges(path: Path, start: int, n: int) -> None:
    with path.open("a") as fh:
        for i in range(start, start + n):
            ts = f"2026-06-01T10:{i % 60:02d}:00.000Z"
            fh.write(user_line(SESSION, "/home/u/disk", f"How is the tape drive {i} doing today?", f"du-{i}", ts)
                     + "\n")
            fh.write(assistant_line(SESSION, "/home/u/disk", f"Tape drive {i} is spinning. It reports no errors.",
                                    f"da-{i}", f"du-{i}", ts) + "\n")


def source(st: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in st["sources"] if s["key"].startswith("claude_code:"))
    return found


def log_events(d: Daemon, name: str) -> list[dict[str, Any]]:
    out = []
    for line in d.logs().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("event") == name:
            out.append(rec)
    return out


def cursor_offset(d: Daemon, transcript: Path) -> int:
    """The file's cursor as the daemon last committed it (read-only look at the state database)."""
    db = Path(d.env["MEMPAL_DATA_DIR"]) / "state.sqlite3"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        row = con.execute("SELECT offset FROM cursors WHERE path = ?", (str(transcript),)).fetchone()
    finally:
        con.close()
    return int(row[0]) if row else -1


def assert_exactly_once(d: Daemon, transcript: Path) -> int:
    by_key = no_duplicates(points(d))
    expected = {ex.key for ex in parse_lines(lines_of(transcript))}
    assert set(by_key) == expected
    assert all(len(v) == 1 for v in by_key.values())
    return len(expected)


@pytest.mark.timeout(240)
def test_disk_full_retries_with_backoff_and_the_cursor_waits(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-disk"
    proj.mkdir(parents=True)
    transcript = proj / f"{SESSION}.jsonl"
    write_exchanges(transcript, 0, 10)
    full = tmp_path / "disk-is-full"
    daemon.start(extra_env={"MEMPAL_FAULTS": f"upsert_fail_while={full}"})
    st = keyword_idle(daemon, 120)
    assert st["drawers"] == 10 and not st["warnings"]
    before = source(st)
    assert before["exchanges"] == 10

    offset_before = cursor_offset(daemon, transcript)
    assert offset_before > 0
    # The disk fills up; the user keeps talking.
    full.touch()
    write_exchanges(transcript, 10, 15)
    st = daemon.wait_for(lambda: (s := daemon.call("status"))["warnings"] and s, timeout=60)
    assert any("store write failing" in w and "No space left on device" in w for w in st["warnings"])
    # Let a few retries pass; status keeps answering, and nothing moves while the store refuses writes.
    daemon.wait_for(lambda: len(log_events(daemon, "store_write_failed")) >= 3, timeout=60)
    st = daemon.call("status")
    src = source(st)
    assert st["drawers"] == 10
    assert src["exchanges"] == before["exchanges"], "the cursor advanced past exchanges that were not stored"
    assert st["file_backlog"] >= 1, "the file must stay queued until its exchanges are stored"
    assert cursor_offset(daemon, transcript) == offset_before, "the cursor moved past unstored exchanges"
    assert st["warnings"]
    delays = [r["retry_in_s"] for r in log_events(daemon, "store_write_failed")]
    assert delays[:3] == [0.5, 1.0, 2.0], f"expected exponential backoff, got {delays}"

    # Room again: the retry goes through, the warning clears, every exchange is there once.
    full.unlink()
    st = daemon.wait_for(lambda: (s := daemon.call("status"))["drawers"] == 25 and not s["warnings"] and s,
                         timeout=90)
    keyword_idle(daemon, 60)
    assert source(daemon.call("status"))["exchanges"] == 25
    assert assert_exactly_once(daemon, transcript) == 25
    assert log_events(daemon, "store_recovered")
    print("RELIABILITY store_errors " + json.dumps({"faults_injected": len(log_events(daemon, "fault_injected"))}))


@pytest.mark.timeout(240)
def test_failed_upserts_and_dense_writes_land_exactly_once(daemon: Daemon, home: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-disk"
    proj.mkdir(parents=True)
    transcript = proj / f"{SESSION}.jsonl"
    write_exchanges(transcript, 0, 12)
    daemon.start(extra_env={"MEMPAL_FAULTS": "upsert_fail=3,set_dense_fail=2"})
    st = daemon.idle(timeout=180)  # keyword and dense stages both done
    assert st["drawers"] == 12 and not st["warnings"] and st["dense_backlog"] == 0
    assert assert_exactly_once(daemon, transcript) == 12
    assert len(log_events(daemon, "fault_injected")) == 5
    # The dense vectors that failed were queued again: hybrid search finds every drawer's neighbours.
    hits = daemon.call("search", {"query": "tape drive 7 spinning", "limit": 3})["hits"]
    assert hits and hits[0]["exchange_key"] == "du-7"


def test_bad_fault_spec_is_a_clear_start_failure(daemon: Daemon) -> None:
    daemon.start(wait=False, extra_env={"MEMPAL_FAULTS": "explode=yes"})
    assert daemon.proc is not None
    assert daemon.proc.wait(60) == 3
    assert "unknown rule" in daemon.logs()
