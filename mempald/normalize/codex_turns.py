"""The turns of a Codex rollout (pure): the state machine ``codex.parse`` runs over a rollout's records.

See ``mempald.normalize.codex`` for what becomes of each record; this module keeps the open exchange, the
prompt's anchor (its ``response_item`` copy), the tool calls already seen, and the ledger.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mempald.normalize import codex_tools as tools
from mempald.normalize import quotes
from mempald.normalize.common import MAX_ARG as _MAX_ARG
from mempald.normalize.common import add_unique, touched_path
from mempald.normalize.common import one_line as _one_line
from mempald.normalize.format import Input, Parsed
from mempald.normalize.ledger import Ledger, Ref
from mempald.normalize.model import Exchange, Line, strip_injected
from mempald.normalize.shell import command_files, command_text, patch_files

SOURCE_KIND = "codex"
AGENT = "codex"
_SKIP_EVENTS = {"token_count": "token count", "task_started": "task event", "task_complete": "task event",
                "agent_reasoning": "reasoning", "agent_reasoning_raw_content": "reasoning",
                "context_compacted": "compaction event"}
_EVENT_TOOLS = frozenset({"exec_command_begin", "mcp_tool_call_begin", "patch_apply_begin", "web_search_end"})
_INJECTED_PREFIXES = (
    "<environment_context>", "<user_instructions>", "<permissions instructions>", "<permissions>",
    "# AGENTS.md instructions for", "<INSTRUCTIONS>", "<user_shell_command>", "<turn_aborted>",
    "<developer_instructions>", "<collaboration_mode>", "<skills_instructions>", "<subagent_notification>",
)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def is_injected(text: str) -> bool:
    """True for context Codex injects as a user message (not typed by the human)."""
    stripped = text.lstrip()
    return any(stripped.startswith(p) for p in _INJECTED_PREFIXES)


def content_text(content: Any, kinds: tuple[str, ...]) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") in kinds and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


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
    # (source, text, ref): source item | event | tool | note; ref the record it came from
    parts: list[tuple[str, str, Ref]] = field(default_factory=list)
    refs: list[tuple[Ref, str]] = field(default_factory=list)  # records folded in: (ref, what)
    tools: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    quotes: dict[str, list[str]] = field(default_factory=dict)  # file -> digests of lines a patch added to it
    turn_cwd: bool = False
    first_ref: tuple[Ref, str] | None = None

    def render(self) -> str:
        use_events = not any(src == "item" for src, _, _ in self.parts)
        texts = [t for src, t, _ in self.parts if src != "event" or use_events]
        return "\n".join(t for t in texts if t).strip()


class Reader:
    def __init__(self, inp: Input, records: list[tuple[Line, str, dict[str, Any], str | None]],
                 clean: Any, meta_of: Any) -> None:
        self.clean = clean  # the prompt cleaner and the session_meta reader of mempald.normalize.codex
        self.meta_of = meta_of
        ctx = inp.context
        self.ctx = ctx
        self.ledger = Ledger()
        self.out: list[Exchange] = []
        self.position = ctx.position
        self.state: dict[str, str | None] = {"session_id": ctx.session_id or None, "cwd": ctx.cwd or None,
                                             "git_branch": ctx.git_branch or None}
        self.project = ctx.cwd or None
        self.agent = AGENT
        self.current: _Open | None = None
        self.anchor: tuple[int, Ref] | None = None  # a response_item user copy that may precede its event
        self.seen_calls: set[str] = set()
        # web searches of the open exchange by (how it was written, what it searched): Codex Desktop writes each
        # one twice, as an event_msg/web_search_end and a response_item/web_search_call, not always with an id
        self.searches: dict[tuple[str, int, str], int] = {}
        self.event_mode = any(rtype == "event_msg" and payload.get("type") == "user_message"
                              for _, rtype, payload, _ in records)

    # exchanges -------------------------------------------------------------------------------------------
    def close(self, reason: str = "empty exchange") -> None:
        cur = self.current
        if cur is None:
            return
        self.current = None
        assistant = cur.render()
        key = cur.key or str(cur.offset)
        if not (cur.user or assistant):
            for ref, _what in cur.refs:
                self.ledger.skipped(ref, reason)
            if cur.first_ref:
                self.ledger.skipped(cur.first_ref[0], reason)
            return
        if cur.first_ref:
            self.ledger.stored(cur.first_ref[0], key, cur.first_ref[1])
        use_events = not any(src == "item" for src, _, _ in cur.parts)
        for src, _text, ref in cur.parts:
            if src == "event" and not use_events:
                self.ledger.skipped(ref, "duplicate (event copy of the answer)")
            elif src in ("item", "event", "note"):
                self.ledger.stored(ref, key, "answer" if src != "note" else "note")
        for ref, what in cur.refs:
            self.ledger.folded(ref, key, what)
        self.out.append(Exchange(
            source_kind=SOURCE_KIND, session_id=cur.session_id, key=key, user=cur.user, assistant=assistant,
            timestamp=cur.timestamp, cwd=cur.cwd, git_branch=cur.git_branch, agent=cur.agent,
            position=self.position, offset=cur.offset, kind=cur.kind, tools=tuple(cur.tools),
            files=tuple(cur.files), project=self.project or cur.cwd,
            extra=(("quotes", quotes.encode(cur.quotes)),) if cur.quotes else (),
        ))
        self.position += 1

    def open(self, offset: int, user: str, ts: str | None, first: tuple[Ref, str] | None, kind: str = "exchange",
             key: str = "") -> _Open:
        self.close()
        self.current = _Open(offset=offset, user=user, timestamp=ts, session_id=self.state["session_id"] or "",
                             cwd=self.state["cwd"], git_branch=self.state["git_branch"], agent=self.agent,
                             kind=kind, key=key, first_ref=first)
        return self.current

    def here(self) -> str | None:
        return self.current.cwd if self.current is not None and self.current.cwd else self.state["cwd"]

    def fold(self, ref: Ref, what: str) -> bool:
        if self.current is None:
            self.ledger.skipped(ref, f"{what} before any prompt")
            return False
        self.current.refs.append((ref, what))
        return True

    def add_tool(self, ref: Ref, name: str, arg: str, call_id: Any, files: Sequence[str] = ()) -> None:
        if isinstance(call_id, str) and call_id:
            if call_id in self.seen_calls:
                self.ledger.skipped(ref, "duplicate (tool call already seen)")
                return
            self.seen_calls.add(call_id)
        if not self.fold(ref, "tool call"):
            return
        assert self.current is not None
        self.current.tools.append(name)
        self.current.parts.append(("tool", f"[tool: {name}] {arg}".rstrip(), ref))
        for f in files:
            add_unique(self.current.files, f)

    def patched(self, patch: object) -> None:
        """Note the lines an ``apply_patch`` body adds (see ``mempald.normalize.quotes``)."""
        if self.current is None:
            return
        for name, added in quotes.patch_added(patch).items():
            quotes.add(self.current.quotes, touched_path(name, self.here()), added)

    def web_search(self, ref: Ref, written_as: str, p: dict[str, Any], call_id: Any) -> None:
        """A web search, counted once however many ways it was written (the event and the item name the same
        search, with the same id or, without one, the same query or page, in the same exchange)."""
        raw = p.get("action")
        action: dict[str, Any] = raw if isinstance(raw, dict) else {}
        queries = action.get("queries")
        what = next((v for v in (p.get("query"), action.get("query"), action.get("url"), action.get("pattern"),
                                 queries[0] if isinstance(queries, list) and queries else None)
                     if isinstance(v, str) and v), "")
        if self.current is not None:
            at = self.current.offset
            theirs = ("item" if written_as == "event" else "event", at, what)
            unpaired = self.searches.get(theirs, 0)  # its other copy, written before it and not yet paired
            if unpaired > 0:
                self.searches[theirs] = unpaired - 1
                if not (isinstance(call_id, str) and call_id in self.seen_calls):  # (else add_tool says so)
                    if isinstance(call_id, str) and call_id:
                        self.seen_calls.add(call_id)
                    self.ledger.skipped(ref, "duplicate (web search already seen)")
                    return
            else:
                mine = (written_as, at, what)
                self.searches[mine] = self.searches.get(mine, 0) + 1
        self.add_tool(ref, "web_search", _one_line(what, _MAX_ARG), call_id)

    # records ---------------------------------------------------------------------------------------------
    def meta(self, p: dict[str, Any], ref: Ref) -> None:
        meta = self.meta_of(p)
        self.state["session_id"] = meta.get("session_id") or self.state["session_id"]
        self.state["cwd"] = meta.get("cwd") or self.state["cwd"]
        self.state["git_branch"] = meta.get("git_branch") or self.state["git_branch"]
        self.project = self.project or meta.get("cwd")
        source = p.get("source")
        if p.get("subagent") or (isinstance(source, dict) and "subagent" in source):
            self.agent = f"{AGENT}/subagent"
        self.ledger.skipped(ref, "session meta")

    def event(self, line: Line, p: dict[str, Any], ts: str | None) -> None:
        ptype = p.get("type") if isinstance(p.get("type"), str) else None
        ref = line.offset
        if ptype == "user_message":
            text = p.get("message")
            if p.get("kind") not in (None, "plain") or not isinstance(text, str) or is_injected(text):
                self.ledger.skipped(ref, "injected context")
                self.anchor_skipped()
                return
            user = self.clean(text)
            images = [i for key in ("images", "local_images") if isinstance(p.get(key), list) for i in p[key]]
            if images:
                user = (user + "\n" if user else "") + f"[{len(images)} image(s) attached]"
            if user:
                start = self.anchor[0] if self.anchor is not None else line.offset
                cur = self.open(start, user, ts, (ref, "prompt"))
                if self.anchor is not None:
                    cur.refs.append((self.anchor[1], "copy of the prompt"))
            else:
                self.close("answer to injected context")  # only injected context: its answer is dropped with it
                self.ledger.skipped(ref, "injected context")
                self.anchor_skipped()
            self.anchor = None
        elif ptype == "agent_message":
            msg = p.get("message")
            if self.current is not None and isinstance(msg, str) and msg.strip():
                self.current.parts.append(("event", strip_injected(msg).strip(), ref))
            else:
                self.ledger.skipped(ref, "answer before any prompt" if self.current is None else "empty")
        elif ptype == "turn_aborted":
            self.anchor_skipped()
            reason = p.get("reason")
            if self.fold(ref, "turn aborted"):
                assert self.current is not None
                self.current.parts.append(("note", f"[turn aborted: {reason if isinstance(reason, str) else '?'}]",
                                           ref))
                self.current.refs.pop()  # the note is stored, not folded
        elif ptype in _EVENT_TOOLS:
            self.event_tool(ref, ptype, p)
        else:
            self.ledger.skipped(ref, _SKIP_EVENTS.get(ptype if isinstance(ptype, str) else "", "event"))

    def anchor_skipped(self) -> None:
        if self.anchor is not None:
            self.ledger.skipped(self.anchor[1], "injected context")
            self.anchor = None

    def event_tool(self, ref: Ref, ptype: str, p: dict[str, Any]) -> None:
        if ptype == "exec_command_begin":
            cwd = _str(p.get("cwd")) or self.here()
            self.add_tool(ref, "shell", _one_line(command_text(p.get("command")), _MAX_ARG), p.get("call_id"),
                          command_files(p.get("command"), cwd))
        elif ptype == "mcp_tool_call_begin":
            inv = p.get("invocation")
            if isinstance(inv, dict):
                name = f"{inv.get('server', '?')}.{inv.get('tool', '?')}"
                self.add_tool(ref, name, tools.args_summary(inv.get("arguments")), p.get("call_id"))
            else:
                self.ledger.skipped(ref, "tool call without an invocation")
        elif ptype == "patch_apply_begin":
            changes = p.get("changes")
            names = [str(k) for k in changes] if isinstance(changes, dict) else []
            touched = [t for t in (touched_path(n, self.here()) for n in names) if t]
            self.add_tool(ref, "apply_patch", _one_line(", ".join(names), _MAX_ARG), p.get("call_id"), touched)
        else:
            self.web_search(ref, "event", p, p.get("call_id"))

    def item(self, line: Line, p: dict[str, Any], ts: str | None) -> None:
        ptype = p.get("type") if isinstance(p.get("type"), str) else None
        ref = line.offset
        if ptype == "message":
            self.message(line, p, ts)
            return
        if ptype == "reasoning":
            self.ledger.skipped(ref, "reasoning")
            return
        if ptype == "ghost_snapshot":
            self.ledger.skipped(ref, "undo snapshot")
            return
        self.anchor_skipped()
        if ptype == "function_call":
            name = _str(p.get("name")) or "function"
            args = tools.decoded(p.get("arguments"))
            self.add_tool(ref, name, tools.args_summary(args), p.get("call_id"), tools.call_files(args, self.here()))
            if isinstance(args, dict) and "*** Begin Patch" in (text := command_text(args.get("command"))):
                self.patched(text)  # a shell heredoc into apply_patch
        elif ptype == "custom_tool_call":
            self.custom_call(ref, p)
        elif ptype == "local_shell_call":
            action = p.get("action")
            command = action.get("command") if isinstance(action, dict) else None
            workdir = action.get("working_directory") if isinstance(action, dict) else None
            self.add_tool(ref, "shell", _one_line(command_text(command), _MAX_ARG), p.get("call_id") or p.get("id"),
                          command_files(command, workdir if isinstance(workdir, str) else self.here()))
        elif ptype == "web_search_call":
            self.web_search(ref, "item", p, p.get("id") or p.get("call_id"))
        elif ptype == "tool_search_call":
            args = p.get("arguments")
            query = args.get("query") if isinstance(args, dict) else None
            self.add_tool(ref, "tool_search", _one_line(query if isinstance(query, str) else "", _MAX_ARG),
                          p.get("call_id"))
        elif ptype in ("function_call_output", "custom_tool_call_output", "tool_search_output"):
            result = tools.output_summary(p.get("output")) if ptype != "tool_search_output" else None
            if self.fold(ref, "tool result") and result:
                assert self.current is not None
                self.current.parts.append(("tool", result, ref))
        else:
            self.ledger.skipped(ref, "unknown item type")

    def custom_call(self, ref: Ref, p: dict[str, Any]) -> None:
        name = _str(p.get("name")) or "custom_tool"
        script = p.get("input")
        if name == "apply_patch":
            self.add_tool(ref, name, tools.patch_summary(script), p.get("call_id"), patch_files(script, self.here()))
            self.patched(script)
            return
        calls = tools.code_mode_calls(script, self.here()) if name == "exec" else []
        if not calls:
            self.add_tool(ref, name, tools.args_summary(script), p.get("call_id"))
            return
        call_id = p.get("call_id")
        if isinstance(call_id, str) and call_id in self.seen_calls:
            self.ledger.skipped(ref, "duplicate (tool call already seen)")
            return
        for i, (tool, arg, files) in enumerate(calls):
            if i == 0:
                self.add_tool(ref, tool, arg, call_id, files)
            elif self.current is not None:
                self.current.tools.append(tool)
                self.current.parts.append(("tool", f"[tool: {tool}] {arg}".rstrip(), ref))
                for f in files:
                    add_unique(self.current.files, f)

    def message(self, line: Line, p: dict[str, Any], ts: str | None) -> None:
        role = p.get("role")
        ref = line.offset
        if role == "user":
            text = content_text(p.get("content"), ("input_text", "text"))
            if not text.strip() or is_injected(text):
                self.ledger.skipped(ref, "injected context" if text.strip() else "empty")
                return
            if self.event_mode:
                self.anchor_skipped()
                self.anchor = (line.offset, ref)
                return
            user = self.clean(text)
            if user:
                self.open(line.offset, user, ts, (ref, "prompt"))
            else:
                self.close("answer to injected context")
                self.ledger.skipped(ref, "injected context")
        elif role == "assistant":
            self.anchor_skipped()
            text = content_text(p.get("content"), ("output_text", "text"))
            if self.current is not None and text.strip():
                self.current.parts.append(("item", strip_injected(text).strip(), ref))
            else:
                self.ledger.skipped(ref, "answer before any prompt" if self.current is None else "empty")
        else:
            self.ledger.skipped(ref, "developer instructions" if role == "developer" else "message of another role")

    def record(self, line: Line, rtype: str, p: dict[str, Any], ts: str | None) -> None:
        if rtype == "session_meta":
            self.meta(p, line.offset)
        elif rtype == "turn_context":
            turn_cwd = _str(p.get("cwd"))
            if turn_cwd:
                self.state["cwd"] = turn_cwd
                self.project = self.project or turn_cwd
                if self.current is not None and not self.current.turn_cwd:
                    self.current.cwd, self.current.turn_cwd = turn_cwd, True
            self.ledger.skipped(line.offset, "turn context")
        elif rtype == "compacted":
            self.anchor_skipped()
            message = p.get("message")
            summary = strip_injected(message).strip() if isinstance(message, str) else ""
            cur = self.open(line.offset, "", ts, None, "summary" if summary else "exchange",
                            key=f"compacted:{line.offset}")
            if summary:
                cur.parts.append(("note", summary, line.offset))
            else:
                cur.refs.append((line.offset, "compaction"))
        elif rtype == "event_msg":
            self.event(line, p, ts)
        elif rtype == "response_item":
            self.item(line, p, ts)
        else:
            self.ledger.skipped(line.offset, f"{rtype} record")

    def finish(self) -> Parsed:
        self.anchor_skipped()
        self.close()
        ctx = replace(self.ctx, format=SOURCE_KIND, session_id=self.state["session_id"] or "",
                      cwd=self.project or "", git_branch=self.state["git_branch"] or "")
        return Parsed(self.out, self.ledger, ctx)
