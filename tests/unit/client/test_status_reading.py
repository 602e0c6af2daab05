"""``mempal status`` while an editor's database is backfilled: a line under its source says how far, and the
daemon is not "caught up" until it is read whole (issue 43)."""

from __future__ import annotations

import time
from typing import Any

from mempal.cli import render
from mempal.cli.progress import caught_up, status_line

PATH = "/home/dev/.config/Cursor/User/globalStorage/state.vscdb"


def _status(reading: list[dict[str, Any]]) -> dict[str, Any]:
    return {"drawers": 1200, "dense_backlog": 0, "file_backlog": 0, "scans": 1, "wings": {}, "rooms": {},
            "sources": [{"key": "cursor", "mode": "conversations", "path": "/home/dev/.config/Cursor/User",
                         "files": 1, "exchanges": 900, "backlog_files": 0, "backlog_bytes": 0, "reading": reading}]}


def test_a_database_being_read_has_its_progress_line() -> None:
    st = _status([{"path": PATH, "done": 120_000, "of": 250_000, "exchanges": 900, "percent": 48.0,
                   "started": time.time() - 65}])
    text = render.status(st)
    line = next(x for x in text.splitlines() if "reading" in x)
    assert line.strip().startswith("reading globalStorage/state.vscdb: 48 % of its rows (120000 of 250000)")
    assert "900 exchanges stored" in line and ("for 65 s" in line or "for 66 s" in line)
    assert not caught_up(st)  # the first scan done and nothing queued, but the store is not read whole yet
    assert "reading globalStorage/state.vscdb: 48 %" in status_line(st)


def test_once_read_whole_no_line_and_caught_up() -> None:
    st = _status([])
    assert "reading" not in render.status(st) and caught_up(st)
    assert "reading" not in status_line(st)
