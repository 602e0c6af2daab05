"""The cursor-agent CLI through a real daemon (issue 43): a chat store at its default place in a fake HOME
(``~/.cursor/chats/<md5>/<agent id>/store.db``) found and made searchable with agent ``cursor`` and the workspace's
wing; the chat grows (new message blobs, a new root) and only the new exchange is added; a damaged root is counted
and logged once, never a crash, and the store is read again once it changes; ``mempal inspect`` takes the store."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.cursor_agent_samples import AGENT, build_chat, grown, query, said, store_path, write_chat


def hits(d: Daemon, query: str, **kw: Any) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = d.call("search", {"query": query, "limit": 20, **kw})["hits"]
    return result


def keys(d: Daemon) -> set[str]:
    return {h["exchange_key"] for h in hits(d, "ledger total cent drift Decimal regression test CSV export round",
                                            session_id=[AGENT])}


@pytest.mark.timeout(600)
def test_a_cursor_agent_chat_is_found_followed_and_inspected(daemon: Daemon, home: Path) -> None:
    chats = home / ".cursor" / "chats"
    db = build_chat(chats)
    beside = {p.name for p in db.parent.iterdir()}
    daemon.start()
    t0 = time.monotonic()
    found = daemon.wait_for(lambda: [h for h in hits(daemon, "monthly ledger total drifts binary floats Decimal")
                                     if h.get("session_id") == AGENT], timeout=240)
    print(f"backfill: searchable in {time.monotonic() - t0:.2f} s")
    assert {(h["agent"], h["wing"]) for h in found} == {("cursor", "ledgerly")}
    assert any("```python\nfrom decimal import Decimal" in h["text"] for h in found)  # the code block kept
    assert not any("OS Version" in h["text"] or "accumulates error" in h["text"] for h in found)
    before = daemon.wait_for(lambda: k if len(k := keys(daemon)) == 2 else None)

    # cursor-agent answers one more prompt: new message blobs, a new root, the meta row pointed at it
    write_chat(db, grown())
    t1 = time.monotonic()
    after = daemon.wait_for(lambda: k if len(k := keys(daemon)) == 3 else None, timeout=60, interval=0.05)
    print(f"follow: a new exchange searchable in {time.monotonic() - t1:.2f} s")
    assert before < after
    csv = hits(daemon, "CSV export rounds the Decimal total with two places", session_id=[AGENT])
    assert len([h for h in csv if "Does the CSV export round" in h["text"]]) == 1  # stored once
    # nothing of mempald's beside it (the -wal and -shm are the writer's, kept as SQLite's WAL protocol says)
    assert {p.name for p in db.parent.iterdir()} <= beside | {"store.db-wal", "store.db-shm"}

    # a store whose root blob is damaged: counted and logged once, no crash; read again once it changes
    bad_db = store_path(chats, agent="0d1e2f3a-4b5c-4d6e-8f70-819203a4b5c6")
    write_chat(bad_db, grown(), agent="0d1e2f3a-4b5c-4d6e-8f70-819203a4b5c6")
    con = sqlite3.connect(bad_db, isolation_level=None)
    bad = b"\x0a\x05short"
    con.execute("INSERT INTO blobs VALUES (?, ?)", (hashlib.sha256(bad).hexdigest(), bad))
    meta = json.loads(bytes.fromhex(con.execute("SELECT value FROM meta").fetchone()[0]))
    good_root = meta["latestRootBlobId"]
    con.execute("UPDATE meta SET value = ?", (json.dumps({**meta, "latestRootBlobId": hashlib.sha256(
        bad).hexdigest()}).encode().hex(),))
    daemon.wait_for(lambda: "database_unreadable" in daemon.logs(), timeout=120)
    con.execute("INSERT INTO blobs VALUES ('00', x'00')")  # it changes again while still damaged
    daemon.wait_for(lambda: daemon.call("status")["file_backlog"] == 0)
    assert daemon.proc is not None and daemon.proc.poll() is None
    assert daemon.logs().count("database_unreadable") == 1
    con.execute("UPDATE meta SET value = ?", (json.dumps(meta).encode().hex(),))  # repaired: read
    con.close()
    assert good_root
    daemon.wait_for(lambda: hits(daemon, "ledger total drift", session_id=["0d1e2f3a-4b5c-4d6e-8f70-819203a4b5c6"]),
                    timeout=120)

    # a chat that names no workspace (no root field, no <user_info>): the wing named for the editor
    lone = "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b"
    write_chat(store_path(chats, "/nowhere/known", agent=lone),
               [query("Why does the heron queue stall after midnight?"), said("The heron queue's cron uses UTC.")],
               workspace=None, agent=lone)
    lone_hits = daemon.wait_for(lambda: hits(daemon, "heron queue stall midnight", session_id=[lone]), timeout=120)
    assert {(h["agent"], h["wing"]) for h in lone_hits} == {("cursor", "cursor")}

    # `mempal inspect` takes the store: its exchanges, every blob read accounted for
    out = subprocess.run([sys.executable, "-m", "mempal.cli.main", "inspect", str(db), "--json"],
                         capture_output=True, text=True, env=daemon.env, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["format"] == "cursor_agent"
    assert len(report["exchanges"]) == 3 and {e["wing"] for e in report["exchanges"]} == {"ledgerly"}
    assert report["accounted"]["skipped: system prompt"] == 1
    assert report["accounted"]["folded: tool result"] == 2


@pytest.mark.timeout(600)
def test_a_chat_growing_at_full_speed_is_followed_without_holding_the_writer(daemon: Daemon, home: Path) -> None:
    """cursor-agent writing turns back to back (faster than it does) while the daemon reads: no commit fails or
    waits 100 ms on mempald, and every exchange ends stored exactly once."""
    agent = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
    db = store_path(home / ".cursor" / "chats", agent=agent)
    chat = [*grown()[:2]]
    write_chat(db, chat, agent=agent)
    daemon.start()
    waits: list[float] = []
    turns = 40
    for n in range(turns):
        chat += [query(f"Turn {n}: check invoice batch {n} for rounding"), said(f"Invoice batch {n} rounds cleanly.")]
        t = time.monotonic()
        write_chat(db, chat, agent=agent)  # a transaction: blobs, the new root, the meta row
        waits.append(time.monotonic() - t)

    def stored() -> list[dict[str, Any]]:
        return [h for h in hits(daemon, "invoice batch rounds cleanly rounding", session_id=[agent], limit=100)]

    daemon.wait_for(lambda: len({h["exchange_key"] for h in stored()}) == turns, timeout=120)
    got = stored()
    assert len(got) == len({h["exchange_key"] for h in got}) == turns, "each exchange stored once"
    print(f"the writer: {turns} commits, longest {max(waits) * 1000:.1f} ms")
    assert max(waits) < 0.1, f"cursor-agent's commit took {max(waits) * 1000:.0f} ms while mempald read"
