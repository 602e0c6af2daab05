"""Cursor and GitHub Copilot through a real daemon (issue 43): the editors' own stores found at their default
places in a fake HOME, made searchable with the right agent and wing, followed while Cursor keeps writing (a writer
process committing every 50 ms is never failed nor held 100 ms), a SpecStory copy of a Cursor chat not stored
twice, and Cursor's sessionStart hook answering in Cursor's shape."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, Daemon
from tests.copilot_samples import write_cli_session, write_json_session
from tests.cursor_samples import PROJECT, T0, answer, build_cursor_user, spotter_conversation, user, write_conversation

WRITER = REPO / "tests" / "cursor_writer.py"  # Cursor streaming: a commit every 50 ms, its lock waits timed


def hits(d: Daemon, query: str, **kw: Any) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = d.call("search", {"query": query, "limit": 20, **kw})["hits"]
    return result


def keys_of(d: Daemon, session: str) -> list[str]:
    return sorted(h["exchange_key"] for h in hits(d, "rate limiter bucket refill docs test", session_id=[session]))


def _cursor_root(home: Path) -> Path:
    return home / ".config" / "Cursor"  # $XDG_CONFIG_HOME/Cursor/User: Cursor's place on Linux


@pytest.mark.timeout(600)
def test_cursor_store_is_read_live_without_disturbing_the_editor(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    db_path = build_cursor_user(_cursor_root(home))
    folder = db_path.parent
    stop = tmp_path / "stop-writer"
    writer = subprocess.Popen([sys.executable, str(WRITER), str(db_path), "wal", str(stop)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        beside = {p.name for p in folder.iterdir()}
        daemon.start()
        t0 = time.monotonic()
        spotter = daemon.wait_for(lambda: [h for h in hits(daemon, "rate limiter lets bursts through refill")
                                           if h.get("session_id") == "c-spotter"], timeout=240)
        print(f"backfill: searchable in {time.monotonic() - t0:.2f} s")
        assert {h["agent"] for h in spotter} == {"cursor"} and {h["wing"] for h in spotter} == {"spotter"}
        assert any("```ts\nbucket.refill(now);" in h["text"] for h in spotter)  # code blocks kept
        loose = daemon.wait_for(lambda: [h for h in hits(daemon, "HTTP 429 Too Many Requests")
                                         if h.get("session_id") == "c-loose"])
        assert loose[0]["wing"] == "cursor"  # no workspace: the wing named for the editor
        before = keys_of(daemon, "c-spotter")
        assert len(before) == 2

        # Cursor appends a prompt and its answer while it keeps writing: followed, only the new one added
        db = sqlite3.connect(db_path, timeout=5.0, isolation_level=None)
        write_conversation(db, "c-spotter", [*spotter_conversation(), user("u3", "And the docs for the limiter?"),
                                             answer("a6", "Updated docs/limits.md with the burst numbers.")],
                           name="Rate limiter bursts", updated=T0 + 9000)
        db.close()
        t1 = time.monotonic()
        daemon.wait_for(lambda: len(keys_of(daemon, "c-spotter")) == 3, timeout=60, interval=0.05)
        print(f"follow: a new exchange searchable in {time.monotonic() - t1:.2f} s")
        assert set(before) < set(keys_of(daemon, "c-spotter"))
        st = daemon.call("status")
        assert any(s.get("format") == "cursor" for s in st["sources"]), st["sources"]
        assert {p.name for p in folder.iterdir()} == beside, "nothing written beside the editor's database"
    finally:
        stop.touch()
        out, _ = writer.communicate(timeout=60)
    result = json.loads(out.strip().splitlines()[-1])
    print(f"the editor's writer: {result['commits']} commits, longest lock wait "
          f"{result['max_lock_wait'] * 1000:.1f} ms, longest commit {result['max_commit'] * 1000:.1f} ms")
    assert result["failures"] == 0 and result["commits"] > 20
    assert result["max_lock_wait"] < 0.1, f"the editor waited {result['max_lock_wait'] * 1000:.0f} ms for mempald"


@pytest.mark.timeout(600)
def test_a_locked_database_is_read_once_released_and_a_specstory_copy_is_not_stored_twice(
        daemon: Daemon, home: Path, tmp_path: Path) -> None:
    db_path = build_cursor_user(_cursor_root(home), wal=False)
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # Cursor holding its lock as the daemon starts
    try:
        daemon.start()
        daemon.wait_for(lambda: "database_unreadable" in daemon.logs(), timeout=120)
        for n in range(3):  # the editor goes on changing its files while it holds the lock: tried each time
            daemon.wait_for(lambda: daemon.call("status")["file_backlog"] == 0)
            os.utime(db_path, (time.time() + n + 1, time.time() + n + 1))
        daemon.wait_for(lambda: daemon.call("status")["file_backlog"] == 0)
        assert daemon.proc is not None and daemon.proc.poll() is None  # never a crash
        assert daemon.logs().count("database_unreadable") == 1  # logged once
        cursor_source = next(s for s in daemon.call("status")["sources"] if s.get("format") == "cursor")
        assert cursor_source["errors"] == 1 and "locked" in cursor_source["last_error"]  # counted
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    db = sqlite3.connect(db_path, isolation_level=None)  # a change: the store is read again
    db.execute("INSERT INTO ItemTable VALUES ('workbench.state', '{}')")
    db.close()
    daemon.wait_for(lambda: [h for h in hits(daemon, "HTTP 429 Too Many Requests")
                             if h.get("session_id") == "c-loose"], timeout=240)
    count = len(hits(daemon, "HTTP 429 Too Many Requests", session_id=["c-loose"]))
    assert count == 1
    # `mempal inspect` takes the database: its conversations, every row read accounted for
    out = subprocess.run([sys.executable, "-m", "mempal.cli.main", "inspect", str(db_path), "--json"],
                         capture_output=True, text=True, env=daemon.env, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["format"] == "cursor"
    assert {e["session"] for e in report["exchanges"]} == {"c-spotter", "c-loose", "c-odd"}
    assert {e["wing"] for e in report["exchanges"] if e["session"] == "c-spotter"} == {"spotter"}
    assert report["accounted"]["folded: conversation header"] == 3
    assert report["accounted"]["skipped: not a message (null or not JSON)"] == 1

    # SpecStory's history of the same chat, in a watched repo: the same drawer, not a second one
    history = tmp_path / "repo" / ".specstory" / "history"
    history.mkdir(parents=True)
    (history / "2026-11-02_10-00Z-http-429.md").write_text(
        "<!-- Generated by SpecStory, Markdown v2.1.0 -->\n\n# HTTP 429\n\n"
        "<!-- Cursor Session c-loose (2026-11-02 10:00:00Z) -->\n\n_**User (2026-11-02 10:00:00Z)**_\n\n"
        "What does HTTP 429 mean?\n\n---\n\n_**Agent (gpt-5 2026-11-02 10:00:04Z)**_\n\n"
        "Too Many Requests: the client is rate limited.\n\n---\n")
    out = subprocess.run([sys.executable, "-m", "mempal.cli.main", "watch", "add", str(history), "--mode", "convos"],
                         capture_output=True, text=True, env=daemon.env, timeout=120)
    assert out.returncode == 0, out.stderr
    daemon.wait_for(lambda: any(str(history) in str(h.get("source_path")) for h in
                                hits(daemon, "HTTP 429 Too Many Requests", session_id=["c-loose"])), timeout=240)
    assert len(hits(daemon, "HTTP 429 Too Many Requests", session_id=["c-loose"])) == 1


@pytest.mark.timeout(600)
def test_copilot_sessions_and_the_cursor_session_start_hook(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    write_json_session(home / ".config" / "Code" / "User")  # VS Code's place on Linux
    write_cli_session(home / ".copilot" / "session-state")
    build_cursor_user(_cursor_root(home))
    daemon.start()
    vscode = daemon.wait_for(lambda: hits(daemon, "partitions written twice flush close", agent=["copilot"]),
                             timeout=240)
    assert vscode[0]["wing"] == "heron" and vscode[0]["source_kind"] == "copilot"
    cli = daemon.wait_for(lambda: hits(daemon, "failing tests test_flush test_close", agent=["copilot"]))
    assert any(h["source_kind"] == "copilot_cli" and h["wing"] == "heron" for h in cli)
    daemon.wait_for(lambda: hits(daemon, "rate limiter bursts", agent=["cursor"]), timeout=240)

    installed = subprocess.run([sys.executable, "-m", "mempal.cli.main", "install-hooks", "--agent", "cursor"],
                               capture_output=True, text=True, env={**daemon.env, "PYTHONPATH": str(REPO)},
                               timeout=120)
    assert installed.returncode == 0, installed.stderr
    hooks = json.loads((home / ".cursor" / "hooks.json").read_text())
    (entry,) = hooks["hooks"]["sessionStart"]
    payload = {"hook_event_name": "sessionStart", "conversation_id": "c-new", "generation_id": "g1",
               "workspace_roots": [PROJECT], "cursor_version": "2.4.31"}
    res = subprocess.run(entry["command"], shell=True, input=json.dumps(payload), capture_output=True, text=True,
                         env=daemon.env, timeout=60)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out) == {"additional_context"} and "<mempal-context" in out["additional_context"]
    assert "spotter" in out["additional_context"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.timeout(300)
async def test_a_large_store_is_read_batch_after_batch_into_the_daemon(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The intake reads a database unit batch after batch (each bounded by ``cursor.BATCH_BYTES``) until its
    context stops moving: every conversation is stored, each once, and a re-read adds nothing."""
    from mempal.cli.render import reading_line
    from mempald.config import parse_settings
    from mempald.embed.embedder import Embedder
    from mempald.ingest.queues import BACKFILL
    from mempald.normalize import cursor
    from mempald.runtime.root import Backends
    from mempald.runtime.root import Daemon as Palace
    from mempald.search import ranking
    from mempald.state.db import State
    from mempald.store.base import Filters
    from mempald.store.edge import EdgeStore
    from tests.cursor_samples import create_db

    monkeypatch.setattr(cursor, "BATCH_BYTES", 1)  # one conversation a batch
    watched = tmp_path / "watched"
    db_path = watched / "User" / "globalStorage" / "state.vscdb"
    db = create_db(db_path)
    for c in range(12):
        write_conversation(db, f"conv-{c:02d}", [user(f"u{c}", f"question number {c} about the pelican cache"),
                                                 answer(f"a{c}", f"answer {c}: evict on write")], updated=T0 + c)
    db.close()
    embedder = Embedder(models_dir=tmp_path / "models")
    store = EdgeStore(tmp_path / "store", embedder.dim, ranker=ranking.rank)
    state = State(tmp_path / "state.sqlite3")
    settings = parse_settings({"store": {"machine": "t"}, "sources": {"claude_projects": "", "codex_sessions": "",
                                                                     "watch": [{"path": str(watched)}]}}, env={})
    palace = Palace(settings, Backends(embedder, store, None, state))
    seen: list[dict[str, Any]] = []  # what ``status`` said of the database each time a batch was written
    write = palace.ingestor.writer.write

    async def write_and_look(*args: Any) -> Any:
        report = await palace.status.report()
        seen.extend(r for s in report["sources"] for r in s["reading"])
        return await write(*args)

    monkeypatch.setattr(palace.ingestor.writer, "write", write_and_look)
    try:
        source = palace.sources.source_for(db_path)
        assert source is not None
        await palace.ingestor.ingest_path(db_path, source, BACKFILL)
        # while it was read: its path, how far (row ids: 0 < done <= of), what was stored so far, growing
        assert len(seen) >= 10 and all(r["path"] == str(db_path) and 0 < r["done"] <= r["of"] for r in seen)
        assert [r["exchanges"] for r in seen] == sorted(r["exchanges"] for r in seen) and seen[-1]["exchanges"] > 0
        assert [r["percent"] for r in seen] == sorted(r["percent"] for r in seen) and 0 < seen[0]["percent"] < 50
        assert "% of its rows" in reading_line(seen[-1]) and "globalStorage/state.vscdb" in reading_line(seen[-1])
        report = await palace.status.report()
        assert not any(s["reading"] for s in report["sources"])  # read whole: no longer said
        sessions: list[str] = []
        async for page in palace.store.pages(Filters(include_deleted=True)):
            sessions += [str(pt.payload.get("session_id")) for pt in page]
        assert sorted(sessions) == [f"conv-{c:02d}" for c in range(12)]
        cur = await palace.state.get_cursor(str(db_path))
        with sqlite3.connect(db_path) as check:
            newest = check.execute("SELECT max(rowid) FROM cursorDiskKV").fetchone()[0]
        assert cur is not None and cur.context.since == newest and cur.size > 0  # done: its signature kept
        await palace.ingestor.ingest_path(db_path, source, BACKFILL)
        again: list[str] = []
        async for page in palace.store.pages(Filters(include_deleted=True)):
            again += [str(pt.payload.get("session_id")) for pt in page]
        assert sorted(again) == sorted(sessions)
    finally:
        store.close()
        state.close()
