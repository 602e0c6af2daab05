"""Cline, Roo Code and Kilo Code task folders (VS Code extensions, also in Cursor, Windsurf, VSCodium; and the
Cline CLI): a folder unit.

Each task is a folder ``<globalStorage>/<extension id>/tasks/<task id>/`` (the Cline CLI's under
``~/.cline/data/tasks/``) of small JSON files the extension rewrites as the task grows:

- ``ui_messages.json``: the task as the user saw it, every message with its ``ts`` (read: ``cline_ui``);
- ``api_conversation_history.json``: the model's copy (``<task>``, ``<environment_details>``, tool results);
  its environment details name the workspace folder; a folder without ``ui_messages.json`` (copied or exported
  without it) is read from it (``cline_api``);
- Cline 4's SDK (its CLI, VS Code and JetBrains since v4.0) keeps a session folder instead,
  ``~/.cline/data/sessions/<id>/`` with the manifest ``<id>.json`` (``cwd``, ``workspace_root``, title) and
  ``<id>.messages.json`` (``{version, messages: [...]}``, the model's messages, rewritten whole): read the same way;
- ``task_metadata.json`` (files in context, models used), ``history_item.json`` (Roo Code, Kilo Code: the task's
  ``workspace`` and, for a sub-task, its ``parentTaskId``), ``focus_chain_*.md``, ``checkpoints/``.

The folder is one unit (``unit_of`` maps any file in it to it; ``gather`` reads its JSON files through the
intake's ``Look``); exchange ids are the prompts' own ``ts`` (``ids="message"``), so a task that gained a message
stores only its new exchange; ``beside`` links a Roo Code sub-task to the exchange of its parent task that
started it. The agent follows the extension id in the path (``cline``, ``roo``, ``kilo``); the session is the
task id (a sub-task's: its root task's); the wing is the task's workspace folder (``history_item.json``'s
``workspace``, else the "Current Working/Workspace Directory" of the environment details).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePath, PurePosixPath
from typing import Any

from mempald.normalize.cline_api import read_api
from mempald.normalize.cline_ui import TaskReader
from mempald.normalize.common import as_str
from mempald.normalize.format import Format, Input, Look, Parsed, Place, Probe, loads
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, NormalizeError

SOURCE_KIND = "cline"
UI = "ui_messages.json"
API = "api_conversation_history.json"
META = "task_metadata.json"
ITEM = "history_item.json"
SDK_MESSAGES = ".messages.json"  # Cline 4's SDK session folder: <id>.json (manifest) beside <id>.messages.json
TASK_FILES = (UI, API, META, ITEM)
EXTENSIONS = {"saoudrizwan.claude-dev": "cline", "rooveterinaryinc.roo-cline": "roo", "kilocode.kilo-code": "kilo"}
EDITORS = ("Code", "Code - Insiders", "Cursor", "Windsurf", "VSCodium")
# the editors' remote servers (SSH, WSL, containers) and Codespaces keep their own globalStorage on Linux
REMOTE = (".vscode-server", ".cursor-server", ".vscode-remote")
MAX_UI = 256 << 20  # a task's ui_messages.json larger than this is refused (counted, never half-read)
API_HEAD = 256 << 10  # the part of api_conversation_history.json that holds the first environment details
_SMALL = 1 << 20
_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \((.+?)\) Files")
_WORKSPACES = re.compile(r'# Workspace Configuration\s*\{\s*"workspaces"\s*:\s*\{\s*"((?:[^"\\]|\\.)+)"')
_RAW_CWD = re.compile(r'# Current (?:Working|Workspace) Directory \(((?:[^"\\]|\\.)+?)\) Files')
_TEXT = re.compile(r'"text"\s*:\s*"((?:[^"\\]|\\.)*)"')
_SKIPPED = {API: "the model's copy of the task (ui_messages.json read)", META: "task metadata",
            ITEM: "task history item"}


def _place(agent: str, ext: str) -> Place:
    return Place(
        agent,
        linux=(*(f"$XDG_CONFIG_HOME/{e}/User/globalStorage/{ext}/tasks" for e in EDITORS),
               *(f"~/{d}/data/User/globalStorage/{ext}/tasks" for d in REMOTE)),
        macos=tuple(f"~/Library/Application Support/{e}/User/globalStorage/{ext}/tasks" for e in EDITORS),
        windows=tuple(f"%APPDATA%/{e}/User/globalStorage/{ext}/tasks" for e in EDITORS),
        globs=("*",))


# The Cline CLI's folders, each movable as the CLI moves it (in the daemon's environment): CLINE_DIR (~/.cline),
# CLINE_DATA_DIR (its data/), CLINE_SESSION_DATA_DIR (data/sessions/).
_DATA = "${{CLINE_DATA_DIR:-${{CLINE_DIR:-{home}/.cline}}/data}}"
_SESSIONS = "${{CLINE_SESSION_DATA_DIR:-" + _DATA + "/sessions}}"
# no per-place setting: ``sources.skip = ["cline"]`` turns them all off
PLACES = (
    _place("Cline", "saoudrizwan.claude-dev"),
    _place("Roo Code", "rooveterinaryinc.roo-cline"),
    _place("Kilo Code", "kilocode.kilo-code"),
    Place("Cline CLI", linux=(_DATA.format(home="~") + "/tasks",), macos=(_DATA.format(home="~") + "/tasks",),
          windows=(_DATA.format(home="%USERPROFILE%") + "/tasks",), globs=("*",)),
    # Cline 4 (its SDK, shared by the CLI, VS Code and JetBrains): one folder per session
    Place("Cline", linux=(_SESSIONS.format(home="~"),), macos=(_SESSIONS.format(home="~"),),
          windows=(_SESSIONS.format(home="%USERPROFILE%"),), globs=("*",)),
)


def agent_of(unit: str) -> str:
    """``cline``, ``roo`` or ``kilo``: by the extension id in the task folder's path (the Cline CLI: ``cline``)."""
    parts = [p.lower() for p in PurePosixPath(unit.replace("\\", "/")).parts]
    return next((EXTENSIONS[p] for p in reversed(parts) if p in EXTENSIONS), "cline")


def env_cwd(text: str) -> str:
    """The workspace folder that environment details in ``text`` name ("" when they name none)."""
    m = _CWD.search(text)
    if m:
        return m.group(1).strip()
    m = _WORKSPACES.search(text)
    val = loads(f'"{m.group(1)}"') if m else None
    return val if isinstance(val, str) else ""


def api_cwd(head: bytes) -> str:
    """The workspace folder of the first environment details in the head of ``api_conversation_history.json``
    (it may be cut anywhere: its complete text strings are read, else the line itself, still escaped)."""
    raw = head.decode("utf-8", "replace")
    for found in _TEXT.finditer(raw):
        text = loads(f'"{found.group(1)}"')
        if isinstance(text, str) and "<environment_details>" in text:
            cwd = env_cwd(text)
            if cwd:
                return cwd
    m = _RAW_CWD.search(raw)
    val = loads(f'"{m.group(1)}"') if m else None
    return val.strip() if isinstance(val, str) else ""


def _api_cwd_strings(messages: list[Any]) -> str:
    for msg in messages[:4]:
        content = msg.get("content") if isinstance(msg, dict) else None
        for block in content if isinstance(content, list) else [{"text": content}]:
            cwd = env_cwd(as_str(block.get("text"))) if isinstance(block, dict) else ""
            if cwd:
                return cwd
    return ""


def _ui_cwd(messages: list[Any]) -> str:
    for msg in messages:
        if isinstance(msg, dict) and msg.get("say") == "api_req_started":
            req = loads(as_str(msg.get("text")) or "null")
            cwd = env_cwd(as_str(req.get("request"))) if isinstance(req, dict) else ""
            if cwd:
                return cwd
    return ""


def _messages(files: dict[str, bytes], task_id: str, where: str) -> tuple[str, list[Any]]:
    """Which file of the folder is read and its messages: ``ui_messages.json``; else the SDK session's
    ``<id>.messages.json`` (``{version, messages: [...]}``); else ``api_conversation_history.json``."""
    sdk = f"{task_id}{SDK_MESSAGES}"
    name = UI if UI in files else sdk if sdk in files else API if API in files else UI
    raw = files.get(name)
    root = loads(raw) if raw is not None else None
    messages = root.get("messages") if name == sdk and isinstance(root, dict) else root
    if not isinstance(messages, list):
        what = "missing" if raw is None else "not a JSON array (half-written?)" if name != sdk else \
            "not a messages file (half-written?)"
        raise NormalizeError(f"{where}: {name} {what}")
    return name, messages


def parse(inp: Input) -> Parsed:
    """The exchanges of one task folder (``inp.files``: name -> bytes); NormalizeError when it has no readable
    messages (a task being created, or a half-written file: read again when it changes)."""
    files = {PurePosixPath(k.replace("\\", "/")).as_posix(): v for k, v in inp.files.items()}
    task_id = PurePosixPath(inp.name.replace("\\", "/")).name or inp.context.session_id or "task"
    name, messages = _messages(files, task_id, inp.name or "task")
    item = loads(files.get(ITEM) or files.get(f"{task_id}.json") or b"null")  # Roo's history item, the SDK's manifest
    item = item if isinstance(item, dict) else {}
    cwd = as_str(item.get("workspace")) or as_str(item.get("workspace_root")) or as_str(item.get("cwd")) or \
        _ui_cwd(messages) or inp.context.cwd
    if not cwd and API in files:
        cwd = api_cwd(files[API][:API_HEAD])
    if not cwd and name != UI:
        cwd = _api_cwd_strings(messages)
    meta = item.get("metadata")
    title = as_str(item.get("task")).strip() or (as_str(meta.get("title")) if isinstance(meta, dict) else "")
    root = root_task(item)
    reader = TaskReader(root or task_id, agent_of(inp.name), cwd, subtask=bool(root),
                        title=" ".join(title.split())[:80] or None, prefix=f"{task_id}:" if root else "",
                        parent=inp.context.parent if root else "")
    if name == UI:
        for i, msg in enumerate(messages):
            reader.message(i, msg)
    else:
        read_api(reader, messages, name)
    reader.close()
    ledger = Ledger()
    out = reader.out
    for other in sorted(files):
        if other == name:
            continue
        if name != UI and other.endswith(SDK_MESSAGES):  # an SDK sub-agent's own messages, beside the session's
            out += _subagent(reader, other, files[other], len(out), ledger)
        else:
            ledger.skipped(other, _SKIPPED.get(other) or ("session manifest" if other == f"{task_id}.json" else
                                                          "not a task file"))
    ledger.extend(reader.ledger)
    ctx = replace(inp.context, format=SOURCE_KIND, session_id=root or task_id, cwd=cwd, files=len(files))
    return Parsed(out, ledger, ctx.with_title(reader.title or "", 1))


def _subagent(lead: TaskReader, name: str, data: bytes, start: int, ledger: Ledger) -> list[Exchange]:
    """A Cline 4 sub-agent's ``<agent id>.messages.json``: its task (written by the lead) opens sub-agent work,
    in the session of the lead, keyed by the agent's id; a file that does not parse is counted, not read."""
    root = loads(data)
    messages = root.get("messages") if isinstance(root, dict) else None
    if not isinstance(messages, list):
        ledger.skipped(name, "sub-agent messages not readable (half-written?)")
        return []
    sub = TaskReader(lead.session_id, lead.agent, lead.cwd, subtask=True, title=lead.title,
                     prefix=f"{name[: -len(SDK_MESSAGES)]}:")
    read_api(sub, messages, name)
    sub.close()
    ledger.extend(sub.ledger)
    return [replace(e, position=start + i) for i, e in enumerate(sub.out)]


def root_task(item: dict[str, Any]) -> str:
    """A sub-task's root task id (its session), from its history item; "" for a task that is no sub-task."""
    parent = as_str(item.get("parentTaskId"))
    return (as_str(item.get("rootTaskId")) or parent) if parent else ""


def _item(folder: PurePath, look: Look) -> dict[str, Any]:
    raw = look.read(folder / ITEM, _SMALL)
    item = loads(raw) if raw is not None else None
    return item if isinstance(item, dict) else {}


def beside(unit: PurePath, ctx: CursorContext, look: Look) -> CursorContext:
    """A sub-task's parent exchange, read from its parent task's folder beside it (once: kept in the context):
    the exchange whose ``newTask`` call gave the sub-task's text, else the parent's last exchange that started
    a sub-task."""
    item = _item(unit, look)
    parent_id = as_str(item.get("parentTaskId"))
    if ctx.parent or not parent_id:
        return ctx
    folder = unit.parent / parent_id
    raw = look.read(folder / UI, MAX_UI)
    messages = loads(raw) if raw is not None else None
    if not isinstance(messages, list):
        return ctx
    reader = TaskReader(parent_id, "", "", prefix=f"{parent_id}:" if root_task(_item(folder, look)) else "")
    for i, msg in enumerate(messages):
        reader.message(i, msg)
    found = reader.spawned.get(as_str(item.get("task")).strip()) or next(reversed(reader.spawned.values()), "")
    return replace(ctx, parent=found) if found else ctx


def detect(probe: Probe) -> bool:
    """A task folder: ``ui_messages.json`` or ``api_conversation_history.json`` among its entries; an SDK
    session folder: ``<id>.messages.json`` beside its manifest ``<id>.json``."""
    names = probe.entry_names
    return bool(names & {UI, API}) or any(
        n.endswith(SDK_MESSAGES) and f"{n[: -len(SDK_MESSAGES)]}.json" in names for n in names)


def unit_of(path: PurePath, look: Look) -> PurePath | None:
    """The task folder ``path`` is (or is a file of): the folder holding ``ui_messages.json`` or
    ``api_conversation_history.json``; None for anything else (a checkpoint's git files included)."""
    folder = path if look.is_dir(path) else path.parent
    return folder if any(look.is_file(folder / n) for n in (UI, API, f"{folder.name}{SDK_MESSAGES}")) else None


def gather(unit: PurePath, ctx: CursorContext, look: Look) -> Input:
    """The task folder's JSON files: ``ui_messages.json`` whole (up to ``MAX_UI``), the small metadata files,
    and the head of ``api_conversation_history.json`` (its first environment details name the workspace)."""
    files: dict[str, bytes] = {}
    names = set(look.entries(unit))
    sdk = f"{unit.name}{SDK_MESSAGES}"
    if sdk in names and UI not in names:  # an SDK session: its messages, its sub-agents' and its manifest
        subagents = sorted(n for n in names if n.endswith(SDK_MESSAGES) and n != sdk)
        for name, cap in ((sdk, MAX_UI), (f"{unit.name}.json", _SMALL), *((n, MAX_UI) for n in subagents)):
            data = look.read(unit / name, cap) if name in names else None
            if data is not None:
                files[name] = data
        return Input(name=str(unit), context=ctx, files=files)
    for name in (UI, META, ITEM):
        if name in names:
            data = look.read(unit / name, MAX_UI if name == UI else _SMALL)
            if data is not None:
                files[name] = data
    if API in names and UI not in names:  # no UI's file: the model's copy is what there is to read
        data = look.read(unit / API, MAX_UI)
        if data is not None:
            files[API] = data
    elif API in names and ITEM not in files and not ctx.cwd:
        files[API] = look.head(unit / API, API_HEAD)
    return Input(name=str(unit), context=ctx, files=files)


FORMAT = Format(
    SOURCE_KIND, "folder", detect, parse, names=TASK_FILES, places=PLACES, ids="message", unit_of=unit_of,
    beside=beside, gather=gather,
    summary="Cline, Roo Code and Kilo Code task folders (VS Code globalStorage, ~/.cline/data)")
