"""The daemon limits the C allocator's arenas for itself and the processes it starts (``mempald.runtime.malloc``:
a reading thread's fragmented arena grew the daemon by 100 MB on a 1 GB Cursor store); a value the user set is
theirs. Read from a real daemon's store process's environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import Daemon

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas: Linux only")


def store_env(daemon: Daemon) -> dict[str, str]:
    pids = daemon.wait_for(lambda: daemon.call("status")["index"]["store_pids"])
    raw = Path(f"/proc/{pids[0]}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def test_the_store_process_starts_with_two_arenas(daemon: Daemon, home: Path) -> None:
    daemon.env.pop("MALLOC_ARENA_MAX", None)
    daemon.start()
    assert daemon.proc is not None
    assert "MALLOC_ARENA_MAX" not in Path(f"/proc/{daemon.proc.pid}/environ").read_text()  # set by the daemon
    assert store_env(daemon)["MALLOC_ARENA_MAX"] == "2"


def test_a_limit_the_user_set_is_kept(daemon: Daemon, home: Path) -> None:
    daemon.start(extra_env={"MALLOC_ARENA_MAX": "4"})
    assert store_env(daemon)["MALLOC_ARENA_MAX"] == "4"
