"""OpenCode samples for the tests: the storage folder written here in OpenCode's shape
(``tests/fixtures/opencode``), a database built from it with OpenCode's own schema (its tables ``project``,
``session``, ``message``, ``part``, as OpenCode's JSON-to-SQLite migration fills them), and a ``Look`` over real
files for the format's hooks (the intake's own Look reads the same way)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path, PurePath
from typing import Any

from mempald.normalize.model import Line
from tests.conftest import REPO, lines_in

SAMPLES = REPO / "tests" / "fixtures" / "opencode"
STORAGE = SAMPLES / "storage"
EXPORT = SAMPLES / "export"

SCHEMA = """
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text, icon_url text,
  icon_color text, time_created integer NOT NULL, time_updated integer NOT NULL, time_initialized integer,
  sandboxes text NOT NULL DEFAULT '[]', commands text);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL REFERENCES project(id) ON DELETE CASCADE,
  workspace_id text, parent_id text, slug text NOT NULL, directory text NOT NULL, path text, title text NOT NULL,
  version text NOT NULL, share_url text, summary_additions integer, summary_deletions integer,
  summary_files integer, summary_diffs text, revert text, permission text, cost real NOT NULL DEFAULT 0,
  tokens_input integer NOT NULL DEFAULT 0, tokens_output integer NOT NULL DEFAULT 0,
  time_created integer NOT NULL, time_updated integer NOT NULL, time_compacting integer, time_archived integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE CASCADE,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL REFERENCES message(id) ON DELETE CASCADE,
  session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
"""


class DiskLook:
    """The format hooks' view of real files (what the intake hands them)."""

    def is_file(self, path: PurePath) -> bool:
        return Path(path).is_file()

    def is_dir(self, path: PurePath) -> bool:
        return Path(path).is_dir()

    def entries(self, folder: PurePath) -> tuple[str, ...]:
        try:
            return tuple(sorted(p.name for p in Path(folder).iterdir()))
        except OSError:
            return ()

    def head(self, path: PurePath, size: int) -> bytes:
        try:
            with Path(path).open("rb") as fh:
                return fh.read(size)
        except OSError:
            return b""

    def read(self, path: PurePath, max_bytes: int) -> bytes | None:
        try:
            data = Path(path).read_bytes()
        except OSError:
            return None
        return data if len(data) <= max_bytes else None

    def lines(self, path: PurePath, max_bytes: int) -> list[Line]:
        data = self.read(path, max_bytes)
        return lines_in(data) if data is not None else []

    def rows(self, database: PurePath, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        con = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        try:
            return list(con.execute(sql, params))
        finally:
            con.close()


def _load(path: Path) -> dict[str, Any]:
    value = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(value, dict)
    return value


def build_db(storage: Path, db: Path) -> None:
    """``opencode.db`` holding every record of a storage folder, as OpenCode's migration writes them."""
    con = sqlite3.connect(db)
    con.executescript(SCHEMA)
    con.execute("PRAGMA journal_mode = WAL")
    for f in sorted((storage / "project").glob("*.json")):
        d = _load(f)
        con.execute("INSERT INTO project (id, worktree, vcs, time_created, time_updated) VALUES (?,?,?,?,?)",
                    (f.stem, d.get("worktree", "/"), d.get("vcs"), d["time"]["created"], d["time"]["updated"]))
    sessions: dict[str, str] = {}
    for f in sorted((storage / "session").glob("*/*.json")):
        d = _load(f)
        sessions[f.stem] = f.parent.name
        con.execute("INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created,"
                    " time_updated) VALUES (?,?,?,?,?,?,?,?,?)",
                    (f.stem, f.parent.name, d.get("parentID"), d.get("slug", ""), d.get("directory", ""),
                     d.get("title", ""), d.get("version", ""), d["time"]["created"], d["time"]["updated"]))
    owner: dict[str, str] = {}
    for f in sorted((storage / "message").glob("*/*.json")):
        d = _load(f)
        owner[f.stem] = f.parent.name
        created = d["time"]["created"]
        rest = {k: v for k, v in d.items() if k not in ("id", "sessionID")}
        con.execute("INSERT INTO message VALUES (?,?,?,?,?)",
                    (f.stem, f.parent.name, created, created, json.dumps(rest)))
    for f in sorted((storage / "part").glob("*/*.json")):
        d = _load(f)
        time = d.get("time") if isinstance(d.get("time"), dict) else {}
        stamp = time.get("end") or time.get("start") or 1760012400000
        rest = {k: v for k, v in d.items() if k not in ("id", "sessionID", "messageID")}
        con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)",
                    (f.stem, f.parent.name, owner[f.parent.name], stamp, stamp, json.dumps(rest)))
    con.commit()
    con.close()


# OpenCode 2 keeps a session's messages as rows of one table (its SessionMessageTable)
SCHEMA_V2 = """
CREATE TABLE session_message (id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE
  CASCADE, type text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX session_message_session_idx ON session_message (session_id);
"""
T2 = 1790000000000
V2_SESSION = "ses_a1b2c3d4e5f6Vx9QmTz2LkPw3R"
V2_ROWS: list[tuple[str, str, dict[str, Any]]] = [
    ("msg_a1b2c3d4e601Q1", "user", {"text": "Rename the flag --fast to --quick everywhere", "files": [
        {"uri": "data:image/png;base64,iVBORw0KGgo=", "mime": "image/png", "name": "flags.png"}],
        "agents": [], "references": [], "time": {"created": T2}}),
    ("msg_a1b2c3d4e602Q2", "assistant", {
        "agent": "build", "model": {"id": "gpt-5.2", "providerID": "openai"},
        "content": [
            {"type": "reasoning", "id": "c1", "text": "grep first"},
            {"type": "tool", "id": "c2", "name": "grep", "state": {
                "status": "completed", "input": {"pattern": "--fast"}, "structured": {},
                "content": [{"type": "text", "text": "cli.py:12: --fast"}]},
             "time": {"created": T2 + 100}},
            {"type": "tool", "id": "c3", "name": "edit", "state": {
                "status": "error", "input": {"filePath": "/srv/app/cli.py"}, "structured": {}, "content": [],
                "error": {"type": "unknown", "message": "oldString not found"}}, "time": {"created": T2 + 200}},
            {"type": "text", "id": "c4", "text": "Renamed the flag in cli.py; the docs still say --fast."}],
        "finish": "stop", "cost": 0.01, "time": {"created": T2 + 50, "completed": T2 + 900}}),
    ("msg_a1b2c3d4e603Q3", "synthetic", {"sessionID": V2_SESSION, "text": "Background task finished: lint",
                                         "time": {"created": T2 + 1000}}),
    ("msg_a1b2c3d4e604Q4", "system", {"text": "Working directory changed", "time": {"created": T2 + 1100}}),
    ("msg_a1b2c3d4e605Q5", "shell", {"callID": "call_1", "command": "git status --short",
                                     "output": " M cli.py", "time": {"created": T2 + 1200, "completed": T2 + 1300}}),
    ("msg_a1b2c3d4e606Q6", "agent-switched", {"agent": "plan", "time": {"created": T2 + 1400}}),
    ("msg_a1b2c3d4e607Q7", "compaction", {"reason": "auto", "summary": "We renamed --fast to --quick in cli.py.",
                                          "recent": "", "time": {"created": T2 + 1500}}),
    ("msg_a1b2c3d4e608Q8", "x-hologram", {"time": {"created": T2 + 1600}}),
    ("msg_a1b2c3d4e609Q9", "user", {"text": "Ahora actualiza también la documentación, por favor.", "files": [],
                                    "agents": [], "references": [], "time": {"created": T2 + 1700}}),
    ("msg_a1b2c3d4e610R0", "assistant", {"agent": "build", "model": {"id": "gpt-5.2", "providerID": "openai"},
                                         "content": [], "error": {"type": "api", "message": "rate limited"},
                                         "time": {"created": T2 + 1800}}),
]


def build_v2_db(db: Path, rows: list[tuple[str, str, dict[str, Any]]] = V2_ROWS,
                session: str = V2_SESSION) -> None:
    """An OpenCode 2 database holding one session written as ``session_message`` rows."""
    con = sqlite3.connect(db)
    con.executescript(SCHEMA + SCHEMA_V2)
    con.execute("INSERT INTO project (id, worktree, time_created, time_updated) VALUES ('global', '/', ?, ?)",
                (T2, T2))
    con.execute("INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)"
                " VALUES (?, 'global', 'rename-flag', '/srv/app', 'Rename the fast flag', '2.1.4', ?, ?)",
                (session, T2, T2 + 2000))
    for rid, mtype, data in rows:
        stamp = data["time"]["created"]
        con.execute("INSERT INTO session_message VALUES (?,?,?,?,?,?)", (rid, session, mtype, stamp, stamp,
                                                                          json.dumps(data)))
    con.commit()
    con.close()
