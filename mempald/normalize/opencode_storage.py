"""OpenCode's storage folder (releases before 1.2, and every store not yet migrated): one small JSON file per
record under ``$XDG_DATA_HOME/opencode/storage/`` (``~/.local/share`` on Linux, macOS and Windows alike):

- ``project/<projectID>.json``: ``{id, worktree, vcs, time}``;
- ``session/<projectID>/<sessionID>.json``: ``{id, projectID, directory, parentID?, title, version, time}``;
- ``message/<sessionID>/<messageID>.json``: one message (``mempald.normalize.opencode``);
- ``part/<messageID>/<partID>.json``: one part of a message.

The unit is a session: its folder of message files, ``storage/message/<sessionID>``. ``unit_of`` maps a message,
part or session file to it (a part names its session in ``sessionID``), and ``gather`` collects the session's
files through the intake's ``Look``, keyed by their path under ``storage/`` (the same keys a copied storage
folder has: a storage folder itself, named as a unit, is read whole). Exchange ids come from the message ids: a session
that gained a message file stores only the new exchange. Every file is accounted for under its key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import PurePath, PurePosixPath
from typing import Any

from mempald.normalize.common import as_str
from mempald.normalize.format import Format, Input, Look, Parsed, Place, Probe, loads
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, NormalizeError
from mempald.normalize.opencode import AGENT, SOURCE_KIND, Message, Session, read_session, session_of

NAME = SOURCE_KIND
MAX_FILE = 16 * 1024 * 1024  # one record file (a part holds a tool's whole output)
_PART_HEAD = 4096
_LIVE_MESSAGES = 32  # the newest messages of a session whose parts may still change
_ID = re.compile(r"^(ses|msg|prt)_[A-Za-z0-9]+$")
_KINDS = ("message", "part", "session", "project")
PLACES = (Place("OpenCode", linux=("$XDG_DATA_HOME/opencode/storage",), macos=("$XDG_DATA_HOME/opencode/storage",),
                windows=("%USERPROFILE%/.local/share/opencode/storage", "%LOCALAPPDATA%/opencode/storage"),
                globs=("message/ses_*",)),)  # turned off by sources.skip = ["opencode"]


def _stem(name: str) -> str:
    return name[:-5] if name.endswith(".json") else name


def _storage_of(path: PurePath) -> tuple[PurePath, str, tuple[str, ...]] | None:
    """The storage folder above ``path``, the kind of record (message, part, session) and the names below it."""
    parts = path.parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in ("message", "part", "session") and i + 1 < len(parts):
            rest = parts[i + 1:]
            if parts[i] != "session" and not _ID.match(_stem(rest[0])):
                continue
            return PurePath(*parts[:i]) if i else PurePath("."), parts[i], rest
    return None


def unit_of(path: PurePath, look: Look) -> PurePath | None:
    """The session folder (``storage/message/<sessionID>``) a message, part or session file belongs to."""
    found = _storage_of(path)
    if found is None:
        return path if _is_storage(path, look) else None  # a whole storage folder: read as one unit
    storage, kind, rest = found
    if kind == "message" and rest[0].startswith("ses_") and len(rest) <= 2:
        return storage / "message" / rest[0]
    if kind == "session" and len(rest) == 2 and rest[1].startswith("ses_") and rest[1].endswith(".json"):
        return storage / "message" / _stem(rest[1])
    if kind == "part" and len(rest) == 2 and rest[1].endswith(".json"):
        record = loads(look.head(path, _PART_HEAD))
        sid = as_str(record.get("sessionID")) if isinstance(record, dict) else ""
        if not sid:  # cut or being written: its session is the folder holding its message's file
            mid = rest[0]
            sid = next((s for s in look.entries(storage / "message")
                        if look.is_file(storage / "message" / s / f"{mid}.json")), "")
        return storage / "message" / sid if sid.startswith("ses_") else None
    return None


def _is_storage(folder: PurePath, look: Look) -> bool:
    return {"message", "part"} <= set(look.entries(folder)) and look.is_dir(folder / "message")


def _session_files(storage: PurePath, sid: str, look: Look, files: dict[str, bytes]) -> None:
    def take(rel: str) -> None:
        data = look.read(storage / rel, MAX_FILE)
        files[rel] = data if data is not None else b""  # unreadable or too large: accounted for, not lost track of

    for name in sorted(look.entries(storage / "message" / sid)):
        if not name.endswith(".json"):
            continue
        take(f"message/{sid}/{name}")
        mid = _stem(name)
        for part in sorted(look.entries(storage / "part" / mid)):
            if part.endswith(".json"):
                take(f"part/{mid}/{part}")
    for project in look.entries(storage / "session"):
        if look.is_file(storage / "session" / project / f"{sid}.json"):
            take(f"session/{project}/{sid}.json")
            if look.is_file(storage / "project" / f"{project}.json"):
                take(f"project/{project}.json")
            break


def members(unit: PurePath, look: Look) -> list[PurePath]:
    """The part folders of a session's newest messages: an answer streams into its part files, outside the
    session's folder, so their changes are the session's (older messages' parts no longer change)."""
    if _is_storage(unit, look):
        return []  # a whole storage folder's signature already covers its parts
    names = sorted((n for n in look.entries(unit) if n.endswith(".json")), reverse=True)[:_LIVE_MESSAGES]
    return [unit.parent.parent / "part" / _stem(n) for n in names]


def gather(unit: PurePath, ctx: CursorContext, look: Look) -> Input:
    """The session's files, keyed by their path under ``storage/``: its message files, their parts, its session
    record and its project's record (a whole storage folder, a copy the user pointed at: every session's)."""
    files: dict[str, bytes] = {}
    if _is_storage(unit, look):
        for sid in sorted(look.entries(unit / "message")):
            _session_files(unit, sid, look, files)
    else:
        _session_files(unit.parent.parent, unit.name, look, files)
    return Input(name=str(unit), context=ctx, files=files)


def _group(files: Mapping[str, bytes], ledger: Ledger) -> tuple[dict[str, Session], dict[str, list[Message]]]:
    projects: dict[str, str] = {}
    infos: dict[str, tuple[str, dict[str, Any]]] = {}
    messages: dict[str, Message] = {}
    by_session: dict[str, list[Message]] = {}
    parts: list[tuple[str, str, dict[str, Any]]] = []
    for rel in sorted(files):
        path = PurePosixPath(rel.replace("\\", "/"))
        names = path.parts
        kind = names[-3] if len(names) >= 3 else names[-2] if len(names) == 2 else ""
        record = loads(files[rel])
        if not rel.endswith(".json") or kind not in _KINDS:
            ledger.skipped(rel, "not a session record")
            continue
        if not isinstance(record, dict):
            ledger.skipped(rel, "not a JSON object (being written, or too large to read)")
            continue
        if kind == "project":
            projects[_stem(names[-1])] = as_str(record.get("worktree"))
            ledger.skipped(rel, "project record")
        elif kind == "session":
            infos[_stem(names[-1])] = (rel, record)
            ledger.skipped(rel, "session record")
        elif kind == "message":
            sid, mid = names[-2], as_str(record.get("id")) or _stem(names[-1])
            msg = Message(mid, rel, record)
            messages[mid] = msg
            by_session.setdefault(sid, []).append(msg)
        else:
            parts.append((rel, names[-2], record))
    for rel, mid, record in parts:
        owner = messages.get(mid)
        if owner is None:
            ledger.skipped(rel, "part of no message read")
        else:
            owner.parts.append((rel, record))
    sessions: dict[str, Session] = {}
    for sid in by_session:
        rel_info = infos.get(sid)
        info = rel_info[1] if rel_info else {}
        sessions[sid] = session_of(info, sid, projects.get(as_str(info.get("projectID")), ""))
    return sessions, by_session


def parse(inp: Input) -> Parsed:
    """The exchanges of the sessions in ``inp.files`` (a session's files, or a whole storage folder)."""
    ledger = Ledger()
    if inp.files and not any(PurePosixPath(k.replace("\\", "/")).parts[0] in _KINDS for k in inp.files):
        raise NormalizeError(f"{inp.name or 'folder'}: not an OpenCode storage folder (no session, message or part "
                             "files)")
    sessions, by_session = _group(inp.files, ledger)
    out: list[Exchange] = []
    for sid in sorted(by_session):
        out.extend(read_session(sessions[sid], by_session[sid], ledger))
    ctx = replace(inp.context, format=NAME, files=len(inp.files))
    if len(sessions) == 1:
        only = next(iter(sessions.values()))
        ctx = replace(ctx, session_id=only.id, cwd=ctx.cwd or only.directory)
        ctx = ctx.with_title(only.title, 1) if only.title else ctx
    return Parsed(out, ledger, ctx)


def detect(probe: Probe) -> bool:
    """A session's folder of message files (``msg_*.json``), or a storage folder (``message``, ``part`` and
    ``session`` inside)."""
    names = probe.entry_names
    if {"message", "part", "session"} <= names:
        return True
    return bool(names) and all(n.startswith("msg_") and n.endswith(".json") for n in names)


# agent: what a summary saved for an OpenCode session files under (the one source kind of all three formats)
FORMAT = Format(NAME, "folder", detect, parse, summary="OpenCode sessions in its storage folder (before 1.2)",
                agent=AGENT, places=PLACES, ids="message", unit_of=unit_of, gather=gather, members=members)
