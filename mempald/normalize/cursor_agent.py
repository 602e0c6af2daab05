"""The ``cursor-agent`` CLI's chat stores (Cursor's terminal agent), read live from their SQLite databases (a
``rows`` format: the unit is one chat's ``store.db``; read through the intake's ``Look.rows``, never opened here).

Where: ``~/.cursor/chats/<md5 of the workspace path>/<agent id>/store.db`` (WAL mode), one database a chat.
Tables ``meta (key TEXT PRIMARY KEY, value TEXT)`` and ``blobs (id TEXT PRIMARY KEY, data BLOB)``:

- ``meta`` key ``"0"``: hex-encoded JSON ``{agentId, latestRootBlobId, name, mode, createdAt, lastUsedModel}``
  (``name`` is "New Agent" until the chat is named);
- ``blobs``: content-addressed (``id`` = SHA-256 of ``data``, hex). The root blob (``latestRootBlobId``) is a
  protobuf message listing the chat's message blobs in order (``cursor_agent_blobs.root_of``); a new root is
  written each time the chat grows and the meta row then names it; earlier roots stay in the table;
- a message blob is JSON: ``{"role": "user", "content": str | [{type: "text", text}]}`` (Cursor's injected
  ``<user_info>`` (OS, shell, ``Workspace Path:``), rules, attached files around ``<user_query>...</user_query>``:
  often a separate user message before the one holding the query), ``{"id", "role": "assistant", "content":
  [{type: "text"|"reasoning"|"redacted-reasoning"|"tool-call" {toolCallId, toolName, args}}]}``, ``{"role":
  "tool", "content": [{type: "tool-result", toolCallId, toolName, result, isError}]}``, ``{"role": "system"}``.

Verified against public material (library ``code`` corpus): the path layout, md5 folder and both tables in
yashas-salankimatt/sidecar ``docs/plans/cursor-cli-adapter.md`` and several independent readers (Go, Rust,
TypeScript); the root blob's fields 1 (32-byte child digests, in order), 4 (provisional message) and 9
(workspace ``file://`` URI) in a Python reader's strict protobuf scan and its production-shaped test store; the
hex meta and ``latestRootBlobId`` in cursor-agent's own bundled code (``SQLiteBlobStoreWithMetadata``); the
``Workspace Path:`` line of ``<user_info>`` and ``<user_query>`` extraction in a Rust reader's tests. Per-message
timestamps are not stored: every exchange carries the chat's ``createdAt``.

Incremental (``ids="message"``): an exchange's key is ``cursor_bubbles.prompt_key(agent id, typed prompt, seen)``
with source kind ``cursor`` and the agent id as session, as a copy of the same chat read elsewhere (its
agent transcript) keys it, so both land on the same drawers. The context's ``since`` counts the root's children
already read: those are looked at by their first bytes only (their user prompts read whole, to count repeated
prompts), the rest read whole in batches of ``BATCH_BYTES``; the last exchange is read again next time (its answer
may still grow). A child blob not written yet holds its exchange back. A chat with no workspace (no field 9, no
``Workspace Path:``, no ``~/.cursor/projects`` folder whose path has the chat folder's md5) is filed under the
format's name. A root blob that does not decode is a damaged store (``StoreDamaged``, a ``sqlite3`` error: the
intake counts it, logs it once and reads the store again when it changes).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import PurePath
from typing import Any

from mempald.normalize import cursor_agent_blobs as blobs
from mempald.normalize import cursor_bubbles as cb
from mempald.normalize.common import as_str
from mempald.normalize.cursor_agent_chat import HELD, Chat
from mempald.normalize.format import Format, Input, Look, Parsed, Place, Probe
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext

NAME = "cursor_agent"
SOURCE_KIND = "cursor"  # the drawers of Cursor's own store: a chat read from any copy lands on the same ones
DB_NAME = "store.db"
BATCH_BYTES = 32 << 20  # message bytes one gather reads whole at most (a larger exchange is still read whole)
PAGE = 128  # blob ids one statement asks for
LENGTHS = 512  # blob ids one statement asks the length of (read from the record header, not the blob)
STATEMENT_BYTES = 8 << 20  # blob bytes one statement reads at most (one larger blob is read alone)
HEAD = blobs.HEAD  # bytes of an already read message looked at (its role)
MAX_PROBES = 256  # folders looked at to resolve one project slug's dashes
_MAGIC = b"SQLite format 3\x00"


class StoreDamaged(sqlite3.DatabaseError):
    """A chat store whose content is damaged (its root blob does not decode): read again when it changes."""


def _in_chats(db: PurePath) -> bool:
    """``.../chats/<workspace hash>/<agent id>/store.db``: where cursor-agent keeps a chat."""
    return db.name == DB_NAME and len(db.parents) >= 3 and db.parents[2].name == "chats"


def beside(db: PurePath, ctx: CursorContext, look: Look) -> CursorContext:
    """A chat with no workspace yet: the ``~/.cursor/projects/<slug>`` folder whose path's md5 names the chat's
    folder (``/home/u/my-app`` -> ``home-u-my-app``: the dashes resolved against the folders that exist)."""
    if ctx.cwd or not _in_chats(db):
        return ctx
    wanted = db.parents[1].name.lower()
    for slug in look.entries(db.parents[3] / "projects"):
        found = _resolve(slug.split("-"), wanted, look)
        if found:
            return replace(ctx, cwd=found)
    return ctx


def _md5(path: str) -> str:
    return hashlib.md5(path.encode("utf-8"), usedforsecurity=False).hexdigest()


def _resolve(parts: list[str], wanted: str, look: Look, budget: int = MAX_PROBES) -> str:
    """The absolute path a project slug spells whose md5 is ``wanted`` (its dashes are slashes or dashes: each
    prefix tried against the folders that exist, at most ``budget`` of them); "" when none is."""
    plain = "/" + "/".join(parts)
    if _md5(plain) == wanted:
        return plain
    probes = [budget]

    def walk(base: str, at: int) -> str:
        for end in range(at + 1, len(parts) + 1):
            path = f"{base}/{'-'.join(parts[at:end])}"
            if end == len(parts):
                return path if _md5(path) == wanted else ""
            probes[0] -= 1
            if probes[0] < 0:
                return ""
            if look.is_dir(PurePath(path)):
                found = walk(path, end)
                if found:
                    return found
        return ""

    return walk("", 0)


def _pages(db: PurePath, sql: str, ids: list[str], look: Look, sizes: Mapping[str, int] | None = None,
           page: int = PAGE) -> list[tuple[Any, ...]]:
    """``sql`` over ``ids`` (once each), a short statement per page of ids: at most ``page`` of them and, when
    their ``sizes`` are known, ``STATEMENT_BYTES`` of blob (a larger blob is asked for alone)."""
    out: list[tuple[Any, ...]] = []
    part: list[str] = []
    size = 0
    for cid in dict.fromkeys(ids):
        more = int((sizes or {}).get(cid) or 0)
        if part and (len(part) >= page or size + more > STATEMENT_BYTES):
            out += look.rows(db, sql.format(",".join("?" * len(part))), tuple(part))
            part, size = [], 0
        part.append(cid)
        size += more
    if part:
        out += look.rows(db, sql.format(",".join("?" * len(part))), tuple(part))
    return out


def gather(db: PurePath, ctx: CursorContext, look: Look) -> Input:
    """The chat's metadata, root blob and the messages after ``ctx.since`` (the ones before by their first bytes,
    their user prompts whole), and in ``more`` whether a batch was cut short. Errors of the database (locked,
    corrupt, a table it no longer has) are ``sqlite3`` errors, the intake's to count and retry."""
    tables = {str(r[0]) for r in look.rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"meta", "blobs"} <= tables and not _in_chats(db):  # another program's store.db: not read
        return Input(name=str(db), context=ctx, rows=[{"table": "sqlite_master", "key": "tables",
                                                       "value": sorted(tables)}])
    rows: list[dict[str, Any]] = [{"table": "meta", "key": str(k), "value": v}
                                  for k, v in look.rows(db, "SELECT key, value FROM meta")]
    meta = _meta(rows)
    root_id = as_str(meta.get("latestRootBlobId"))
    if not root_id:
        return Input(name=str(db), context=ctx, rows=rows)
    found = look.rows(db, "SELECT data FROM blobs WHERE id = ?", (root_id,))
    rows.append({"table": "blobs", "key": root_id, "value": found[0][0] if found else None, "part": "root"})
    if not found:
        return Input(name=str(db), context=ctx, rows=rows)
    try:
        root = blobs.root_of(found[0][0])
    except blobs.RootError as exc:
        raise StoreDamaged(f"{db}: its root blob {root_id[:12]} does not decode ({exc})") from None
    agent = as_str(meta.get("agentId")) or db.parent.name
    since = ctx.since if ctx.session_id == agent and ctx.since <= len(root.children) else 0
    # a blob's length is read without reading the blob; its first bytes (its role) and the whole of the ones
    # wanted in statements of at most STATEMENT_BYTES, so none holds its read snapshot long
    lengths = {str(i): int(n or 0) for i, n in _pages(
        db, "SELECT id, length(data) FROM blobs WHERE id IN ({})", list(root.children), look, page=LENGTHS)}
    heads = {str(i): (lengths.get(str(i), 0), h) for i, h in _pages(
        db, f"SELECT id, substr(data, 1, {HEAD}) FROM blobs WHERE id IN ({{}})", list(root.children), look,
        lengths)}
    want: list[str] = []
    size, cut = 0, len(root.children)
    for n, cid in enumerate(root.children):
        length, head = heads.get(cid, (0, b""))
        user = isinstance(head, bytes) and blobs.may_be_user(head)
        if n >= since and size >= BATCH_BYTES and user and n > since:
            cut = n
            break
        if n >= since or user:
            want.append(cid)
            size += length if n >= since and isinstance(length, int) else 0
    whole = dict(_pages(db, "SELECT id, data FROM blobs WHERE id IN ({})", want, look, lengths))
    for n, cid in enumerate(root.children[:cut]):
        part = "missing" if cid not in heads else "before" if n < since else "whole"
        value = whole.get(cid, heads.get(cid, (0, None))[1])
        rows.append({"table": "blobs", "key": f"{cid}@{n}", "value": value, "part": part, "n": n})
    others = look.rows(db, "SELECT count(*) FROM blobs")
    rest = int(others[0][0]) - len(set(root.children)) - 1 if others else 0
    if rest > 0:  # the earlier roots (one a turn), read by no one: counted
        rows.append({"table": "blobs", "key": f"({rest} not in the chat)", "value": rest, "part": "others"})
    return Input(name=str(db), context=replace(ctx, since=since), rows=rows, more=cut < len(root.children))


def _meta(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The chat's metadata: key ``"0"`` decoded, and any other key (a plain key per field) as written."""
    out: dict[str, Any] = {}
    for row in rows:
        if row.get("table") != "meta":
            continue
        if row["key"] == "0":
            out.update(blobs.meta_of(row["value"]) or {})
        elif isinstance(row["value"], str):
            out.setdefault(row["key"], row["value"])
    return out


def parse(inp: Input) -> Parsed:
    """The exchanges of the messages ``gather`` read (module docstring)."""
    ledger = Ledger()
    ctx = inp.context
    meta = _meta(inp.rows)
    for row in inp.rows:
        if row.get("table") == "meta":
            if row["key"] != "0" or blobs.meta_of(row["value"]) is not None:
                ledger.folded(f"meta/{row['key']}", "", "chat metadata")
            else:
                ledger.skipped(f"meta/{row['key']}", "metadata not hex JSON")
        elif row.get("table") == "sqlite_master":
            ledger.skipped("sqlite_master/tables", "not a cursor-agent chat store (no meta and blobs tables)")
    agent = as_str(meta.get("agentId")) or PurePath(inp.name.replace("\\", "/")).parent.name
    root_row = next((r for r in inp.rows if r.get("part") == "root"), None)
    if root_row is None:  # no chat yet (no root blob named): its metadata is accounted for above
        return Parsed([], ledger, replace(ctx, format=NAME))
    ref = f"blobs/{root_row['key']}"
    try:
        root = blobs.root_of(root_row["value"])
    except blobs.RootError as exc:
        ledger.skipped(ref, f"root blob not written yet or damaged ({exc})")
        return Parsed([], ledger, replace(ctx, format=NAME))
    ledger.folded(ref, "", "the chat's message list")
    name = as_str(meta.get("name"))
    chat = Chat(agent, root.workspace or ctx.cwd, name if name not in ("", "New Agent") else "",
                cb.iso_of(meta.get("createdAt")), ledger)
    read = [r for r in inp.rows if r.get("part") in ("before", "whole", "missing")]
    for row in read:
        if chat.stopped:
            ledger.skipped(f"blobs/{row['key']}", HELD)
        else:
            chat.add(f"blobs/{row['key']}", row)
    for row in inp.rows:
        if row.get("part") == "others":
            ledger.skipped(f"blobs/{row['key']}", "the chat's earlier states (not read)")
    exchanges = chat.finish()
    last = read[-1]["n"] + 1 if read else ctx.since
    since, position = chat.resume(last if inp.more and not chat.stopped else None)
    cwd = chat.cwd or ctx.cwd
    out = [replace(e, cwd=cwd or None, project=cwd or None) for e in exchanges]
    return Parsed(out, ledger, replace(ctx, format=NAME, session_id=agent, cwd=cwd, since=since, position=position,
                                       title=chat.title or ctx.title))


def detect(probe: Probe) -> bool:
    """A ``store.db`` (a SQLite database by its first bytes)."""
    return probe.base == DB_NAME and (not probe.head or probe.head.startswith(_MAGIC))


PLACES = (Place("Cursor Agent (CLI)", linux=("~/.cursor/chats",), macos=("~/.cursor/chats",),
                windows=("%USERPROFILE%/.cursor/chats",), globs=("*/*/store.db",)),)

FORMAT = Format(NAME, "rows", detect, parse, names=(DB_NAME,), summary="The cursor-agent CLI's chat stores (store.db)",
                agent="cursor", places=PLACES, ids="message", beside=beside, gather=gather)
