"""Fidelity on real-shaped transcripts (issue #41, section 1), through a real daemon, the real CLI and the real
store: what ``mempal inspect`` announces is what ``mempal mine`` stores, a session's drawers (its sub-agents' and
its /btw side question's included) are in one wing, a Gemini sub-agent's chat files under its project, and a
binary file (a SQLite database) is refused with its reason, never read as text. ``mempal mine FILE`` inside a
watched source reads that file alone."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon, copy_tree

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "fidelity"
SID = "5d0c7a9e-3b1f-4c2a-9e8d-7f6a5b4c3d2e"


def run(d: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mempal.cli.main", *args], capture_output=True, text=True,
                          env=d.env, timeout=300)


def mempal(d: Daemon, *args: str) -> Any:
    out = run(d, *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _sqlite_db(path: Path) -> None:
    """A real SQLite database (a key/value table, as editors and browsers keep)."""
    con = sqlite3.connect(path)
    with con:
        con.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        con.executemany("INSERT INTO ItemTable VALUES (?, ?)",
                        [(f"workbench.panel.{i}", json.dumps({"open": i % 2 == 0})) for i in range(200)])
    con.close()


@pytest.mark.timeout(600)
def test_a_session_is_one_wing_and_inspect_matches_what_is_stored(daemon: Daemon, home: Path,
                                                                   tmp_path: Path) -> None:
    work = tmp_path / "transcripts"
    copy_tree(SAMPLES / "claude_code", work / "claude")
    copy_tree(SAMPLES / "gemini" / "tmp", work / "gemini")
    shutil.copy(SAMPLES / "aider_v050_pastes_help.chat.history.md", work / ".aider.chat.history.md")
    daemon.start()
    daemon.idle()

    session = work / "claude" / "-home-USER-projects-Demo" / f"{SID}.jsonl"
    aside = session.with_suffix("") / "subagents" / "agent-aside_question-c5e5c961a7749e08.jsonl"
    counts = mempal(daemon, "inspect", str(session), "--counts-only")
    assert counts["prompts"] == 3 and counts["answers"] == 3  # the three task notifications are no prompts
    assert counts["accounted"]["folded: task notification"] == 3 and counts["accounted"]["skipped: mode"] == 2
    side = mempal(daemon, "inspect", str(aside), "--counts-only")
    assert side["prompts"] == 1 and side["drawers"] == 1
    assert side["exchanges"][0]["prompt"] == "which package manager does this repo use?"
    history = mempal(daemon, "inspect", str(work / ".aider.chat.history.md"), "--counts-only")
    assert history["prompts"] == 5 and history["answers"] == 5

    dry = mempal(daemon, "mine", str(work), "--dry-run")
    done = mempal(daemon, "mine", str(work))
    assert done["exchanges"] == dry["exchanges"] and done["drawers"] == dry["drawers"]
    st = daemon.idle()
    assert st["drawers"] == dry["drawers"]  # inspect, the dry run and the store agree

    drawers = daemon.call("session_drawers", {"session_id": SID, "after": 50})["drawers"]
    assert {d["wing"] for d in drawers} == {"Demo"}  # the sub-agent worked in todo-app/ and todo-app/src/types
    kinds = sorted((d["kind"], d.get("agent", "")) for d in drawers if d["chunk_index"] == 0)
    assert kinds == [("exchange", "claude"), ("exchange", "claude"), ("exchange", "claude"),
                     ("exchange", "claude/side-question"), ("subagent", "claude/subagent:a1f3c5e7b9d0a2c4e")]
    texts = "\n".join(d["text"] for d in drawers)
    assert "<task-notification>" not in texts and "system-reminder" not in texts and "Set model to" not in texts

    gem = daemon.call("session_drawers", {"session_id": "b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e", "after": 50})
    (work_drawer,) = [d for d in gem["drawers"] if d["chunk_index"] == 0]
    assert work_drawer["wing"] == "demo-app" and work_drawer["kind"] == "subagent"
    assert work_drawer["parent_exchange"] == "u-1" and not work_drawer["text"].startswith("> ")


@pytest.mark.timeout(600)
def test_binary_files_are_refused_and_mine_file_reads_that_file(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    # a database no format claims by its name (Cursor's own state.vscdb is read as its store: test_agent_cursor.py)
    db = tmp_path / "browser" / "places.sqlite"
    db.parent.mkdir()
    _sqlite_db(db)
    watched = tmp_path / "notes"
    (watched / "a").mkdir(parents=True)
    (watched / "b").mkdir()
    shutil.copy(SAMPLES / "aider_v086_confirmations.chat.history.md", watched / "a" / ".aider.chat.history.md")
    shutil.copy(SAMPLES / "aider_v050_pastes_help.chat.history.md", watched / "b" / ".aider.chat.history.md")
    shutil.copy(db, watched / "b" / "export.md")  # a database under a text file's name
    daemon.start()
    daemon.idle()

    bad = run(daemon, "inspect", str(db))
    assert bad.returncode != 0 and "a SQLite database, binary content, not text: not read" in bad.stderr
    mined = mempal(daemon, "mine", str(db))
    assert mined["files"] == 1 and mined["drawers"] == 0 and mined["skipped"] == {"binary": 1}
    direct = daemon.call("mine", {"paths": [str(db)]})  # the socket call names the file and why
    assert direct["skipped_files"] == [f"{db}: a SQLite database, binary content, not text"]
    assert daemon.call("status")["drawers"] == 0

    daemon.call("watch_add", {"path": str(watched), "mode": "convos"})
    st = daemon.wait_for(lambda: (s := daemon.idle()) and s["drawers"] >= 7 and s)  # 2 + 5 prompts, all answered
    source = next(s for s in st["sources"] if s["path"] == str(watched))
    assert source["skipped"].get("binary") == 1  # export.md: counted with its reason, nothing stored from it
    assert run(daemon, "inspect", str(watched / "b" / "export.md")).returncode != 0

    one = watched / "a" / ".aider.chat.history.md"
    plan = mempal(daemon, "mine", str(one), "--dry-run")
    assert plan["files"] == 1 and plan["prompts"] == 2  # that file, not its whole watched source
    folder = mempal(daemon, "mine", str(watched / "b"), "--dry-run")  # a folder inside it: what is under it
    assert folder["files"] == 2 and folder["prompts"] == 5 and folder["skipped"] == {"binary": 1}
    again = mempal(daemon, "mine", str(one))
    assert again["files"] == 1 and again["errors"] == []  # read already by the watch: nothing new in it
