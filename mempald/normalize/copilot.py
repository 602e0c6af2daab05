"""GitHub Copilot Chat in VS Code: the chat sessions the editor writes (a ``document`` format, read whole when it
changes; exchange ids are the editor's own request ids, so a session rewritten stores only its new requests).

Where (``User/`` is ``~/.config/Code/User``, ``~/Library/Application Support/Code/User``,
``%APPDATA%\\Code\\User``; the same under ``Code - Insiders``): ``workspaceStorage/<hash>/chatSessions/<id>.json``
(``workspace.json`` two folders up names the folder: the wing) and ``globalStorage/emptyWindowChatSessions/``
(no workspace: the wing ``copilot``). Two shapes:

- ``<id>.json``: ``{version, requesterUsername, responderUsername, sessionId, creationDate, customTitle?,
  requests: [...]}``;
- ``<id>.jsonl`` (VS Code 1.104+): a mutation log, replayed here: ``{"kind": 0, "v": <the session>}``, then
  ``{"kind": 1, "k": [path], "v": value}`` (set), ``{"kind": 2, "k": [path], "v": [items], "i"?: n}`` (push,
  after cutting the list to ``n``), ``{"kind": 3, "k": [path]}`` (delete).

A request is ``{requestId, timestamp, message: {text, parts}, variableData: {variables: [...]}, response: [...],
result, isCanceled, modelId}``: its ``message.text`` is the prompt as typed (whole); its variables (``#file``,
selections, images) are recorded as attachments. The response's parts: markdown (``{value}`` or
``markdownContent``) is the answer, verbatim; ``inlineReference`` reads as its name; ``textEditGroup`` is
``[edit: path]``; ``toolInvocationSerialized`` is ``[tool: id] message``; thinking, progress and UI parts are
dropped. A canceled request keeps what was said and ``[canceled]``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePath, PurePosixPath
from typing import Any

from mempald.normalize.common import MAX_ARG, add_unique, as_str, one_line
from mempald.normalize.cursor_bubbles import iso_of, path_of_uri
from mempald.normalize.format import Format, Input, Look, Parsed, Place, Probe, loads
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, NormalizeError, strip_injected

SOURCE_KIND = "copilot"
_TEXT_KINDS = ("markdownContent", "markdownVuln")
_DROPPED = frozenset({"thinking", "progressMessage", "progressTaskSerialized", "progressTask", "undoStop",
                      "prepareToolInvocation", "codeblockUri", "confirmation", "mcpServersStarting", "warning",
                      "command", "extensions", "pullRequest", "elicitation", "elicitationSerialized"})


def _apply(root: dict[str, Any], entry: dict[str, Any]) -> bool:
    """One mutation of the log applied to ``root``; False when it does not fit the session (skipped)."""
    path = entry.get("k")
    if not isinstance(path, list) or not path:
        return False
    target: Any = root
    for step in path[:-1]:
        try:
            target = target[step]
        except (KeyError, IndexError, TypeError):
            return False
    last, kind = path[-1], entry.get("kind")
    try:
        if kind == 1:
            if isinstance(target, list) and isinstance(last, int) and last == len(target):
                target.append(entry.get("v"))
            else:
                target[last] = entry.get("v")
        elif kind == 2:
            items = target[last]
            cut = entry.get("i")
            if isinstance(cut, int) and not isinstance(cut, bool):
                del items[cut:]
            items.extend(entry.get("v") or [])
        elif kind == 3:
            del target[last]
        else:
            return False
    except (KeyError, IndexError, TypeError, AttributeError):
        return False
    return True


def replay(data: bytes, ledger: Ledger) -> dict[str, Any] | None:
    """The session a ``.jsonl`` mutation log ends with (None when its first record is not a session)."""
    root: dict[str, Any] | None = None
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        entry = loads(raw)
        if not isinstance(entry, dict):
            ledger.skipped(f"line {n}", "not JSON")
        elif entry.get("kind") == 0 and isinstance(entry.get("v"), dict):
            root = entry["v"]
            ledger.folded(f"line {n}", "", "session state")
        elif root is None:
            ledger.skipped(f"line {n}", "a change before the session")
        elif _apply(root, entry):
            ledger.folded(f"line {n}", "", "session change")
        else:
            ledger.skipped(f"line {n}", "a change that does not fit the session")
    return root


def _part_text(part: dict[str, Any]) -> tuple[str, str, str]:
    """(answer text, tool name, file) of one response part ("" where none)."""
    kind = as_str(part.get("kind"))
    if not kind:
        return as_str(part.get("value")), "", ""
    if kind in _TEXT_KINDS:
        content = part.get("content")
        return (as_str(content.get("value")) if isinstance(content, dict) else as_str(content)), "", ""
    if kind == "inlineReference":
        ref = part.get("inlineReference")
        name = as_str(part.get("name")) or (as_str(ref.get("name")) if isinstance(ref, dict) else "")
        where = path_of_uri(ref.get("location", {}).get("uri") if isinstance(ref, dict) and isinstance(
            ref.get("location"), dict) else ref)
        return f"`{name or PurePosixPath(where).name}`" if name or where else "", "", ""
    if kind == "textEditGroup":
        where = path_of_uri(part.get("uri"))
        return (f"[edit: {where}]" if where else ""), "edit", where
    if kind in ("toolInvocationSerialized", "toolInvocation"):
        tool = as_str(part.get("toolId")) or "tool"
        said = part.get("pastTenseMessage") or part.get("invocationMessage")
        said_text = as_str(said.get("value")) if isinstance(said, dict) else as_str(said)
        return f"[tool: {tool}] {one_line(said_text, MAX_ARG)}".rstrip(), tool, ""
    return "", "", ""


def _attachments(req: dict[str, Any]) -> list[str]:
    out: list[str] = []
    data = req.get("variableData")
    variables = data.get("variables") if isinstance(data, dict) else None
    for var in variables if isinstance(variables, list) else []:
        if not isinstance(var, dict):
            continue
        value = var.get("value")
        where = path_of_uri(value.get("uri") if isinstance(value, dict) and "uri" in value else value)
        rng = value.get("range") if isinstance(value, dict) else None
        if where and isinstance(rng, dict) and isinstance(rng.get("startLineNumber"), int):
            where += f":{rng['startLineNumber']}-{rng.get('endLineNumber', rng['startLineNumber'])}"
        add_unique(out, where or as_str(var.get("name")) or None)
    return out


def _exchange(req: dict[str, Any], n: int, sid: str, ctx: CursorContext, title: str | None,
              ledger: Ledger, where: str, agent: str) -> Exchange | None:
    ref = f"{where}requests[{n}]"
    key = as_str(req.get("requestId")) or f"{sid}:{n}"
    message = req.get("message")
    prompt = as_str(message.get("text")) if isinstance(message, dict) else as_str(message)
    prompt = strip_injected(prompt).strip()
    parts: list[str] = []
    tools: list[str] = []
    files: list[str] = []
    response = req.get("response")
    for part in response if isinstance(response, list) else []:
        if not isinstance(part, dict) or as_str(part.get("kind")) in _DROPPED:
            continue
        text, tool, where = _part_text(part)
        if text:
            # markdown arrives in pieces that join without a separator; a tool or edit line stands on its own
            parts.append(text if not tool else f"\n\n{text}\n\n")
        add_unique(tools, tool or None)
        add_unique(files, where or None)
    answer = re.sub(r"\n{3,}", "\n\n", "".join(parts)).strip()
    if req.get("isCanceled") is True:
        answer = (answer + "\n\n[canceled]").strip()
    attached = _attachments(req)
    if not prompt and not answer:
        ledger.skipped(ref, "empty request")
        return None
    ledger.stored(ref, key)
    extra = (("attachments", "\n".join(attached)),) if attached else ()
    return Exchange(agent, sid, key, prompt, answer, timestamp=iso_of(req.get("timestamp")),
                    cwd=ctx.cwd or None, agent=agent, title=title, position=n, tools=tuple(tools),
                    files=tuple(files), extra=extra, project=ctx.cwd or None)


def parse(inp: Input) -> Parsed:
    ledger = Ledger()
    stem = PurePosixPath(inp.name.replace("\\", "/")).stem
    root = loads(inp.data)
    if root is None and inp.data.lstrip().startswith(b"{"):
        root = replay(inp.data, ledger)
    if not isinstance(root, dict) or not isinstance(root.get("requests"), list):
        raise NormalizeError(f"{inp.name or 'document'}: not a Copilot chat session (no 'requests' list)")
    sid = as_str(root.get("sessionId")) or stem
    ctx = replace(inp.context, format=SOURCE_KIND, session_id=sid)
    return Parsed(session_exchanges(root, sid, ctx, ledger), ledger, ctx)


def session_exchanges(root: dict[str, Any], sid: str, ctx: CursorContext, ledger: Ledger, *, where: str = "",
                      agent: str = SOURCE_KIND) -> list[Exchange]:
    """The exchanges of one chat session object (its ``requests``); ``where`` prefixes its ledger refs (a session
    inside a database row), ``agent`` is whose chat it is (Cursor's chat panel keeps the same shape)."""
    title = as_str(root.get("customTitle")).strip() or None
    out: list[Exchange] = []
    requests = root.get("requests")
    for n, req in enumerate(requests if isinstance(requests, list) else []):
        ex = _exchange(req, n, sid, ctx, title, ledger, where, agent) if isinstance(req, dict) else None
        if not isinstance(req, dict):
            ledger.skipped(f"{where}requests[{n}]", "not an object")
        if ex is not None:
            out.append(ex)
    return out


def beside(path: PurePath, ctx: CursorContext, look: Look) -> CursorContext:
    """A workspace's session: the folder ``workspace.json`` names (``<hash>/chatSessions/<id>.json``)."""
    data = loads(look.read(path.parent.parent / "workspace.json", 1 << 16) or b"")
    folder = path_of_uri(data.get("folder") or data.get("workspace")) if isinstance(data, dict) else ""
    return replace(ctx, cwd=folder) if folder and folder != ctx.cwd else ctx


def detect(probe: Probe) -> bool:
    """A session object (``requests`` with ``requesterUsername``/``responderUsername``), or a mutation log whose
    first record is ``{"kind": 0, "v": {...}}``."""
    doc = probe.document
    if isinstance(doc, dict):
        return isinstance(doc.get("requests"), list) and ("requesterUsername" in doc or "responderUsername" in doc)
    first = probe.records[0] if probe.records else None
    if first is not None:
        return first.get("kind") == 0 and isinstance(first.get("v"), dict) and "requests" in first["v"]
    head = probe.text[:4096]
    return re.match(r'\{\s*"kind"\s*:\s*0\s*,\s*"v"\s*:\s*\{', head) is not None and (
        '"requesterUsername"' in head or '"responderUsername"' in head or '"sessionId"' in head)


_CODE = ("Code", "Code - Insiders")
PLACES = tuple(Place(f"GitHub Copilot ({name})", linux=(f"$XDG_CONFIG_HOME/{name}/User",),
                     macos=(f"~/Library/Application Support/{name}/User",), windows=(f"%APPDATA%/{name}/User",),
                     globs=("workspaceStorage/*/chatSessions/*.json", "workspaceStorage/*/chatSessions/*.jsonl",
                            "globalStorage/emptyWindowChatSessions/*.json",
                            "globalStorage/emptyWindowChatSessions/*.jsonl")) for name in _CODE)

FORMAT = Format(SOURCE_KIND, "document", detect, parse, suffixes=(".json", ".jsonl"),
                summary="GitHub Copilot Chat sessions of VS Code (chatSessions)", places=PLACES, ids="message",
                agent=SOURCE_KIND,
                beside=beside)
