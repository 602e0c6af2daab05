"""Lost events: filesystem events are hints, the reconcile scan is the truth.

With event delivery switched off (``ingest.watch_events = false``) or the event queue overflowing, the
reconcile pass (on start and every ``ingest.reconcile_interval_s``) still finds every change. Watching a
large tree (20,000 folders) takes seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from mempald.intake.watch import Watcher
from mempald.normalize.claude_code import parse_lines
from tests.conftest import Daemon
from tests.integration.test_crash import keyword_idle, no_duplicates, points
from tests.integration.test_skeleton import assistant_line, lines_of, user_line


def session_file(path: Path, sid: str, start: int, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        for i in range(start, start + n):
            ts = f"2026-07-01T09:{i % 60:02d}:00.000Z"
            fh.write(user_line(sid, "/home/u/lost", f"Where did event {i} of {sid[:8]} go?", f"{sid[:8]}-u{i}", ts)
                     + "\n")
            fh.write(assistant_line(sid, "/home/u/lost", f"Event {i} was found by the scan.", f"{sid[:8]}-a{i}",
                                    f"{sid[:8]}-u{i}", ts) + "\n")


def expected_keys(root: Path) -> set[str]:
    return {ex.key for f in root.rglob("*.jsonl") for ex in parse_lines(lines_of(f))}


def stored_keys(d: Daemon) -> set[str]:
    return set(no_duplicates(points(d)))


def log_has(d: Daemon, event: str) -> bool:
    for line in d.logs().splitlines():
        try:
            if json.loads(line).get("event") == event:
                return True
        except (ValueError, AttributeError):
            continue
    return False


def all_found(d: Daemon, root: Path) -> Any:
    def check() -> bool:
        return stored_keys(d) == expected_keys(root)

    return d.wait_for(check, timeout=90, interval=0.5)


@pytest.mark.timeout(240)
def test_changes_made_while_down_are_found_on_start(daemon: Daemon, home: Path) -> None:
    projects = home / ".claude" / "projects"
    a = projects / "-home-u-lost" / "aaaaaaaa-0000-4000-8000-000000000001.jsonl"
    session_file(a, a.stem, 0, 5)
    env = {"MEMPAL_INGEST_WATCH_EVENTS": "false", "MEMPAL_INGEST_RECONCILE_INTERVAL_S": "3600"}
    daemon.start(extra_env=env)
    keyword_idle(daemon, 90)
    assert stored_keys(daemon) == expected_keys(projects)
    assert daemon.stop() == 0

    # While the daemon is down: an append, a new file, a new project folder, a file moved in.
    session_file(a, a.stem, 5, 3)
    session_file(projects / "-home-u-lost" / "bbbbbbbb-0000-4000-8000-000000000002.jsonl",
                 "bbbbbbbb-0000-4000-8000-000000000002", 0, 4)
    session_file(projects / "-home-u-new" / "cccccccc-0000-4000-8000-000000000003.jsonl",
                 "cccccccc-0000-4000-8000-000000000003", 0, 2)
    outside = home / "dddddddd-0000-4000-8000-000000000004.jsonl"
    session_file(outside, outside.stem, 0, 2)
    shutil.move(outside, projects / "-home-u-new" / outside.name)

    daemon.start(extra_env=env)
    all_found(daemon, projects)
    keyword_idle(daemon, 90)
    assert stored_keys(daemon) == expected_keys(projects)
    assert log_has(daemon, "watch_events_off")


@pytest.mark.timeout(240)
def test_periodic_reconcile_finds_changes_without_any_event(daemon: Daemon, home: Path) -> None:
    projects = home / ".claude" / "projects"
    a = projects / "-home-u-lost" / "aaaaaaaa-0000-4000-8000-000000000001.jsonl"
    session_file(a, a.stem, 0, 3)
    daemon.start(extra_env={"MEMPAL_INGEST_WATCH_EVENTS": "false", "MEMPAL_INGEST_RECONCILE_INTERVAL_S": "1"})
    keyword_idle(daemon, 90)
    scans = daemon.call("status")["scans"]

    session_file(a, a.stem, 3, 4)  # append
    for k in range(5):  # new files in new folders
        sid = f"eeeeee0{k}-0000-4000-8000-00000000000{k}"
        session_file(projects / f"-home-u-p{k}" / f"{sid}.jsonl", sid, 0, 2)
    all_found(daemon, projects)
    assert daemon.call("status")["scans"] > scans
    # Appending in place (same size class, same inode) is noticed too: size and mtime differ.
    session_file(a, a.stem, 7, 1)
    all_found(daemon, projects)


@pytest.mark.timeout(240)
def test_event_queue_overflow_falls_back_to_a_reconcile(daemon: Daemon, home: Path) -> None:
    projects = home / ".claude" / "projects"
    first = projects / "-home-u-lost" / "aaaaaaaa-0000-4000-8000-000000000001.jsonl"
    session_file(first, first.stem, 0, 1)
    # A one-slot event queue and no periodic scan: only events or the overflow reconcile can find files.
    daemon.start(extra_env={"MEMPAL_INGEST_EVENT_BUFFER": "1", "MEMPAL_INGEST_RECONCILE_INTERVAL_S": "3600",
                            "MEMPAL_INGEST_DEBOUNCE_MS": "20"})
    keyword_idle(daemon, 90)
    # An event storm: many folders and files at once, in several threads.
    def burst(k: int) -> None:
        for j in range(40):
            sid = f"{k:04x}{j:04x}-0000-4000-8000-{k:06x}{j:06x}"
            session_file(projects / f"-home-u-storm{k}-{j % 8}" / f"{sid}.jsonl", sid, 0, 1)

    threads = [threading.Thread(target=burst, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    all_found(daemon, projects)
    overflowed = log_has(daemon, "watch_overflow")
    print(f"RELIABILITY lost_events overflow_seen={overflowed} files={len(list(projects.rglob('*.jsonl')))}")


@pytest.mark.anyio
@pytest.mark.timeout(240)
async def test_overflowing_bridge_sets_the_reconcile_flag(tmp_path: Path) -> None:
    """Deterministic: a full stream makes the bridge set ``overflowed`` instead of blocking the observer."""
    send, recv = anyio.create_memory_object_stream[Path](max_buffer_size=2)
    watcher = Watcher(send, anyio.lowlevel.current_token())
    await anyio.to_thread.run_sync(watcher.sync, [tmp_path])
    await anyio.to_thread.run_sync(watcher.start)
    try:
        for i in range(20):
            (tmp_path / f"f{i}.jsonl").write_text("x\n")
        with anyio.fail_after(30):
            while not watcher.overflowed:  # noqa: ASYNC110 (a flag set by the observer thread)
                await anyio.sleep(0.05)
    finally:
        await anyio.to_thread.run_sync(watcher.stop)
        send.close()
        recv.close()


@pytest.mark.anyio
@pytest.mark.timeout(240)
async def test_watching_twenty_thousand_folders_takes_seconds(tmp_path: Path) -> None:
    root = tmp_path / "big"

    def make() -> None:
        for i in range(200):
            for j in range(100):
                os.makedirs(root / f"p{i}" / f"s{j}")

    await anyio.to_thread.run_sync(make)
    send, recv = anyio.create_memory_object_stream[Path](max_buffer_size=8192)
    watcher = Watcher(send, anyio.lowlevel.current_token())
    t0 = time.monotonic()
    await anyio.to_thread.run_sync(watcher.sync, [root])
    await anyio.to_thread.run_sync(watcher.start)
    took = time.monotonic() - t0
    try:
        # Events from a deep folder arrive (the watch covers the whole tree).
        (root / "p199" / "s99" / "new.jsonl").write_text("{}\n")
        with anyio.fail_after(30):
            while True:
                path = await recv.receive()
                if path.name == "new.jsonl":
                    break
    finally:
        await anyio.to_thread.run_sync(watcher.stop)
        send.close()
        recv.close()
    print(f"RELIABILITY watch_setup folders=20000 seconds={took:.2f}")
    assert took < 60, f"watching 20,000 folders took {took:.1f}s"


@pytest.mark.anyio
@pytest.mark.timeout(240)
async def test_a_root_waited_for_inside_a_watched_root_does_not_silence_it(tmp_path: Path) -> None:
    """An agent's folder waited for inside another agent's watched folder (Cline's task folder under Cursor's
    ``User/globalStorage``, where Cursor's database lives) is seen through that root's own recursive watch, and
    is not watched a second time (watchdog shares one inotify descriptor between watches). With that second
    watch, a daemon under load lost Cursor's database events: tests/integration/test_agent_cursor.py's live test
    failed 5 of 8 runs beside three busy processes, and passes since; this order alone does not reproduce it."""
    root = tmp_path / "User"
    storage = root / "globalStorage"
    storage.mkdir(parents=True)
    waiting = storage / "saoudrizwan.claude-dev" / "tasks"
    send, recv = anyio.create_memory_object_stream[Path](max_buffer_size=8192)
    watcher = Watcher(send, anyio.lowlevel.current_token())
    await anyio.to_thread.run_sync(watcher.sync, [root], [])
    await anyio.to_thread.run_sync(watcher.start)
    await anyio.to_thread.run_sync(watcher.sync, [root], [waiting])
    try:
        (storage / "state.vscdb-wal").write_bytes(b"x")  # the editor writes its database
        seen: set[str] = set()
        with anyio.fail_after(30):
            while "state.vscdb-wal" not in seen:
                seen.add((await recv.receive()).name)
        waiting.mkdir(parents=True)  # the extension is installed: its folder's arrival is reported by the root
        with anyio.fail_after(30):
            while "tasks" not in seen:
                seen.add((await recv.receive()).name)
    finally:
        await anyio.to_thread.run_sync(watcher.stop)
        send.close()
        recv.close()
