"""Agent cowork: a durable per-project inbox between Claude Code and Codex, and a read-only peek at the
partner's live session.

Inbox
    One inbox per (target agent, project cwd), kept in the daemon's SQLite database so a message survives a
    daemon restart. ``push`` checks the caps and inserts in one ``BEGIN IMMEDIATE`` transaction; ``drain``
    selects and deletes in one transaction, so a crash between reading and deleting can neither lose nor
    double-deliver a message (either both happen or neither). Delivery is at the partner's next prompt
    (the UserPromptSubmit hook drains), not real time.

Peek
    ``peek_partner`` finds the partner's most recently written transcript whose cwd is this project (Claude
    Code: ``~/.claude/projects/*/*.jsonl``; Codex: ``~/.codex/sessions/**/rollout-*.jsonl``) and returns its
    last exchanges, normalised by the same pure adapters the ingest uses. It reads only the tail of the
    file and never writes anything.

Every method here is blocking and short; the daemon calls them from a worker thread.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mempal.methods.vocab import AGENTS, SENDERS
from mempal.utf16 import units
from mempald.errors import InvalidInput, LimitExceeded, NotFound
from mempald.normalize.model import Exchange, Line
from mempald.sources.reader import open_regular, read_head
from mempald.text.redact import scrub

MAX_MESSAGE_BYTES = 8 * 1024
MAX_PENDING = 16
MAX_INBOX_BYTES = 32 * 1024

SCHEMA = """
CREATE TABLE IF NOT EXISTS cowork_inbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    target TEXT NOT NULL,
    cwd TEXT NOT NULL,
    sender TEXT NOT NULL,
    text TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS cowork_inbox_by_target ON cowork_inbox (target, cwd, id)
"""


def partner_of(agent: str) -> str:
    return "codex" if agent == "claude" else "claude"


def norm_cwd(cwd: str) -> str:
    """The inbox key for a project directory: absolute, symlinks resolved, no trailing slash."""
    if not isinstance(cwd, str) or not cwd.strip():
        raise InvalidInput("cwd must be a non-empty absolute path")
    path = os.path.expanduser(cwd.strip())
    if not os.path.isabs(path):
        raise InvalidInput(f"cwd must be an absolute path, got {cwd!r}")
    return os.path.realpath(path)


def check_agent(name: str, value: str, allowed: Sequence[str] = AGENTS) -> str:
    if value not in allowed:
        raise InvalidInput(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Message:
    id: int
    target: str
    cwd: str
    sender: str
    text: str
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "from": self.sender, "to": self.target, "cwd": self.cwd, "text": self.text,
                "created_at": self.created_at}


@dataclass(frozen=True, slots=True)
class Drained:
    messages: tuple[Message, ...]
    remaining: int  # still pending (they did not fit in the budget)


class CoworkInbox:
    """The inbox on a connection the caller owns (the daemon's state database).

    ``lock`` serialises this object's use of the connection; pass the lock the daemon already uses for it.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        lock: AbstractContextManager[Any] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._conn = conn
        self._lock: AbstractContextManager[Any] = lock if lock is not None else threading.RLock()
        self._clock = clock

    def ensure_schema(self) -> None:
        """Create the table and its index if they do not exist (idempotent)."""
        with self._lock, self._tx():
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    self._conn.execute(statement)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Cursor]:
        cur = self._conn.cursor()
        cur.row_factory = None  # independent of whatever row factory the daemon set
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
        except BaseException:
            self._conn.rollback()
            raise
        finally:
            if self._conn.in_transaction:
                self._conn.commit()
            cur.close()

    # writes --------------------------------------------------------------------------------------------
    def push(self, *, sender: str, target: str, cwd: str, text: str) -> Message:
        """Queue ``text`` for ``target`` in ``cwd``; refuses a push to oneself and anything over the caps."""
        check_agent("to", target)
        check_agent("from", sender, SENDERS)
        if sender == target:
            raise InvalidInput(f"{sender} cannot push to itself: send to {partner_of(sender)}")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("the message text is empty")
        # What is queued is what the partner may read: never a <private> span or a secret (redacted before the
        # row exists, so no copy is left in the database file or its WAL).
        text = scrub(text)
        if not text.strip():
            raise InvalidInput("the message holds nothing but <private> text")
        size = len(text.encode("utf-8"))
        if size > MAX_MESSAGE_BYTES:
            raise LimitExceeded(f"message is {size} bytes; the limit is {MAX_MESSAGE_BYTES} bytes "
                           "(shorten it, or save the details with ingest and push the drawer id)")
        key = norm_cwd(cwd)
        now = self._clock()
        with self._lock, self._tx() as cur:
            count, total = cur.execute(
                "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM cowork_inbox WHERE target = ? AND cwd = ?",
                (target, key)).fetchone()
            if count >= MAX_PENDING:
                raise LimitExceeded(f"{target}'s inbox for {key} is full ({count} pending messages, "
                               f"limit {MAX_PENDING}); it empties at {target}'s next prompt")
            if total + size > MAX_INBOX_BYTES:
                raise LimitExceeded(f"{target}'s inbox for {key} is full ({total} bytes pending, "
                               f"limit {MAX_INBOX_BYTES}); it empties at {target}'s next prompt")
            cur.execute("INSERT INTO cowork_inbox (target, cwd, sender, text, bytes, created_at) "
                        "VALUES (?,?,?,?,?,?)", (target, key, sender, text, size, now))
            msg_id = int(cur.lastrowid or 0)
        return Message(msg_id, target, key, sender, text, now)

    def drain(self, target: str, cwd: str, max_chars: int | None = None) -> Drained:
        """Remove and return the pending messages for ``target`` in ``cwd``, oldest first.

        With ``max_chars``, only the oldest messages whose texts fit in that many characters (UTF-16 code units,
        as the hook's host counts them) are taken (at
        least one message is never split: one that does not fit on its own stays for the next drain); the
        rest stay queued. Reading and deleting happen in one transaction.
        """
        check_agent("target", target)
        key = norm_cwd(cwd)
        with self._lock, self._tx() as cur:
            rows = cur.execute(
                "SELECT id, sender, text, created_at FROM cowork_inbox WHERE target = ? AND cwd = ? ORDER BY id",
                (target, key)).fetchall()
            taken: list[Message] = []
            used = 0
            for row in rows:
                size = units(row[2])  # as the host counts the context it is delivered in
                if max_chars is not None and used + size > max_chars:
                    break
                used += size
                taken.append(Message(row[0], target, key, row[1], row[2], row[3]))
            if taken:
                cur.executemany("DELETE FROM cowork_inbox WHERE id = ?", [(m.id,) for m in taken])
        return Drained(tuple(taken), len(rows) - len(taken))

    # reads ---------------------------------------------------------------------------------------------
    def pending(self, target: str, cwd: str) -> list[Message]:
        check_agent("target", target)
        key = norm_cwd(cwd)
        with self._lock:
            cur = self._conn.cursor()
            cur.row_factory = None
            rows = cur.execute(
                "SELECT id, sender, text, created_at FROM cowork_inbox WHERE target = ? AND cwd = ? ORDER BY id",
                (target, key)).fetchall()
            cur.close()
        return [Message(r[0], target, key, r[1], r[2], r[3]) for r in rows]

    def status(self, cwd: str) -> dict[str, Any]:
        """Both inboxes of ``cwd``, without draining them."""
        key = norm_cwd(cwd)
        inboxes: dict[str, Any] = {}
        for agent in AGENTS:
            msgs = self.pending(agent, key)
            inboxes[agent] = {
                "pending": len(msgs),
                "bytes": sum(len(m.text.encode("utf-8")) for m in msgs),
                "messages": [m.to_dict() for m in msgs],
            }
        return {"cwd": key, "inboxes": inboxes,
                "limits": {"message_bytes": MAX_MESSAGE_BYTES, "pending": MAX_PENDING, "inbox_bytes": MAX_INBOX_BYTES}}


# peek ------------------------------------------------------------------------------------------------------
_HEAD_BYTES = 256 * 1024  # how far into a transcript we look for its cwd
_MAX_CANDIDATES = 400  # transcripts examined per peek, newest first
_TAIL_START = 1024 * 1024
_TAIL_MAX = 32 * 1024 * 1024
PEEK_USER_CHARS = 2000
PEEK_ASSISTANT_CHARS = 4000


def claude_dir_name(cwd: str) -> str:
    """How Claude Code names a project's folder under ~/.claude/projects (every non-alphanumeric -> '-')."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def _newest_first(paths: Iterator[Path]) -> list[tuple[float, Path]]:
    """Regular files only (a FIFO, a socket or a device named like a transcript is never a candidate; what is
    opened is checked again: ``mempald.sources.reader.open_regular``)."""
    out: list[tuple[float, Path]] = []
    for p in paths:
        try:
            st = p.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append((st.st_mtime, p))
    out.sort(key=lambda t: -t[0])
    return out


def _claude_cwd(path: Path) -> str | None:
    """The cwd recorded in a Claude Code transcript's first lines."""
    try:
        head = read_head(path, _HEAD_BYTES)
    except OSError:  # (``Refused``: not a regular file)
        return None
    for raw in head.split(b"\n"):
        if b'"cwd"' not in raw:
            continue
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("cwd"), str):
            return str(rec["cwd"])
    return None


def _same_dir(recorded: str | None, key: str) -> bool:
    return recorded is not None and (recorded == key or os.path.realpath(recorded) == key)


def find_claude_session(projects: Path, cwd: str) -> Path | None:
    """The newest Claude Code transcript whose cwd is ``cwd`` (a folder's own name is tried first)."""
    seen: set[Path] = set()
    for name in dict.fromkeys((claude_dir_name(cwd), claude_dir_name(os.path.realpath(cwd)))):
        d = projects / name
        if d.is_dir():
            for _mtime, path in _newest_first(d.glob("*.jsonl")):
                seen.add(path)
                if _same_dir(_claude_cwd(path), cwd):
                    return path
    candidates = _newest_first(p for p in projects.glob("*/*.jsonl") if p not in seen)
    for _mtime, path in candidates[:_MAX_CANDIDATES]:
        if _same_dir(_claude_cwd(path), cwd):
            return path
    return None


def _first_line(path: Path) -> list[Line]:
    try:
        with open_regular(path) as fh:
            raw = fh.readline(16 * 1024 * 1024)
    except OSError:  # (``Refused``: not a regular file)
        return []
    return [Line(0, raw.rstrip(b"\n"))] if raw.strip() else []


def find_codex_session(sessions: Path, cwd: str) -> tuple[Path, dict[str, Any]] | None:
    """The newest Codex rollout whose ``session_meta`` cwd is ``cwd``, with that session_meta."""
    from mempald.normalize import codex

    candidates = _newest_first(sessions.rglob("rollout-*.jsonl")) if sessions.is_dir() else []
    for _mtime, path in candidates[:_MAX_CANDIDATES]:
        meta = codex.session_meta(_first_line(path))
        recorded = meta.get("cwd") if isinstance(meta, dict) else None
        if _same_dir(recorded if isinstance(recorded, str) else None, cwd):
            return path, meta
    return None


def read_tail(path: Path, window: int) -> tuple[list[Line], bool]:
    """Complete lines in the last ``window`` bytes of ``path`` with their true offsets; True if that is all."""
    with open_regular(path) as fh:  # ``Refused`` (an OSError) for a FIFO or a device, never waited on
        size = fh.seek(0, os.SEEK_END)
        start = max(0, size - window)
        fh.seek(start)
        data = fh.read(size - start)
    if start > 0:
        cut = data.find(b"\n")
        if cut < 0:
            return [], False
        start += cut + 1
        data = data[cut + 1 :]
    lines: list[Line] = []
    off = start
    for raw in data.split(b"\n"):
        if raw.strip():
            lines.append(Line(off, raw))
        off += len(raw) + 1
    if lines and not data.endswith(b"\n"):
        lines.pop()  # a partial last line: still being written
    return lines, start == 0


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _tail_exchanges(path: Path, n: int, parse: Callable[[list[Line]], list[Exchange]]) -> list[Exchange]:
    window = _TAIL_START
    while True:
        lines, whole = read_tail(path, window)
        found = [e for e in parse(lines) if e.kind not in ("note", "subagent")]
        if len(found) > n or whole or window >= _TAIL_MAX:
            # more than n: the first one may have been cut at the window's edge, the last n are whole
            return found[-n:]
        window *= 4


def peek_partner(cwd: str, partner: str, n: int, *, claude_projects: Path, codex_sessions: Path) -> dict[str, Any]:
    """The last ``n`` exchanges of ``partner``'s most recent session in ``cwd`` (read-only)."""
    check_agent("partner", partner)
    key = norm_cwd(cwd)
    session_id = ""
    if partner == "claude":
        from mempald.normalize import claude_code

        path = find_claude_session(claude_projects, key)
        if path is None:
            raise NotFound(f"no Claude Code session found for {key} under {claude_projects}")
        exchanges = _tail_exchanges(path, n, claude_code.parse_lines)
        session_id = path.stem
    else:
        from mempald.normalize import codex

        hit = find_codex_session(codex_sessions, key)
        if hit is None:
            raise NotFound(f"no Codex session found for {key} under {codex_sessions}")
        path, meta = hit
        sid = meta.get("session_id") or meta.get("id")
        session_id = sid if isinstance(sid, str) else ""
        exchanges = _tail_exchanges(path, n, lambda ls: codex.parse_lines(ls, session_id=session_id or None,
                                                                          cwd=key))
    try:
        mtime = path.stat().st_mtime
    except OSError:
        mtime = 0.0
    return {
        "partner": partner,
        "cwd": key,
        "session_id": session_id or (exchanges[-1].session_id if exchanges else ""),
        "path": str(path),
        "modified_at": mtime,
        "age_s": round(max(0.0, time.time() - mtime), 1),
        # the partner's own words leave to the other agent: <private> spans and secrets never do
        "exchanges": [
            {"user": _clip(scrub(e.user), PEEK_USER_CHARS), "assistant": _clip(scrub(e.assistant),
                                                                                PEEK_ASSISTANT_CHARS),
             "timestamp": e.timestamp, "kind": e.kind, "tools": list(e.tools)}
            for e in exchanges
        ],
    }
