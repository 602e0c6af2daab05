"""The text conventions of Cursor's agent transcripts (pure), shared by both of their shapes (``cursor_transcript``):
what a user message holds besides the prompt, and how a legacy ``.txt`` transcript is cut into messages.

A user message (a ``.jsonl`` record's text part, a ``.txt`` ``user:`` block) wraps what the user typed in
``<user_query>`` and puts Cursor's own context before it: ``<timestamp>Friday, May 8, 2026, 6:05 AM
(UTC+5:30)</timestamp>`` (minute precision, its offset explicit), ``[Image]`` with ``<image_files>`` (numbered
paths), ``<attached_files>`` (``<code_selection path=".." lines="a-b">``, ``<terminal_selection ..>``,
``<file_contents>`` with ``path=..``), ``<uploaded_documents>``, ``<system_notification>`` (a background task
ended), and in some releases ``<user_info>`` (``Workspace Path: /..``), ``<git_status>``, ``<rules>``,
``<open_and_recently_viewed_files>``... Only the ``<user_query>`` text is the prompt (several blocks joined);
attachments are kept as paths; two fixed queries are Cursor's, never typed: "The above subagent result is already
visible to the user..." (after a sub-agent) and "Briefly inform the user about the task result..." (after a
background task, with its ``<system_notification>``).

A legacy ``.txt`` transcript is ``user:`` / ``assistant:`` (``A:`` in some releases) lines opening each message;
an assistant message holds ``[Thinking] ...`` (its reasoning, running on until the answer starts: the first
line after a finished sentence that is not a list item; dropped) or, in other releases, ``<think>...</think>``
(dropped), its text, ``[Tool call] Name`` with indented
``key: value`` arguments and ``[Tool result] Name`` (results are not recorded).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from mempald.normalize.common import MAX_ARG, add_unique, as_str, one_line, touched_path
from mempald.normalize.model import strip_injected

_QUERY_TAG = "user_query"
_OPEN = "<user_query>"
_STAMP = re.compile(r"(?:[A-Za-z]+,\s*)?([A-Za-z]{3})[A-Za-z]*\.?\s+(\d{1,2}),\s*(\d{4}),?\s+"
                    r"(\d{1,2}):(\d{2})\s*([AaPp][Mm])(?:\s*\(UTC(?:([+-])(\d{1,2})(?::(\d{2}))?)?\))?")
_MONTHS = {m: n for n, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                       "dec"), 1)}
_WORKSPACE = re.compile(r"Workspace Path:\s*(\S[^\n<]*?)\s*(?:<|$)", re.M)
# Cursor's context blocks (of the text outside the query): named, so a paste of HTML is never scanned block by block
_BLOCKS = ("user_info", "attached_files", "system_reminder", "system_notification", "timestamp", "image_files",
           "uploaded_documents", "git_status", "rules", "user_rules", "agent_skills", "available_skills",
           "manually_attached_skills", "open_and_recently_viewed_files", "cursor_commands", "agent_transcripts",
           "additional_data", "custom_instructions", "project_layout", "terminal_files_information")
_OPEN_TAG = re.compile(r"<(" + "|".join((*_BLOCKS, "user_query")) + r")(?:\s[^>]*)?>")
_ATTACHING = ("image_files", "attached_files", "uploaded_documents")
_PATH_ATTR = re.compile(r"\bpath=\"([^\"]+)\"(?:[^>]*?\blines=\"([^\"]+)\")?")
_PATH_ARG = re.compile(r"\bpath=([^\s,\"`]+)")
_LISTED = re.compile(r"^[ \t]*(?:\d+\.|-)[ \t]+((?:[A-Za-z]:[\\/]|~?/(?!/)|\.{1,2}/|[\w@.-]+/)\S.*?)\s*$", re.M)
_EDITED = re.compile(r"^--- (\S.*?)\s*$", re.M)  # "The user made the following changes": a diff of a file
CURSORS_OWN = "Cursor's own follow-up (not typed)"  # the ledger's reason for such a message
_CURSORS_OWN = ("The above subagent result is already visible to the user",
                "Briefly inform the user about the task result")
_ARG_KEYS = ("command", "path", "target_file", "file_path", "target_notebook", "pattern", "query", "search_term",
             "glob_pattern", "target_directory", "url", "description", "explanation", "prompt")
_FILE_KEYS = ("path", "target_file", "file_path", "target_notebook")
_SEARCHES = frozenset({"Grep", "Glob", "LS", "rg", "SemanticSearch", "codebase_search", "grep_search", "list_dir",
                       "file_search"})  # their ``path`` is a folder searched, not a file touched
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$", re.M)


@dataclass
class Said:
    """What a user message holds: the prompt (what was typed), its time, what it attached, and whether Cursor
    wrote it (``cursors``: the message is the harness's, never a prompt; ``note`` says what happened)."""

    prompt: str = ""
    when: str | None = None
    attached: list[str] = field(default_factory=list)
    cursors: bool = False
    note: str = ""
    workspace: str = ""


def stamp(text: str) -> str | None:
    """An ISO time (UTC) from Cursor's ``<timestamp>`` text, read with its own offset; None when it is not one."""
    m = _STAMP.search(text)
    month = _MONTHS.get(m.group(1).lower()) if m else None
    if m is None or month is None:
        return None
    hour = int(m.group(4)) % 12 + (12 if m.group(6).lower() == "pm" else 0)
    sign = -1 if m.group(7) == "-" else 1
    offset = timedelta(hours=int(m.group(8) or 0), minutes=int(m.group(9) or 0)) * sign
    try:
        when = datetime(int(m.group(3)), month, int(m.group(2)), hour, int(m.group(5)), tzinfo=timezone(offset))
    except ValueError:
        return None
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


Span = tuple[str, int, int, int, int]  # a block's name, start, body start, body end, end


def spans(text: str) -> list[Span]:
    """Cursor's blocks in ``text`` (``_BLOCKS`` and ``<user_query>``), in order, each closed, none inside another:
    one pass (a tag never closed is not looked for again), whatever was pasted."""
    out: list[Span] = []
    unclosed: set[str] = set()
    pos = 0
    while (m := _OPEN_TAG.search(text, pos)) is not None:
        name, pos = m.group(1), m.end()
        close = -1 if name in unclosed else text.find(f"</{name}>", m.end())
        if close < 0:
            unclosed.add(name)
            continue
        pos = close + len(name) + 3
        out.append((name, m.start(), m.end(), close, pos))
    return out


def _without(text: str, cut: list[Span]) -> str:
    parts, pos = [], 0
    for _name, start, _b, _e, end in cut:
        parts.append(text[pos:start])
        pos = end
    return "".join(parts) + text[pos:]


def _attachments(context: str, blocks: list[Span]) -> list[str]:
    out: list[str] = []
    for name, _s, start, end, _e in blocks:
        body = context[start:end]
        if name == "additional_data":  # (a release that wraps the attachments in it)
            for found in _attachments(body, spans(body)):
                add_unique(out, found)
        if name not in _ATTACHING:
            continue
        for m in _PATH_ATTR.finditer(body):
            add_unique(out, m.group(1) + (f":{m.group(2)}" if m.group(2) else ""))
        for m in _PATH_ARG.finditer(body):
            add_unique(out, m.group(1))
        for rx in (_LISTED, _EDITED):
            for m in rx.finditer(body):
                add_unique(out, m.group(1))
    images = context.count("[Image]")
    if images and not any(b[0] == "image_files" for b in blocks):
        out.append(f"{images} image{'s' if images > 1 else ''}")
    return out


def said(text: str) -> Said:
    """What a user message says (module docstring)."""
    text = strip_injected(text).replace("\r\n", "\n")
    out = Said()
    blocks = spans(text)
    body = {name: text[start:end] for name, _s, start, end, _e in reversed(blocks)}  # (each name's first)
    out.when = stamp(body["timestamp"]) if "timestamp" in body else None
    ws = _WORKSPACE.search(body.get("user_info", ""))
    path = ws.group(1) if ws else ""
    out.workspace = path if path.startswith(("/", "~")) or (len(path) > 2 and path[1] == ":") else ""
    asked = [b for b in blocks if b[0] == _QUERY_TAG]
    queries = [text[start:end].strip() for _n, _s, start, end, _e in asked]
    if not queries and _OPEN in text:  # a query whose end was never written
        queries = [text.split(_OPEN, 1)[1].strip()]
    context = _without(text, asked) if asked else text.split(_OPEN, 1)[0] if queries else text
    rest = [b for b in spans(context) if b[0] != _QUERY_TAG]
    out.attached = _attachments(context, rest)
    if queries:
        prompt = "\n\n".join(q for q in queries if q)
    else:  # a message with no query tag (early releases): what is left once Cursor's blocks are out
        prompt = re.sub(r"^[ \t]*\[Image\][ \t]*$", "", _without(text, rest), flags=re.M)
    out.prompt = prompt.strip()
    notice = next((context[start:end] for name, _s, start, end, _e in rest if name == "system_notification"), None)
    if out.prompt.startswith(_CURSORS_OWN) or (notice is not None and not out.prompt):
        out.cursors = True
        title = re.search(r"^[ \t]*title:[ \t]*(.+?)[ \t]*$", notice, re.M) if notice else None
        status = re.search(r"^[ \t]*status:[ \t]*(\S+)", notice, re.M) if notice else None
        if title:
            out.note = f"[task finished] {one_line(title.group(1), MAX_ARG)}" + (
                f" ({status.group(1)})" if status else "")
        out.prompt = ""
    return out


def cursors_own(text: str) -> Said | None:
    """What ``said`` makes of a user message that Cursor wrote (a finished background task's
    ``<system_notification>``, one of its fixed follow-ups); None for a message someone typed. The same messages
    are user bubbles in ``state.vscdb`` and ``**User**`` turns in an export or a SpecStory history."""
    if "<system_notification" not in text and not any(p in text for p in _CURSORS_OWN):
        return None
    out = said(text)
    return out if out.cursors else None


def typed(text: str) -> str:
    """A user message's typed text: as it is, but for a message carrying a ``<system_notification>`` beside a
    ``<user_query>`` (only the query was typed)."""
    return said(text).prompt if "<system_notification" in text else text


def tool_summary(name: str, args: Any, cwd: str | None) -> tuple[str, str, list[str]]:
    """A tool call's name (cut at a newline), its one summary line and the files it names (an ``ApplyPatch``
    input is the patch itself: its file headers)."""
    name = (name.split("\n", 1)[0].strip() or "tool")[:80]
    files: list[str] = []
    if isinstance(args, str):
        for m in _PATCH_FILE.finditer(args):
            add_unique(files, touched_path(m.group(1), cwd))
        arg = next((ln for ln in args.split("\n") if ln.strip() and not ln.startswith("*** Begin")), "")
    elif isinstance(args, dict):
        arg = next((args[k] for k in _ARG_KEYS if isinstance(args.get(k), str) and args[k].strip()), "")
        if not arg:
            arg = next((v for v in args.values() if isinstance(v, str) and v.strip()), "")
        for key in _FILE_KEYS if name not in _SEARCHES else ():
            add_unique(files, touched_path(args.get(key), cwd))
    else:
        arg = ""
    return name, f"[tool: {name}] {one_line(as_str(arg), MAX_ARG)}".rstrip(), files


# --- the legacy .txt shape ---------------------------------------------------------------------------------------

_ROLE = {"user:": "user", "assistant:": "assistant", "a:": "assistant"}
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)\n?", re.S)  # a release's thinking (to the end while unclosed)
_FINISHED = re.compile(r"[.!?…][\"')\]`*_]*$")
_ITEM = re.compile(r"^(?:[-*+] |\d+[.)] |\||#|```|\s)")


def messages(text: str) -> tuple[list[tuple[str, str, int]], list[int]]:
    """The messages of a ``.txt`` transcript, (role, body, line number of its ``user:`` / ``assistant:`` line),
    and the numbers of the non-blank lines before the first one."""
    out: list[tuple[str, str, int]] = []
    before: list[int] = []
    role, start, open_query = "", 0, 0
    body: list[str] = []
    for n, line in enumerate(text.split("\n"), 1):
        marker = _ROLE.get(line.strip().lower()) if line == line.lstrip() else None
        if marker and not open_query:
            if role:
                out.append((role, "\n".join(body), start))
            role, start, body = marker, n, []
            continue
        if role:
            body.append(line.rstrip("\r"))
            if role == "user":
                open_query += line.count("<user_query>") - line.count("</user_query>")
                open_query = max(0, open_query)
        elif line.strip():
            before.append(n)
    if role:
        out.append((role, "\n".join(body), start))
    return out, before


@dataclass
class Answer:
    """An assistant message of a ``.txt`` transcript: its lines (text and tool lines), tools and files; whether it
    thought."""

    text: list[str] = field(default_factory=list)
    spoke: bool = False  # it has text of its own (not only tool calls)
    tools: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    thought: bool = False


def unthink(text: str) -> tuple[str, bool]:
    """``text`` without its ``<think>`` blocks, and whether it had any."""
    kept = _THINK.sub("", text)
    return kept, kept != text


def answer(body: str, cwd: str | None) -> Answer:
    """An assistant block cut into its parts (module docstring): thinking dropped, each tool call one line."""
    out = Answer()
    body, out.thought = unthink(body)
    state, prev = "text", ""
    call: tuple[str, dict[str, str]] | None = None

    def end_call() -> None:
        nonlocal call
        if call is not None:
            name, line, files = tool_summary(call[0], call[1], cwd)
            add_unique(out.tools, name)
            out.text.append(line)
            for f in files:
                add_unique(out.files, f)
        call = None

    for line in body.split("\n"):
        if line.startswith("[Thinking]"):
            end_call()
            state, out.thought, prev = "thinking", True, line[len("[Thinking]"):].strip()
            continue
        if line.startswith("[Tool call]"):
            end_call()
            state, call = "call", (line[len("[Tool call]"):].strip(), {})
            continue
        if line.startswith("[Tool result]"):
            end_call()
            state = "result"
            continue
        if state == "call" and call is not None and (not line.strip() or line[:1].isspace()):
            key, sep, val = line.strip().partition(":")
            if sep and key and " " not in key and key not in call[1]:
                call[1][key] = val.strip()
            continue
        if state == "result" and (not line.strip() or line[:1].isspace()):
            continue  # a result's lines (not recorded by current releases): folded into the call
        if state == "thinking":
            starts = bool(line.strip()) and bool(prev.strip()) and _FINISHED.search(prev.rstrip()) is not None \
                and _ITEM.match(line) is None
            if not starts:
                prev = line
                continue
        end_call()
        state = "text"
        out.text.append(line)
        out.spoke = out.spoke or bool(line.strip())
    end_call()
    return out
