"""Cursor's own chat store, read live from the editor's SQLite database ``state.vscdb`` (a ``rows`` format: the
unit is the database; it is read through the intake's ``Look.rows``, never opened here).

Where (``User/`` is ``~/.config/Cursor/User``, ``~/Library/Application Support/Cursor/User``,
``%APPDATA%\\Cursor\\User``):

- ``globalStorage/state.vscdb``, table ``cursorDiskKV`` (``key TEXT UNIQUE, value BLOB``): a conversation is
  ``composerData:<composerId>`` (``{_v, composerId, name, createdAt, lastUpdatedAt, status,
  fullConversationHeadersOnly: [{bubbleId, type}], workspaceIdentifier?}``; older releases inline the bubbles
  in ``conversation: [...]``), one message is ``bubbleId:<composerId>:<bubbleId>`` (``cursor_bubbles``);
- ``workspaceStorage/<hash>/state.vscdb``, table ``ItemTable``: ``composer.composerData`` lists the
  conversations of that workspace (``allComposers[].composerId``), ``workspace.json`` beside it names the
  folder (``{"folder": "file:///..."}``): the wing. Releases before the composer kept chats in
  ``workbench.panel.aichat.view.aichat.chatdata`` (``{tabs: [{tabId, chatTitle, bubbles: [{type: user|ai,
  id, text}]}]}``), read here too.

Incremental: Cursor writes every row with ``INSERT OR REPLACE``, so a written row takes the next row id;
``gather`` looks at the keys of the rows from the context's ``since`` on (a row id; the row at ``since`` again,
as a row replaced while it was the newest keeps its id) and reads the conversations they belong to whole, in
batches of ``BATCH_BYTES``, one short statement each (nothing else in the database is read: it also holds the
editor's tokens). Exchange keys come from the conversation's own messages (``ids="message"``): its prompt's
digest (``cursor_bubbles.prompt_key``: a SpecStory history of the same conversation gets the same keys, so it is
not stored twice), the bubble id for a message with no prompt; a conversation read again stores only its new
exchanges. A conversation still ``generating`` keeps its last exchange back (its answer may still grow) and
holds ``since`` at its newest row; a bubble its headers name that is not written yet is treated the same way.
A chat with no workspace goes to the wing ``cursor``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any

from mempald.normalize import copilot
from mempald.normalize import cursor_bubbles as cb
from mempald.normalize.common import add_unique, as_str
from mempald.normalize.cursor_transcript_text import CURSORS_OWN, cursors_own
from mempald.normalize.format import Format, Input, Look, Parsed, Place, Probe, loads
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange

SOURCE_KIND = "cursor"
DB_NAME = "state.vscdb"
COMPOSER = "composerData:"
BUBBLE = "bubbleId:"
LEGACY_CHAT = "workbench.panel.aichat.view.aichat.chatdata"
PANEL_SESSIONS = "interactive.sessions"  # the chat panel's sessions (VS Code's shape: ``copilot``)
WORKSPACE_COMPOSERS = "composer.composerData"
STALE_MS = 10 * 60_000  # a conversation still "generating" this long before the newest one read was left so
BATCH_BYTES = 8 << 20  # the bubbles one gather reads at most (a larger conversation is still read whole)
_MAGIC = b"SQLite format 3\x00"
SCAN_ROWS = 5000  # row ids one gather looks at, at most (their keys only: a short statement)
PAGE_ROWS = 64  # messages one statement reads
_SCAN = "SELECT rowid, key FROM cursorDiskKV WHERE rowid >= ? ORDER BY rowid LIMIT ?"


def _prefix_end(prefix: str) -> str:
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _tables(db: PurePath, look: Look) -> set[str]:
    return {str(r[0]) for r in look.rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'")}


def _workspace_folder(folder: PurePath, look: Look) -> str:
    data = loads(look.read(folder / "workspace.json", 1 << 16) or b"")
    if not isinstance(data, dict):
        return ""
    return cb.path_of_uri(data.get("folder") or data.get("workspace"))


def beside(db: PurePath, ctx: CursorContext, look: Look) -> CursorContext:
    """A workspace database's folder (``workspace.json`` next to it) is the cwd of its chats."""
    folder = _workspace_folder(db.parent, look)
    return replace(ctx, cwd=folder) if folder and folder != ctx.cwd else ctx


def _workspaces(db: PurePath, wanted: set[str], look: Look) -> list[dict[str, Any]]:
    """Rows naming the workspace folder of the conversations in ``wanted`` (a global database's chats are
    listed by the workspace databases next to it)."""
    storage = db.parent.parent / "workspaceStorage"
    out: list[dict[str, Any]] = []
    for name in look.entries(storage) if wanted else ():
        ws = storage / name
        if not look.is_file(ws / DB_NAME):
            continue
        folder = _workspace_folder(ws, look)
        try:
            rows = look.rows(ws / DB_NAME, "SELECT value FROM ItemTable WHERE key = ?", (WORKSPACE_COMPOSERS,))
        except (OSError, sqlite3.Error):
            continue  # a workspace database that cannot be read now only loses its folder name
        data = loads(rows[0][0]) if rows and isinstance(rows[0][0], str | bytes) else None
        listed = data.get("allComposers") if isinstance(data, dict) else None
        for item in listed if isinstance(listed, list) else []:
            cid = as_str(item.get("composerId")) if isinstance(item, dict) else ""
            if cid in wanted and folder:
                out.append({"table": "workspace", "key": cid, "value": folder})
                wanted.discard(cid)
    return out


def _conversation_of(key: str) -> str | None:
    """The conversation a ``cursorDiskKV`` key belongs to (None: not a conversation's row)."""
    if key.startswith(COMPOSER):
        return key[len(COMPOSER):]
    if key.startswith(BUBBLE) and key.count(":") >= 2:
        return key.split(":", 2)[1]
    return None


def _conversation_rows(db: PurePath, cid: str, look: Look) -> list[dict[str, Any]]:
    """A conversation's header and messages, with their row ids: pages of ``PAGE_ROWS`` messages by key, each a
    short statement (a long agent chat's tool outputs can weigh megabytes)."""
    found = look.rows(db, "SELECT rowid, key, value FROM cursorDiskKV WHERE key = ?", (COMPOSER + cid,))
    start, end = f"{BUBBLE}{cid}:", _prefix_end(f"{BUBBLE}{cid}:")
    sql = "SELECT rowid, key, value FROM cursorDiskKV WHERE key {} ? AND key < ? ORDER BY key LIMIT ?"
    first = True
    while True:
        page = look.rows(db, sql.format(">=" if first else ">"), (start, end, PAGE_ROWS))
        found += page
        if len(page) < PAGE_ROWS:
            break
        start, first = str(page[-1][1]), False
    return [{"table": "cursorDiskKV", "rowid": rowid, "key": str(k), "value": v} for rowid, k, v in found]


def gather(db: PurePath, ctx: CursorContext, look: Look) -> Input:
    """The rows of the conversations written since ``ctx.since`` (a row id; module docstring), and in the
    returned context how far they cover. Errors of the database (locked, corrupt: a ``sqlite3.Error`` from
    ``Look.rows``) are the intake's to count and retry."""
    ctx = beside(db, ctx, look)  # (a workspace database's folder, whether or not the intake asked already)
    tables = _tables(db, look)
    rows: list[dict[str, Any]] = []
    more = False
    progress: tuple[int, int] | None = None
    if "cursorDiskKV" in tables:
        # Cursor writes a row with ``INSERT OR REPLACE``: a written row takes the next row id, so the rows written
        # since the last read are those from ``since`` on (the row at ``since`` included: a row replaced while it
        # was the newest keeps its id). Their conversations are read whole, one short statement each.
        seen: set[str] = set()
        size, covered = 0, ctx.since
        scanned = look.rows(db, _SCAN, (ctx.since, SCAN_ROWS))
        more = len(scanned) >= SCAN_ROWS  # (rows after the last one scanned: the next batch's)
        for rowid, key in scanned:
            cid = _conversation_of(str(key))
            if cid is not None and cid not in seen:
                seen.add(cid)
                got = _conversation_rows(db, cid, look)
                rows += got
                size += sum(len(r["value"]) for r in got if isinstance(r["value"], str | bytes))
            covered = int(rowid)
            if size >= BATCH_BYTES and covered > ctx.since:
                more = True
                break  # the rest from ``covered`` on is the next batch's
        ctx = replace(ctx, since=covered)  # what this batch covers (``parse`` holds it back for a chat not whole)
        if more:  # how far a backfill has come (``status``): the newest row id, from the table's b-tree at once
            last = look.rows(db, "SELECT max(rowid) FROM cursorDiskKV")
            top = int(last[0][0]) if last and isinstance(last[0][0], int) else covered
            progress = (covered, max(top, covered))
        wanted = {str(r["key"])[len(COMPOSER):] for r in rows if str(r["key"]).startswith(COMPOSER)}
        rows += _workspaces(db, wanted, look)
    if "ItemTable" in tables:
        rows += [{"table": "ItemTable", "key": str(k), "value": v} for k, v in
                 look.rows(db, "SELECT key, value FROM ItemTable WHERE key IN (?, ?)", (LEGACY_CHAT, PANEL_SESSIONS))]
    return Input(name=str(db), context=ctx, rows=rows, more=more, progress=progress)


@dataclass
class _Conv:
    """What one conversation's reading builds."""

    cid: str
    cwd: str | None
    title: str
    created: Any
    ledger: Ledger
    out: list[Exchange] = field(default_factory=list)
    user: str = ""
    key: str = ""
    when: Any = None
    answer: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    attached: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)  # prompt keys given so far (cursor_bubbles.prompt_key)
    by_prompt: bool = True  # keys from the prompt (composer conversations); else the message's own id

    def close(self) -> None:
        if self.key and (self.user or self.answer):
            extra = (("attachments", "\n".join(self.attached)),) if self.attached else ()
            self.out.append(Exchange(
                SOURCE_KIND, self.cid, self.key, self.user, "\n\n".join(self.answer),
                timestamp=cb.iso_of(self.when) or cb.iso_of(self.created), cwd=self.cwd, agent=SOURCE_KIND,
                title=self.title or None, position=len(self.out), tools=tuple(self.tools), files=tuple(self.files),
                extra=extra, project=self.cwd))
        self.user, self.key, self.when = "", "", None
        self.answer, self.tools, self.files, self.attached, self.refs = [], [], [], [], []

    def bubble(self, ref: str, bubble: dict[str, Any], kind: int, bid: str) -> None:
        own = cursors_own(as_str(bubble.get("text"))) if kind == cb.USER else None
        if own is not None:  # Cursor's own message in a user bubble: its answer goes on with the open exchange
            if not self.key:
                return self.ledger.skipped(ref, CURSORS_OWN)
            self.answer += [own.note] if own.note else []
            self.ledger.folded(ref, self.key, CURSORS_OWN)
            return self.refs.append(ref)
        if kind == cb.USER:
            self.close()
            self.when, self.user = bubble.get("createdAt"), cb.user_text(bubble)
            self.key = cb.prompt_key(self.cid, self.user, self.seen) if self.by_prompt and self.user else bid
            self.attached = cb.attachments(bubble)
            if self.user or self.attached:
                self.ledger.stored(ref, self.key)
            else:
                self.ledger.skipped(ref, "empty prompt")
            self.refs.append(ref)
            return
        parts, tools, files = cb.answer_parts(bubble, self.cwd)
        if not parts:
            self.ledger.skipped(ref, "thinking only" if cb.has_thinking(bubble) else "empty message")
            return
        if not self.key:
            self.key, self.when = bid, bubble.get("createdAt")  # an answer before any prompt: kept, no prompt
        self.answer += parts
        for t in tools:
            add_unique(self.tools, t)
        for f in files:
            add_unique(self.files, f)
        if tools and not as_str(bubble.get("text")).strip():
            self.ledger.folded(ref, self.key, "tool call")
        else:
            self.ledger.stored(ref, self.key)
        self.refs.append(ref)

    def hold_back(self, reason: str) -> None:
        """The open exchange is not kept now (its answer may still grow): read again next time."""
        for ref in self.refs:
            self.ledger.entries = [a for a in self.ledger.entries if a.ref != ref]
            self.ledger.skipped(ref, reason)
        self.key, self.refs = "", []


def _value(raw: Any) -> Any:
    return loads(raw) if isinstance(raw, str | bytes) else None


def _composer(cid: str, data: dict[str, Any], bubbles: Mapping[str, tuple[str, Any]], folders: Mapping[str, str],
              ctx: CursorContext, ledger: Ledger, used: set[str], newest: int) -> tuple[list[Exchange], bool]:
    """A conversation's exchanges, and whether it was read whole (False: read it again next time). ``newest``:
    the latest update of any conversation read with it (a conversation "generating" for longer than
    ``STALE_MS`` before it was left so by an editor that stopped: it is read as it is)."""
    ident = data.get("workspaceIdentifier")
    cwd = (cb.path_of_uri(ident.get("uri")) if isinstance(ident, dict) else "") or folders.get(cid) or ctx.cwd
    conv = _Conv(cid, cwd or None, as_str(data.get("name")), data.get("createdAt"), ledger)
    updated = data.get("lastUpdatedAt")
    stale = isinstance(updated, int) and updated < newest - STALE_MS
    generating = as_str(data.get("status")) == "generating" and not stale
    inline = data.get("conversation")
    headers = data.get("fullConversationHeadersOnly")
    use_inline = isinstance(inline, list) and bool(inline)
    items: list[Any] = []
    if isinstance(inline, list) and inline:
        items = inline
    elif isinstance(headers, list):
        items = headers
    whole = True
    for n, head in enumerate(items):
        if not isinstance(head, dict):
            continue
        bid = as_str(head.get("bubbleId")) or f"{n}"
        if use_inline:
            ref, bubble = f"{COMPOSER}{cid}/conversation[{n}]", head
        elif bid in used:
            continue  # a header listing a message twice: it is read once
        elif bid in bubbles:
            ref, bubble = bubbles[bid][0], _value(bubbles[bid][1])
            used.add(bid)
        else:
            if generating:
                whole = False
                break
            continue  # a message deleted since (a checkpoint restored): the rest is read
        if not isinstance(bubble, dict):
            ledger.skipped(ref, "not a message (null or not JSON)")
            continue
        kind = bubble.get("type", head.get("type"))
        if kind not in (cb.USER, cb.ASSISTANT):
            ledger.skipped(ref, f"unknown message type {kind!r}")
            continue
        conv.bubble(ref, bubble, kind, bid)
    if generating or not whole:
        conv.hold_back("still being written (read again when it changes)")
        whole = False
    conv.close()
    return conv.out, whole


def _legacy(key: str, raw: Any, ctx: CursorContext, ledger: Ledger) -> list[Exchange]:
    """The chat tabs of releases before the composer (``LEGACY_CHAT``)."""
    data = _value(raw)
    tabs = data.get("tabs") if isinstance(data, dict) else None
    if not isinstance(tabs, list):
        ledger.skipped(f"ItemTable/{key}", "no chat tabs (unknown shape)")
        return []
    out: list[Exchange] = []
    for t, tab in enumerate(tabs):
        if not isinstance(tab, dict):
            continue
        tid = as_str(tab.get("tabId")) or f"tab{t}"
        conv = _Conv(tid, ctx.cwd or None, as_str(tab.get("chatTitle")), tab.get("lastSendTime"), ledger,
                     by_prompt=False)
        bubbles = tab.get("bubbles")
        for n, bubble in enumerate(bubbles if isinstance(bubbles, list) else []):
            ref = f"ItemTable/{key}/{tid}/{n}"
            if not isinstance(bubble, dict):
                ledger.skipped(ref, "not a message")
                continue
            kind = {"user": cb.USER, "ai": cb.ASSISTANT}.get(as_str(bubble.get("type")))
            if kind is None:
                ledger.skipped(ref, f"unknown message type {bubble.get('type')!r}")
                continue
            text = as_str(bubble.get("text")) or as_str(bubble.get("rawText"))
            conv.bubble(ref, {**bubble, "text": text}, kind, as_str(bubble.get("id")) or f"{tid}:{n}")
        conv.close()
        out += conv.out
    return out


def _panel(key: str, raw: Any, ctx: CursorContext, ledger: Ledger, name: str) -> list[Exchange]:
    """The chat panel's sessions (``PANEL_SESSIONS``: a list of VS Code chat sessions): Cursor's own in Cursor's
    store, GitHub Copilot's in VS Code's (releases before ``chatSessions/``)."""
    data = _value(raw)
    if not isinstance(data, list):
        ledger.skipped(f"ItemTable/{key}", "no chat sessions (unknown shape)")
        return []
    agent = copilot.SOURCE_KIND if "/Code" in name.replace("\\", "/") else SOURCE_KIND
    out: list[Exchange] = []
    for n, session in enumerate(data):
        where = f"ItemTable/{key}/{n}/"
        if not isinstance(session, dict):
            ledger.skipped(where.rstrip("/"), "not a chat session")
            continue
        sid = as_str(session.get("sessionId")) or f"{key}:{n}"
        out += copilot.session_exchanges(session, sid, ctx, ledger, where=where, agent=agent)
    return out


def parse(inp: Input) -> Parsed:
    """The exchanges of the rows ``gather`` read. The context's ``since`` (where ``gather`` says its rows cover
    up to) is held at the newest row of a conversation not read whole, so that one is read again."""
    ledger = Ledger()
    ctx = inp.context
    newest: dict[str, int] = {}  # conversation -> its newest row id read
    composers: list[tuple[str, dict[str, Any], str]] = []
    bubbles: dict[str, dict[str, tuple[str, Any]]] = {}
    folders: dict[str, str] = {}
    out: list[Exchange] = []
    for row in inp.rows:
        table, key, raw = as_str(row.get("table")), as_str(row.get("key")), row.get("value")
        ref = f"{table}/{key}"
        rowid, cid_of = row.get("rowid"), _conversation_of(key) if table == "cursorDiskKV" else None
        if isinstance(rowid, int) and cid_of is not None:
            newest[cid_of] = max(newest.get(cid_of, 0), rowid)
        if table == "workspace":
            folders[key] = as_str(raw)
            ledger.folded(ref, "", "workspace folder")
        elif table == "ItemTable" and key == LEGACY_CHAT:
            out += _legacy(key, raw, ctx, ledger)
        elif table == "ItemTable" and key == PANEL_SESSIONS:
            out += _panel(key, raw, ctx, ledger, inp.name)
        elif key.startswith(COMPOSER):
            data = _value(raw)
            if isinstance(data, dict):
                composers.append((key[len(COMPOSER):], data, ref))
            else:
                ledger.skipped(ref, "conversation header not JSON")
        elif key.startswith(BUBBLE) and key.count(":") >= 2:
            _, cid, bid = key.split(":", 2)
            bubbles.setdefault(cid, {})[bid] = (ref, raw)
        else:
            ledger.skipped(ref, "not a conversation row")
    since = ctx.since
    held: list[int] = []
    latest = max((u for _c, d, _r in composers if isinstance(u := d.get("lastUpdatedAt"), int)), default=0)
    for cid, data, ref in composers:
        used: set[str] = set()
        exchanges, whole = _composer(cid, data, bubbles.get(cid, {}), folders, ctx, ledger, used, latest)
        ledger.folded(ref, exchanges[0].key if exchanges else "", "conversation header")
        for bid, (bref, _raw) in bubbles.pop(cid, {}).items():
            if bid not in used:
                ledger.skipped(bref, "not in its conversation's messages")
        out += exchanges
        if not whole and cid in newest:
            held.append(newest[cid])
    for rest in bubbles.values():
        for bref, _raw in rest.values():
            ledger.skipped(bref, "its conversation header is missing")
    if held:
        since = min(since, *held)
    return Parsed(out, ledger, replace(ctx, format=SOURCE_KIND, since=since))


def detect(probe: Probe) -> bool:
    """An editor's ``state.vscdb`` (a SQLite database by its first bytes)."""
    return probe.base == DB_NAME and (not probe.head or probe.head.startswith(_MAGIC))


PLACES = (Place("Cursor", linux=("$XDG_CONFIG_HOME/Cursor/User",),
                macos=("~/Library/Application Support/Cursor/User",), windows=("%APPDATA%/Cursor/User",),
                globs=("globalStorage/state.vscdb", "workspaceStorage/*/state.vscdb")),)

FORMAT = Format(SOURCE_KIND, "rows", detect, parse, names=(DB_NAME,), summary="Cursor's chat store (state.vscdb)",
                agent=SOURCE_KIND,
                places=PLACES, ids="message", beside=beside, gather=gather)
