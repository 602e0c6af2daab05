"""OpenAI Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``), SCHEMAS.md section 2.

One exchange per human prompt: the prompt plus everything the agent said and did until the next prompt.

- Human turns come from ``event_msg``/``user_message`` (clean text). Every turn is also recorded as a
  ``response_item`` message with role ``user``; that copy is never a second prompt. It only anchors the
  exchange: when it directly precedes the ``user_message`` event, the exchange starts at its line, so a
  re-read from ``Exchange.offset`` rebuilds the same exchange with the same key. Only when the given lines
  hold no ``user_message`` event at all (rollouts older than the event log, or a read cut between the two
  copies) do ``response_item`` user messages count as prompts, minus injected context.
- Injected context is not a prompt: ``<environment_context>``, ``<user_instructions>``, AGENTS.md bodies,
  permission blocks, ``developer`` messages, ``user_message`` events whose ``kind`` is not ``plain``, the IDE
  preamble before ``## My request for Codex:`` and every ``<mempal-context>`` span.
- The answer is taken once: ``response_item`` assistant messages when the exchange has any, otherwise the
  ``agent_message`` events. Reasoning is dropped (``agent_reasoning`` and ``reasoning`` items).
- Tool calls (``function_call``, ``custom_tool_call``, ``local_shell_call``, ``web_search_call`` and the
  ``exec_command``/``mcp_tool_call``/``patch_apply``/``web_search`` events) become ``[tool: name] arg`` lines,
  deduplicated by ``call_id``; their outputs become ``  -> short result`` lines.
- A ``compacted`` item is an exchange of kind ``summary`` (user empty); what the agent says after it, before
  the next prompt, is appended to it. Its ``replacement_history`` is old context, never new turns.
- ``turn_aborted`` keeps the exchange with what was said and appends ``[turn aborted: reason]``.
- A prompt that is nothing but injected context is dropped together with the answer to it.

Keys are the byte offset of the exchange's first line (``compacted:<offset>`` for summaries): unique in the
file and stable across re-reads. session_id, cwd and git branch come from ``session_meta`` (cwd updated by
``turn_context``), else from the keyword fallbacks; agent is ``codex`` (``codex/subagent`` for spawned
sub-agent sessions).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mempald.normalize.common import MAX_ARG as _MAX_ARG
from mempald.normalize.common import one_line as _one_line
from mempald.normalize.common import touched_path
from mempald.normalize.model import Exchange, Line, strip_injected
from mempald.normalize.shell import command_files, command_text, patch_files

SOURCE_KIND = "codex"
AGENT = "codex"

_INJECTED_PREFIXES = (
    "<environment_context>", "<user_instructions>", "<permissions instructions>", "<permissions>",
    "# AGENTS.md instructions for", "<INSTRUCTIONS>", "<user_shell_command>", "<turn_aborted>",
    "<developer_instructions>", "<collaboration_mode>", "<skills_instructions>", "<subagent_notification>",
)
_IDE_REQUEST_MARK = "## My request for Codex:"
_RESPONSE_ITEM_TYPES = frozenset({
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "web_search_call", "ghost_snapshot",
})
_ARG_KEYS = ("cmd", "command", "path", "file_path", "query", "url", "pattern", "explanation", "prompt")
_EXIT_CODE = re.compile(r"^Exit code: (-?\d+)", re.MULTILINE)


def _loads(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def is_injected(text: str) -> bool:
    """True for context Codex injects as a user message (not typed by the human)."""
    stripped = text.lstrip()
    return any(stripped.startswith(p) for p in _INJECTED_PREFIXES)


def _clean_human(text: str) -> str:
    text = strip_injected(text)
    if _IDE_REQUEST_MARK in text:
        # the IDE extension prefixes the prompt with open files and selections: keep the request only
        text = text.split(_IDE_REQUEST_MARK, 1)[1]
    return text.strip()


def _content_text(content: Any, kinds: tuple[str, ...]) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") in kinds and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def _args_summary(args: Any) -> str:
    if isinstance(args, str):
        decoded = _loads(args) if args.lstrip().startswith(("{", "[")) else None
        if decoded is None:
            return _one_line(args, _MAX_ARG)
        args = decoded
    if isinstance(args, dict):
        for key in _ARG_KEYS:
            val = args.get(key)
            text = command_text(val) if key in ("cmd", "command") else (val if isinstance(val, str) else "")
            if text.strip():
                return _one_line(text, _MAX_ARG)
        if isinstance(args.get("plan"), list):
            return f"{len(args['plan'])} steps"
        return ""
    return command_text(args)


def _patch_summary(patch: Any) -> str:
    if not isinstance(patch, str):
        return ""
    files = patch_files(patch, None)
    return _one_line(", ".join(files), _MAX_ARG) if files else _one_line(patch, _MAX_ARG)


def _call_files(args: Any, cwd: str | None) -> list[str]:
    """Files a shell-like function call clearly touched (its command, run in its ``workdir``)."""
    if isinstance(args, str) and args.lstrip().startswith(("{", "[")):
        args = _loads(args)
    if isinstance(args, dict):
        workdir = args.get("workdir") if isinstance(args.get("workdir"), str) else cwd
        for key in ("cmd", "command"):
            if key in args:
                return command_files(args[key], workdir)
        return []
    return command_files(args, cwd) if isinstance(args, list) else []


def _output_summary(output: Any) -> str | None:
    """``  -> short result`` for a tool output (a string, or a JSON string with ``output`` and ``metadata``)."""
    exit_code: int | None = None
    body: Any = output
    if isinstance(output, dict):
        body = output.get("content", output.get("output", ""))
    if isinstance(body, str) and body.lstrip().startswith("{"):
        decoded = _loads(body)
        if isinstance(decoded, dict) and "output" in decoded:
            meta = decoded.get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int):
                exit_code = meta["exit_code"]
            body = decoded.get("output")
    if isinstance(body, str):
        m = _EXIT_CODE.match(body)
        if m:
            exit_code = int(m.group(1))
            if "\nOutput:\n" in body:
                body = body.split("\nOutput:\n", 1)[1]
            elif "\nOutput:" in body:
                body = body.split("\nOutput:", 1)[1]
    text = _one_line(body) if body not in (None, "") else ""
    if exit_code not in (None, 0):
        return f"  -> error (exit {exit_code}): {text}".rstrip()
    return f"  -> {text}" if text else None


def session_meta(lines: Sequence[Line]) -> dict[str, str]:
    """Session facts from the first ``session_meta`` line among ``lines`` (empty if there is none).

    Keys (only those known): session_id, id, cwd, git_branch, git_commit, repository_url, originator,
    cli_version, source, model_provider, timestamp, forked_from_id.
    """
    for line in lines:
        rec = _loads(line.raw)
        if not isinstance(rec, dict):
            continue
        payload = _meta_payload(rec)
        if payload is not None:
            return _meta_dict(payload)
    return {}


def _meta_payload(rec: dict[str, Any]) -> dict[str, Any] | None:
    if rec.get("type") == "session_meta" and isinstance(rec.get("payload"), dict):
        payload: dict[str, Any] = rec["payload"]
        return payload
    if "type" not in rec and "payload" not in rec and isinstance(rec.get("id"), str) and "timestamp" in rec:
        return rec  # rollouts written before the envelope: the first line is the bare session meta
    return None


def _meta_dict(payload: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    sid = _str(payload.get("session_id")) or _str(payload.get("id"))
    if sid:
        out["session_id"] = sid
    for key in ("id", "cwd", "originator", "cli_version", "model_provider", "timestamp", "forked_from_id"):
        val = _str(payload.get(key))
        if val:
            out[key] = val
    source = payload.get("source")
    if isinstance(source, str) and source:
        out["source"] = source
    git = payload.get("git")
    if isinstance(git, dict):
        for key, name in (("branch", "git_branch"), ("commit_hash", "git_commit"),
                          ("repository_url", "repository_url")):
            val = _str(git.get(key))
            if val:
                out[name] = val
    return out


@dataclass
class _Open:
    offset: int
    user: str
    timestamp: str | None
    session_id: str
    cwd: str | None
    git_branch: str | None
    agent: str
    kind: str = "exchange"
    key: str = ""
    parts: list[tuple[str, str]] = field(default_factory=list)  # (source, text): source item|event|tool|note
    tools: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    turn_cwd: bool = False

    def has_item_text(self) -> bool:
        return any(src == "item" for src, _ in self.parts)

    def render(self) -> str:
        use_events = not self.has_item_text()
        texts = [t for src, t in self.parts if src != "event" or use_events]
        return "\n".join(t for t in texts if t).strip()


def _envelope(rec: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    rtype = rec.get("type")
    payload = rec.get("payload")
    if isinstance(rtype, str) and isinstance(payload, dict):
        return rtype, payload
    if isinstance(rtype, str) and rtype in _RESPONSE_ITEM_TYPES and "payload" not in rec:
        return "response_item", rec  # pre-envelope rollouts: bare response items
    return None


def parse_lines(
    lines: Sequence[Line],
    *,
    session_id: str | None = None,
    cwd: str | None = None,
    git_branch: str | None = None,
    first_position: int = 0,
) -> list[Exchange]:
    """Exchanges in the given complete lines, in file order. Never raises: bad lines are skipped.

    ``session_id``, ``cwd`` and ``git_branch`` are fallbacks for a read that starts after the ``session_meta``
    line (see ``session_meta``); ``first_position`` numbers the first exchange returned.
    """
    records: list[tuple[Line, str, dict[str, Any], str | None]] = []
    for line in lines:
        rec = _loads(line.raw)
        if not isinstance(rec, dict):
            continue
        meta = _meta_payload(rec)
        if meta is not None:
            records.append((line, "session_meta", meta, _str(rec.get("timestamp"))))
            continue
        env = _envelope(rec)
        if env is not None:
            records.append((line, env[0], env[1], _str(rec.get("timestamp"))))
    event_mode = any(
        rtype == "event_msg" and payload.get("type") == "user_message" for _, rtype, payload, _ in records)

    out: list[Exchange] = []
    position = first_position
    state: dict[str, str | None] = {"session_id": session_id, "cwd": cwd, "git_branch": git_branch}
    agent = AGENT
    current: _Open | None = None
    anchor: int | None = None  # offset of a response_item user message that may precede its user_message event
    seen_calls: set[str] = set()

    def close() -> None:
        nonlocal current, position
        if current is None:
            return
        assistant = current.render()
        if current.user or assistant:
            out.append(Exchange(
                source_kind=SOURCE_KIND,
                session_id=current.session_id,
                key=current.key or str(current.offset),
                user=current.user,
                assistant=assistant,
                timestamp=current.timestamp,
                cwd=current.cwd,
                git_branch=current.git_branch,
                agent=current.agent,
                position=position,
                offset=current.offset,
                kind=current.kind,
                tools=tuple(current.tools),
                files=tuple(current.files),
            ))
            position += 1
        current = None

    def open_turn(offset: int, user: str, ts: str | None, kind: str = "exchange", key: str = "") -> _Open:
        close()
        return _Open(offset=offset, user=user, timestamp=ts, session_id=state["session_id"] or "",
                     cwd=state["cwd"], git_branch=state["git_branch"], agent=agent, kind=kind, key=key)

    def add_tool(name: str, arg: str, call_id: Any, files: list[str] | None = None) -> None:
        if current is None:
            return
        if isinstance(call_id, str) and call_id:
            if call_id in seen_calls:
                return
            seen_calls.add(call_id)
        current.tools.append(name)
        current.parts.append(("tool", f"[tool: {name}] {arg}".rstrip()))
        for f in files or ():
            if f not in current.files:
                current.files.append(f)

    def here() -> str | None:
        return current.cwd if current is not None and current.cwd else state["cwd"]

    for line, rtype, p, ts in records:
        ptype = p.get("type")
        if rtype == "session_meta":
            meta = _meta_dict(p)
            state["session_id"] = meta.get("session_id") or state["session_id"]
            state["cwd"] = meta.get("cwd") or state["cwd"]
            state["git_branch"] = meta.get("git_branch") or state["git_branch"]
            source = p.get("source")
            if p.get("subagent") or (isinstance(source, dict) and "subagent" in source):
                agent = f"{AGENT}/subagent"
            continue
        if rtype == "turn_context":
            turn_cwd = _str(p.get("cwd"))
            if turn_cwd:
                state["cwd"] = turn_cwd
                if current is not None and not current.turn_cwd:
                    current.cwd, current.turn_cwd = turn_cwd, True
            continue
        if rtype == "compacted":
            anchor = None
            message = p.get("message")
            summary = strip_injected(message).strip() if isinstance(message, str) else ""
            current = open_turn(line.offset, "", ts, "summary" if summary else "exchange",
                                key=f"compacted:{line.offset}")
            if summary:
                current.parts.append(("note", summary))
            continue
        if rtype == "event_msg":
            if ptype == "user_message":
                kind = p.get("kind")
                text = p.get("message")
                if (kind not in (None, "plain")) or not isinstance(text, str) or is_injected(text):
                    anchor = None
                    continue
                user = _clean_human(text)
                images = [i for key in ("images", "local_images") if isinstance(p.get(key), list)
                          for i in p[key]]
                if images:
                    user = (user + "\n" if user else "") + f"[{len(images)} image(s) attached]"
                if user:
                    start = anchor if anchor is not None else line.offset
                    current = open_turn(start, user, ts)
                else:
                    close()  # only injected context: its answer is dropped with it
                anchor = None
            elif ptype == "agent_message" and current is not None:
                msg = p.get("message")
                if isinstance(msg, str) and msg.strip():
                    current.parts.append(("event", strip_injected(msg).strip()))
            elif ptype == "turn_aborted":
                anchor = None
                if current is not None:
                    reason = p.get("reason")
                    current.parts.append(("note", f"[turn aborted: {reason if isinstance(reason, str) else '?'}]"))
            elif ptype == "exec_command_begin":
                cwd_ = _str(p.get("cwd")) or here()
                add_tool("shell", _one_line(command_text(p.get("command")), _MAX_ARG), p.get("call_id"),
                         command_files(p.get("command"), cwd_))
            elif ptype == "mcp_tool_call_begin":
                inv = p.get("invocation")
                if isinstance(inv, dict):
                    name = f"{inv.get('server', '?')}.{inv.get('tool', '?')}"
                    add_tool(name, _args_summary(inv.get("arguments")), p.get("call_id"))
            elif ptype == "patch_apply_begin":
                changes = p.get("changes")
                names = [str(k) for k in changes] if isinstance(changes, dict) else []
                touched = [t for t in (touched_path(n, here()) for n in names) if t]
                add_tool("apply_patch", _one_line(", ".join(names), _MAX_ARG), p.get("call_id"), touched)
            elif ptype == "web_search_end":
                add_tool("web_search", _one_line(p.get("query") or "", _MAX_ARG), p.get("call_id"))
            continue
        if rtype != "response_item":
            continue
        if ptype == "message":
            role = p.get("role")
            if role == "user":
                text = _content_text(p.get("content"), ("input_text", "text"))
                if not text.strip() or is_injected(text):
                    continue
                if event_mode:
                    anchor = line.offset
                    continue
                user = _clean_human(text)
                if user:
                    current = open_turn(line.offset, user, ts)
                else:
                    close()
            elif role == "assistant" and current is not None:
                anchor = None
                text = _content_text(p.get("content"), ("output_text", "text"))
                if text.strip():
                    current.parts.append(("item", strip_injected(text).strip()))
            continue
        if ptype in ("reasoning", "ghost_snapshot"):
            continue
        anchor = None
        if ptype == "function_call":
            name = _str(p.get("name")) or "function"
            add_tool(name, _args_summary(p.get("arguments")), p.get("call_id"), _call_files(p.get("arguments"), here()))
        elif ptype == "custom_tool_call":
            name = _str(p.get("name")) or "custom_tool"
            arg = _patch_summary(p.get("input")) if name == "apply_patch" else _args_summary(p.get("input"))
            touched = patch_files(p.get("input"), here()) if name == "apply_patch" else []
            add_tool(name, arg, p.get("call_id"), touched)
        elif ptype == "local_shell_call":
            action = p.get("action")
            command = action.get("command") if isinstance(action, dict) else None
            workdir = action.get("working_directory") if isinstance(action, dict) else None
            add_tool("shell", _one_line(command_text(command), _MAX_ARG), p.get("call_id") or p.get("id"),
                     command_files(command, workdir if isinstance(workdir, str) else here()))
        elif ptype == "web_search_call":
            action = p.get("action")
            query = action.get("query") if isinstance(action, dict) else None
            add_tool("web_search", _one_line(query if isinstance(query, str) else "", _MAX_ARG), p.get("id"))
        elif ptype in ("function_call_output", "custom_tool_call_output") and current is not None:
            result = _output_summary(p.get("output"))
            if result:
                current.parts.append(("tool", result))
    close()
    return out
