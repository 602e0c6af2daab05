"""OpenCode's SQLite database (releases 1.2 and later): ``$XDG_DATA_HOME/opencode/opencode.db``
(``opencode-<channel>.db`` for a dev or preview build), kept in WAL mode by the running OpenCode, which owns it
(read, never written).

Tables read (their ``data`` column holds the record without its ids, as the storage folder's files did):
``project(id, worktree)``, ``session(id, project_id, parent_id, directory, title, time_updated)``,
``message(id, session_id, time_updated, data)`` and ``part(id, message_id, session_id, time_updated, data)``, and
OpenCode 2's ``session_message(id, session_id, type, time_updated, data)`` (``mempald.normalize.opencode_v2``).
The unit is the database; a change is read by row timestamps: ``gather`` reads every session with a session,
message or part row updated at or after the cursor (``read_end``: the newest ``time_updated`` read, in ms), whole,
so an answer that grows in place is read again and ids stay those of the prompt's message (``ids="message"``:
only exchanges not stored yet, or grown, are written). Rows are accounted for as ``message:<id>`` and
``part:<id>``; the parse is ``mempald.normalize.opencode``'s, so a session migrated from the storage folder into
the database keeps its drawers' ids.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import PurePath
from typing import Any

from mempald.normalize.common import as_str
from mempald.normalize.format import Format, Input, Look, Parsed, Place, Probe, loads
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange
from mempald.normalize.opencode import Message, Session, read_session, session_of
from mempald.normalize.opencode_v2 import BACKFILL_PREFIX, messages_of

NAME = "opencode_db"
_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'"
_STAMPED = ("message", "part", "session_message")  # tables whose rows name their session and carry time_updated
_COLUMNS = {
    "message": ("id", "session_id", "time_updated", "data"),
    "part": ("id", "message_id", "session_id", "time_updated", "data"),
    "session_message": ("id", "session_id", "type", "time_created", "time_updated", "data"),
}
_SESSION = ("id", "parent_id", "directory", "title", "time_updated", "worktree")
BIG_PART = 65536  # a part row larger than this is read as what the parse uses of it, not whole
_ARGS = ("command", "filePath", "file_path", "pattern", "url", "query", "path", "description", "prompt", "name")


def _field(path: str, cut: int | None = None) -> str:
    value = f"json_extract(data, '{path}')"
    return f"substr({value}, 1, {cut})" if cut else value


def _flag(path: str) -> str:
    return f"json(CASE json_type(data, '{path}') WHEN 'true' THEN 'true' ELSE 'false' END)"


# A tool's whole output, a written file's content in its input, an image's data URL: what makes OpenCode's part
# rows large is what the parse cuts to a line anyway; such a row is reduced in SQLite, not carried whole.
_PART_DATA = (
    f"CASE WHEN length(data) <= {BIG_PART} OR NOT json_valid(data) THEN data ELSE json_object("
    f"'type', {_field('$.type')}, 'text', {_field('$.text')}, 'synthetic', {_flag('$.synthetic')}, "
    f"'ignored', {_flag('$.ignored')}, 'tool', {_field('$.tool')}, 'mime', {_field('$.mime')}, "
    f"'filename', {_field('$.filename')}, 'agent', {_field('$.agent')}, "
    f"'description', {_field('$.description', 4096)}, "
    f"'url', CASE WHEN {_field('$.url')} LIKE 'data:%' THEN NULL ELSE {_field('$.url', 4096)} END, "
    f"'source', json_object('path', {_field('$.source.path', 4096)}), "
    "'state', json_object("
    f"'status', {_field('$.state.status')}, 'title', {_field('$.state.title', 4096)}, "
    f"'output', {_field('$.state.output', 4096)}, 'error', {_field('$.state.error', 4096)}, "
    "'input', json_object(" + ", ".join(f"'{k}', {_field(f'$.state.input.{k}', 4096)}" for k in _ARGS) + ")"
    ")) END"
)
_DB_NAME = re.compile(r"^opencode(-[A-Za-z0-9._-]+)?\.db$")
PLACES = (Place("OpenCode", linux=("$XDG_DATA_HOME/opencode",), macos=("$XDG_DATA_HOME/opencode",),
                windows=("%USERPROFILE%/.local/share/opencode", "%LOCALAPPDATA%/opencode"),
                globs=("opencode.db", "opencode-*.db")),)  # sources.skip = ["opencode_db"]


def _row(table: str, keys: tuple[str, ...], values: tuple[Any, ...]) -> dict[str, Any]:
    return {"table": table, **dict(zip(keys, values, strict=False))}


def _changed(tables: set[str]) -> str:
    """The ids of the sessions with a row updated at or after ``?1``."""
    parts = [f"SELECT session_id FROM {t} WHERE time_updated >= ?1" for t in _STAMPED if t in tables]
    return " UNION ".join([*parts, "SELECT id FROM session WHERE time_updated >= ?1"])


def gather(unit: PurePath, ctx: CursorContext, look: Look) -> Input:
    """The rows of every session changed at or after the cursor's ``read_end`` (all of them the first time),
    from the tables this database has (OpenCode 1.2+: ``message``/``part``; OpenCode 2: ``session_message``)."""
    tables = {str(r[0]) for r in look.rows(unit, _TABLES)}
    if "session" not in tables:
        return Input(name=str(unit), context=ctx)
    changed, since = _changed(tables), (ctx.read_end,)
    sql = ("SELECT s.id, s.parent_id, s.directory, s.title, s.time_updated, p.worktree FROM session s LEFT JOIN "
           f"project p ON p.id = s.project_id WHERE s.id IN ({changed})")
    rows = [_row("session", _SESSION, values) for values in look.rows(unit, sql, since)]
    for table, columns in _COLUMNS.items():
        if table in tables:
            cols = ", ".join(_PART_DATA if table == "part" and c == "data" else c for c in columns)
            sql = f"SELECT {cols} FROM {table} WHERE session_id IN ({changed})"
            rows.extend(_row(table, columns, values) for values in look.rows(unit, sql, since))
    return Input(name=str(unit), context=ctx, rows=rows)


def _data(row: Mapping[str, Any]) -> dict[str, Any] | None:
    raw = row.get("data")
    value = loads(raw) if isinstance(raw, str | bytes) else raw
    return dict(value) if isinstance(value, dict) else None


def _stamp(row: Mapping[str, Any]) -> int:
    value = row.get("time_updated")
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def parse(inp: Input) -> Parsed:
    """The exchanges of the sessions whose rows are in ``inp.rows``; ``read_end`` moves to the newest row read."""
    ledger = Ledger()
    sessions: dict[str, Session] = {}
    messages: dict[str, Message] = {}
    by_session: dict[str, list[Message]] = {}
    newest = inp.context.read_end
    parts: list[Mapping[str, Any]] = []
    v2: list[Mapping[str, Any]] = []
    for row in inp.rows:
        newest = max(newest, _stamp(row))
        table, rid = row.get("table"), as_str(row.get("id"))
        if table == "session":
            info = {"id": rid, "directory": row.get("directory"), "title": row.get("title"),
                    "parentID": row.get("parent_id")}
            sessions[rid] = session_of(info, rid, as_str(row.get("worktree")))
        elif table == "message":
            data = _data(row)
            if data is None:
                ledger.skipped(f"message:{rid}", "not a JSON object")
                continue
            msg = Message(rid, f"message:{rid}", {**data, "id": rid})
            messages[rid] = msg
            by_session.setdefault(as_str(row.get("session_id")), []).append(msg)
        elif table == "part":
            parts.append(row)
        elif table == "session_message":
            v2.append(row)
        else:
            ledger.skipped(f"{as_str(table) or 'row'}:{rid}", "not a session row")
    for row in parts:
        ref, data = f"part:{as_str(row.get('id'))}", _data(row)
        owner = messages.get(as_str(row.get("message_id")))
        if data is None or owner is None:
            ledger.skipped(ref, "not a JSON object" if data is None else "part of no message read")
            continue
        owner.parts.append((ref, {**data, "id": row.get("id")}))
    legacy = set(by_session)
    for row in v2:
        sid = as_str(row.get("session_id"))
        if as_str(row.get("id")).startswith(BACKFILL_PREFIX) and sid in legacy:
            ledger.skipped(f"session_message:{as_str(row.get('id'))}", "copy of an OpenCode 1 message")
            continue
        by_session.setdefault(sid, []).extend(messages_of(row))
    out: list[Exchange] = []
    for sid in sorted(by_session):
        out.extend(read_session(sessions.get(sid) or Session(sid), by_session[sid], ledger))
    return Parsed(out, ledger, replace(inp.context, format=NAME, read_end=newest))


def rows_of(tables: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Rows as ``gather`` hands them to ``parse``, from ``{table: [row...]}`` (a test's or a tool's own read)."""
    return [{"table": table, **row} for table, rows in tables.items() for row in rows]


def detect(probe: Probe) -> bool:
    """An SQLite file named ``opencode.db`` or ``opencode-<channel>.db``."""
    return bool(_DB_NAME.match(probe.base)) and probe.head.startswith(b"SQLite format 3\x00")


FORMAT = Format(NAME, "rows", detect, parse, names=("opencode.db", "opencode-dev.db", "opencode-local.db"),
                summary="OpenCode sessions in its database (1.2+)",
                places=PLACES, ids="message", gather=gather)
