"""The reader of a Cline-family task's ``api_conversation_history.json`` (pure), for a task folder that has no
``ui_messages.json`` (a folder copied or exported without it), and of the Cline SDK's session messages.

The file is the model's copy of the task: Anthropic-style messages ``{role, content: str | [blocks]}`` (Roo
Code adds a ``ts``). The user's words are inside wrappers: ``<task>`` (the task), ``<feedback>`` (a follow-up
or the words given with a rejected tool), ``<answer>`` (an answer to the model's question), ``<user_message>``
(Roo Code's feedback, a resumed task's new instructions). Everything else a user message holds is not theirs:
``<environment_details>``, tool results (``[read_file for 'x'] Result:``, ``tool_result`` blocks; folded as
``  -> ...``), the harness's notices. The Cline SDK (Cline 4, ``~/.cline/data/sessions``) keeps the same
messages, the user's words in ``<user_input mode="...">`` (its ``<mode_notice>`` is not theirs), with ``id``s.
An assistant message's text is the answer (``<thinking>`` dropped), its ``tool_use`` blocks and the XML tool
calls older versions wrote in the text become ``[tool: NAME] arg``; ``attempt_completion``'s result,
``ask_followup_question``'s question and ``plan_mode_respond``'s response are answer text. Exchange ids: the
prompt message's ``id``, else its ``ts``, else its index.
"""
from __future__ import annotations

import re
from typing import Any

from mempald.normalize.cline_ui import TaskReader, Turn
from mempald.normalize.common import MAX_ARG, MAX_RESULT, add_unique, as_str, one_line, touched_path
from mempald.normalize.model import strip_injected

_WORDS = re.compile(r"<(task|feedback|answer|user_message|user_input)(?:\s[^>]*)?>\s*(.*?)\s*</\1>", re.S)
_NOTICE = re.compile(r"<mode_notice>.*?(?:</mode_notice>|$)", re.S)  # the SDK's plan/act switch notice
_ENV = re.compile(r"<environment_details>.*?(?:</environment_details>|$)", re.S)
_THINKING = re.compile(r"<thinking>.*?(?:</thinking>|$)", re.S)
_XML_TOOL = re.compile(
    r"<(read_file|write_to_file|replace_in_file|apply_diff|insert_content|search_and_replace|execute_command|"
    r"search_files|list_files|list_code_definition_names|codebase_search|browser_action|use_mcp_tool|"
    r"access_mcp_resource|ask_followup_question|attempt_completion|plan_mode_respond|new_task|switch_mode|"
    r"update_todo_list|fetch_instructions|web_fetch|load_mcp_documentation)>(.*?)(?:</\1>|$)", re.S)
_PARAM = re.compile(r"<(\w+)>\s*(.*?)\s*</\1>", re.S)
_SAID = {"attempt_completion": "result", "ask_followup_question": "question", "plan_mode_respond": "response"}
_ARGS = ("path", "command", "regex", "query", "url", "server_name", "uri", "message", "mode", "mode_slug")
_FILE_TOOLS = frozenset({"read_file", "write_to_file", "replace_in_file", "apply_diff", "insert_content",
                         "search_and_replace"})
_HEADER = re.compile(r"^\s*\[[^\]\n]+\] Result:\s*")


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _call(reader: TaskReader, turn: Turn, name: str, args: Any) -> bool:
    """One tool call into ``turn``: a summary line, or the answer text of the tools whose argument is what the
    model said (True then)."""
    said = as_str(args.get(_SAID[name])).strip() if name in _SAID and isinstance(args, dict) else ""
    if said:
        turn.reply.append(strip_injected(said))
        return True
    arg = next((args[k] for k in _ARGS if isinstance(args, dict) and isinstance(args.get(k), str)), "")
    if not arg and isinstance(args, dict):  # the SDK's batched tools: read_files {files: [{path}]}, run_commands
        many = args.get("files") or args.get("commands") or args.get("paths")
        arg = ", ".join(x if isinstance(x, str) else as_str(x.get("path")) if isinstance(x, dict) else ""
                        for x in many) if isinstance(many, list) else ""
    if not arg and isinstance(args, dict) and args:
        arg = one_line(args, MAX_ARG)
    turn.reply.append(f"[tool: {name}] {one_line(arg, MAX_ARG)}".rstrip())
    turn.tools.append(name)
    if name in _FILE_TOOLS and isinstance(args, dict):
        add_unique(turn.files, touched_path(args.get("path"), reader.cwd or None))
    return False


def _text(turn: Turn, text: str) -> bool:
    text = strip_injected(_THINKING.sub("", text)).strip()
    if text:
        turn.reply.append(text)
    return bool(text)


def _assistant(reader: TaskReader, turn: Turn, blocks: list[dict[str, Any]]) -> bool:
    said = False
    for b in blocks:
        kind = b.get("type")
        if kind == "text":
            text, pos = as_str(b.get("text")), 0
            for m in _XML_TOOL.finditer(text):  # in the order written: text, call, text...
                said = _text(turn, text[pos:m.start()]) or said
                said = _call(reader, turn, m.group(1), dict(_PARAM.findall(m.group(2)))) or said
                pos = m.end()
            said = _text(turn, text[pos:]) or said
        elif kind == "tool_use":
            said = _call(reader, turn, as_str(b.get("name")) or "tool", b.get("input")) or said
    return said


def _part(item: Any) -> str:
    """A tool result's part: text, an SDK result record (``{query, result, success}``) or a string."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        return as_str(item.get("text")) or as_str(item.get("result")) or as_str(item.get("error"))
    return ""


def _result_text(blocks: list[dict[str, Any]]) -> str:
    out: list[str] = []
    for b in blocks:
        if b.get("type") == "tool_result":
            content = b.get("content")
            parts = content if isinstance(content, list) else [content]
            out.append(" ".join(p for p in map(_part, parts) if p))
        elif b.get("type") == "text":
            out.append(_HEADER.sub("", _ENV.sub("", as_str(b.get("text")))))
    return " ".join(x.strip() for x in out if x.strip())


def read_api(reader: TaskReader, messages: list[Any], ref_name: str = "api_conversation_history.json") -> None:
    """Every message of the history into ``reader`` (its ``out`` and ``ledger``), in order; ``ref_name``: the
    file they are from (the SDK's ``<session id>.messages.json`` holds the same messages)."""
    for i, msg in enumerate(messages):
        ref = f"{ref_name}#{i}"
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            reader.ledger.skipped(ref, "not a message")
            continue
        blocks = _blocks(msg.get("content"))
        if msg["role"] == "assistant":
            if reader.turn is None:
                reader.ledger.skipped(ref, "answer before any prompt")
            elif _assistant(reader, reader.turn, blocks):
                reader.ledger.stored(ref, reader.turn.key, "answer")
            else:
                reader.ledger.folded(ref, reader.turn.key, "tool call" if reader.turn.tools else "reasoning only")
            continue
        text = "\n".join(as_str(b.get("text")) for b in blocks if b.get("type") == "text")
        words = [w for w in (_NOTICE.sub("", m.group(2)).strip() for m in _WORDS.finditer(_ENV.sub("", text))) if w]
        if not words and reader.subtask and not reader.out and reader.turn is None and not any(
                b.get("type") == "tool_result" for b in blocks):
            words = [w for w in [_ENV.sub("", text).strip()] if w]  # a sub-agent's task, as its lead wrote it
        if words:
            images = sum(1 for b in blocks if b.get("type") == "image")
            opening = "<task>" in text or (not reader.out and reader.turn is None)
            # what the wrapped words came with (a tool's result, the harness's notice) is not theirs: dropped
            reader.prompt(ref, {"ts": msg.get("ts"), "id": msg.get("id"), "images": ["image"] * images},
                          "\n".join(words), opening=opening)
        elif reader.turn is None:
            reader.ledger.skipped(ref, "context before any prompt")
        else:
            result = _result_text(blocks)
            if result:
                reader.turn.reply.append(f"  -> {one_line(result, MAX_RESULT)}")
            reader.ledger.folded(ref, reader.turn.key, "tool result")
