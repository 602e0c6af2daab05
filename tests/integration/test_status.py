"""``status`` while many files are read at once: answered from figures a background refresh keeps (never
waiting for the store behind the ingest's writes), moving with the ingest, and exact once nothing is queued."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.integration.test_skeleton import assistant_line, user_line

FILES = 1000


def _exchanges(st: dict[str, Any]) -> int:
    return sum(int(s["exchanges"]) for s in st["sources"])


@pytest.mark.timeout(600)
def test_status_moves_with_a_burst_of_files_and_is_exact_once_they_are_read(daemon: Daemon, home: Path) -> None:
    daemon.start()
    daemon.idle()
    project = home / ".claude" / "projects" / "-home-u-proj"
    project.mkdir()
    for i in range(FILES):
        sid = f"00000000-0000-4000-8000-{i:012d}"
        ts = f"2026-03-01T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
        lines = [user_line(sid, "/home/u/proj", f"question {i}: how is the parser of module {i} wired?",
                           f"u-{i}", ts),
                 assistant_line(sid, "/home/u/proj", f"Module {i} reads its config first, then the parser.",
                                f"a-{i}", f"u-{i}", ts)]
        (project / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")

    seen_while_reading: set[int] = set()
    deadline = time.monotonic() + 500
    while time.monotonic() < deadline:
        st: dict[str, Any] = daemon.call("status")
        if st["file_backlog"]:
            seen_while_reading.add(_exchanges(st))
        elif st["scans"] >= 1 and _exchanges(st) >= FILES:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the {FILES} files were not all read in time: {st}")
    # the figures served while files were read moved with the ingest (refreshed every second, not frozen)
    assert len(seen_while_reading) >= 2, seen_while_reading
    assert max(seen_while_reading) <= FILES
    # once nothing is queued, every figure is exact
    st = daemon.call("status")
    assert _exchanges(st) == FILES
    assert st["drawers"] >= FILES
    assert all(s["backlog_files"] == 0 for s in st["sources"])
    assert sum(s["files"] for s in st["sources"]) == FILES
