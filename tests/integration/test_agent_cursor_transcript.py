"""Cursor's agent transcripts through a real daemon (issue 43): a HOME with ``~/.cursor/projects/<slug>/
agent-transcripts/<uuid>/<uuid>.jsonl`` is read by default, searchable with the agent ``cursor`` and the workspace
folder the slug names as its wing, followed as Cursor appends (only the new exchange added), explained by
``mempal inspect``; and a chat present both in Cursor's ``state.vscdb`` and as an agent transcript ends as one
set of drawers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mempald.normalize.cursor_transcript_beside import cursor_slug
from tests.conftest import Daemon
from tests.cursor_samples import answer, create_db, user, write_conversation

CID = "6e1f3b2a-8c4d-4a9e-b5f7-0d2c9a8e1b34"
PROMPTS = ("Why does the nightly export time out after 30 minutes?",
           "Raise the timeout and log the slow table.",
           "Now add a retry with backoff for the export.")
ANSWERS = ("The export streams every table through one connection; the `orders` table alone takes 40 minutes, "
           "past the 30 minute statement timeout.",
           "Raised `statement_timeout` to 90 minutes and the exporter now logs any table slower than 5 minutes.",
           "Added a retry with exponential backoff, capped at 3 attempts, around each table's export.")


def record(role: str, text: str, **tool: Any) -> str:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if tool:
        content.append({"type": "tool_use", **tool})
    return json.dumps({"role": role, "message": {"content": content}})


def turn(n: int, workspace: Path) -> list[str]:
    return [record("user", f"<timestamp>Friday, Nov 6, 2026, 9:0{n} AM (UTC+1)</timestamp>\n<user_query>\n"
                           f"{PROMPTS[n]}\n</user_query>"),
            record("assistant", "Looking at the exporter.", name="ReadFile",
                   input={"path": str(workspace / "export" / "run.py")}),
            record("assistant", ANSWERS[n])]


def write_transcript(home: Path, workspace: Path, turns: int) -> Path:
    folder = home / ".cursor" / "projects" / cursor_slug(str(workspace)) / "agent-transcripts" / CID
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{CID}.jsonl"
    lines = [ln for n in range(turns) for ln in turn(n, workspace)]
    path.write_text("\n".join(lines))  # as Cursor writes it: no newline after the last record
    (folder.parent.parent / "terminals").mkdir(exist_ok=True)  # beside it, never read as a conversation
    (folder.parent.parent / "terminals" / "1.txt").write_text("user:\n<user_query>\nnot a chat\n</user_query>\n")
    return path


def hits(d: Daemon, query: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = d.call("search", {"query": query, "limit": 20, "session_id": [CID]})["hits"]
    return found


def keys(d: Daemon) -> list[str]:
    return sorted(h["exchange_key"] for h in hits(d, "nightly export timeout retry backoff slow table")
                  if h.get("kind") != "subagent")


@pytest.mark.timeout(600)
def test_agent_transcripts_are_found_by_default_followed_and_explained(daemon: Daemon, home: Path) -> None:
    workspace = home / "code" / "night_export.v2"  # "_" and "." are dashes in the slug: found on disk
    workspace.mkdir(parents=True)
    path = write_transcript(home, workspace, 2)
    # bad input beside it: binary junk, an empty legacy transcript, a .txt that is no transcript
    junk = path.parent.parent / "0d9c8b7a-6f5e-4d3c-2b1a-0f9e8d7c6b5a"
    junk.mkdir()
    (junk / f"{junk.name}.jsonl").write_bytes(bytes(range(256)) * 8)
    (path.parent.parent / "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d.txt").write_text("")
    (path.parent.parent / "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e.txt").write_text("user: notes on users\nno more\n")
    sub = path.parent / "subagents" / "7c6b5a4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d.jsonl"  # a sub-agent's work
    sub.parent.mkdir()
    sub.write_text("\n".join((record("user", "List the tables the nightly export reads."),
                              record("assistant", "It reads orders, customers and invoices."))))
    daemon.start()
    found = daemon.wait_for(lambda: len(keys(daemon)) == 2 and hits(daemon, "export time out 30 minutes orders"),
                            timeout=240)
    assert {h["agent"] for h in found} <= {"cursor", "cursor/subagent"} and {h["wing"] for h in found} == {
        "night_export.v2"}  # (the sub-agent's work too: its parent's wing)
    assert any("past the 30 minute statement timeout" in h["text"] for h in found)
    assert any(h["text"].startswith(f"> {PROMPTS[0]}") for h in found)  # the prompt as typed, no tags
    before = {h["exchange_key"]: h["drawer_id"] for h in
              hits(daemon, "nightly export timeout retry backoff slow table")}
    st = daemon.call("status")
    source = next(s for s in st["sources"] if s.get("format") == "cursor_transcript")
    assert source["path"] == str((home / ".cursor" / "projects").resolve())
    daemon.idle(timeout=240)
    assert daemon.proc is not None and daemon.proc.poll() is None  # the bad files: never a crash
    source = next(s for s in daemon.call("status")["sources"] if s.get("format") == "cursor_transcript")
    # the junk is counted (refused: binary); the two .txt files are read and store nothing; terminals/ is not read
    assert (source["files"], source["skipped"], source["errors"]) == (4, {"binary": 1}, 0), source
    (work,) = [h for h in hits(daemon, "tables the nightly export reads orders customers") if h["kind"] == "subagent"]
    assert work["agent"] == "cursor/subagent" and work["text"].startswith("[task] List the tables")  # no prompt

    # Cursor appends the next turn: only that exchange is added, the others keep their drawers
    with path.open("a") as fh:
        fh.write("\n" + "\n".join(turn(2, workspace)))
    daemon.wait_for(lambda: len(keys(daemon)) == 3, timeout=120)
    after = {h["exchange_key"]: h["drawer_id"] for h in
             hits(daemon, "nightly export timeout retry backoff slow table")}
    assert {k: after[k] for k in before} == before
    source = next(s for s in daemon.call("status")["sources"] if s.get("format") == "cursor_transcript")
    assert source["files"] == 4  # terminals/1.txt beside it is never read as a conversation

    out = subprocess.run([sys.executable, "-m", "mempal.cli.main", "inspect", str(path), "--json"],
                         capture_output=True, text=True, env=daemon.env, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["format"] == "cursor_transcript" and len(report["exchanges"]) == 3
    assert report["accounted"] == {"stored": 9}  # all 9 records, each once (each answer has text of its own)


@pytest.mark.timeout(600)
def test_a_chat_in_cursors_store_and_in_its_transcript_is_stored_once(daemon: Daemon, home: Path) -> None:
    workspace = home / "code" / "night-export"
    workspace.mkdir(parents=True)
    write_transcript(home, workspace, 2)
    db = create_db(home / ".config" / "Cursor" / "User" / "globalStorage" / "state.vscdb")
    write_conversation(db, CID, [user("u1", PROMPTS[0]), answer("a1", ANSWERS[0]),
                                 user("u2", PROMPTS[1]), answer("a2", ANSWERS[1])],
                       name="Nightly export", workspaceIdentifier={"id": "w1", "uri": {"fsPath": str(workspace)}})
    db.close()
    daemon.start()

    def both_read() -> bool:
        sources = {s.get("format"): s for s in daemon.call("status")["sources"]}
        return all(sources.get(f, {}).get("exchanges", 0) >= 2 for f in ("cursor", "cursor_transcript"))

    daemon.wait_for(both_read, timeout=240)
    daemon.idle(timeout=240)
    found = hits(daemon, "nightly export timeout raise log slow table")
    by_key: dict[str, int] = {}
    for h in found:
        by_key[h["exchange_key"]] = by_key.get(h["exchange_key"], 0) + 1
    assert len(by_key) == 2 and set(by_key.values()) == {1}, by_key  # one drawer per exchange, not two
    assert {h["wing"] for h in found} == {"night-export"} and {h["agent"] for h in found} == {"cursor"}

    # Cursor goes on in the chat: the transcript (a copy, Format.copy) grows and is read again. The drawers the
    # other reading wrote are not rewritten (their texts differ a little: rewriting them at each change would
    # re-embed the whole chat every time either file changes); the new exchange is added.
    before = {h["drawer_id"]: h["text"] for h in found}
    write_transcript(home, workspace, 3)
    daemon.wait_for(lambda: len({h["exchange_key"] for h in hits(daemon, "nightly export retry backoff timeout")})
                    == 3, timeout=120)
    daemon.idle(timeout=240)
    after = {h["drawer_id"]: h["text"] for h in hits(daemon, "nightly export timeout raise log slow table")}
    assert {k: after.get(k) for k in before} == before
