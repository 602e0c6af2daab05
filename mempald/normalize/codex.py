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
  preamble before ``## My request for Codex:`` and every ``<mempal-context>`` span. A custom prompt's
  expansion (``/prompts:x args`` arrives as the whole prompt file, ``## User Input`` first) is the prompt
  ``[custom prompt] args`` (``[custom prompt: its first heading]`` without arguments): the template is not the
  user's words.
- The answer is taken once: ``response_item`` assistant messages when the exchange has any, otherwise the
  ``agent_message`` events. Reasoning is dropped (``agent_reasoning`` and ``reasoning`` items).
- Tool calls (``codex_tools``) become ``[tool: name] arg`` lines, deduplicated by ``call_id``, with their
  outputs as ``  -> short result`` lines; a code-mode ``exec`` script reads as the tool calls it makes.
- A ``compacted`` item is an exchange of kind ``summary`` (user empty); what the agent says after it, before
  the next prompt, is appended to it. Its ``replacement_history`` is old context, never new turns.
- ``turn_aborted`` keeps the exchange with what was said and appends ``[turn aborted: reason]``.
- A prompt that is nothing but injected context is dropped together with the answer to it.

Keys are the byte offset of the exchange's first line (``compacted:<offset>`` for summaries): unique in the
file and stable across re-reads. session_id, cwd and git branch come from ``session_meta`` (cwd updated by
``turn_context``; the session's project stays its first cwd), else from the cursor context; agent is
``codex`` (``codex/subagent`` for spawned sub-agent sessions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mempald.normalize import codex_tools as tools
from mempald.normalize.codex_turns import AGENT, SOURCE_KIND, Reader, is_injected
from mempald.normalize.common import one_line as _one_line
from mempald.normalize.format import Format, Input, Parsed, Place, Probe
from mempald.normalize.model import CursorContext, Exchange, Line, strip_injected

__all__ = ["AGENT", "FORMAT", "SOURCE_KIND", "clean_human", "is_injected", "parse", "parse_lines", "session_meta"]
TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state"})

_IDE_REQUEST_MARK = "## My request for Codex:"
_RESPONSE_ITEM_TYPES = frozenset({
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "web_search_call", "ghost_snapshot",
})
_USER_INPUT = re.compile(r"\A\s*## User Input\s*\n+```[a-z]*\n(.*?)\n?```", re.S)
_HEADING = re.compile(r"^#{1,3}\s+(.+?)\s*$|^(Goal:.+?)$", re.M)


def _loads(raw: bytes | str) -> Any:
    return tools.loads(raw)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def clean_human(text: str) -> str:
    """The human's words of a prompt: injected spans, the IDE preamble and custom prompt templates cut."""
    text = strip_injected(text)
    if _IDE_REQUEST_MARK in text:
        # the IDE extension prefixes the prompt with open files and selections: keep the request only
        text = text.split(_IDE_REQUEST_MARK, 1)[1]
    m = _USER_INPUT.match(text)
    if m or (text.startswith("\n") and text.lstrip("\n").startswith("## ") and len(text) > 1000):
        args = " ".join(m.group(1).split()) if m else ""
        if args and args != "$ARGUMENTS":
            return f"[custom prompt] {args}"
        body = text[m.end():] if m else text
        head = next((h.group(1) or h.group(2) for h in _HEADING.finditer(body)
                     if (h.group(1) or h.group(2) or "").strip() not in ("Outline", "User Input")), "")
        return f"[custom prompt: {_one_line(head.strip(), 100)}]" if head else "[custom prompt]"
    return text.strip()


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


def _envelope(rec: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    rtype = rec.get("type")
    payload = rec.get("payload")
    if isinstance(rtype, str) and isinstance(payload, dict):
        return rtype, payload
    if isinstance(rtype, str) and rtype in _RESPONSE_ITEM_TYPES and "payload" not in rec:
        return "response_item", rec  # pre-envelope rollouts: bare response items
    return None


def parse(inp: Input) -> Parsed:
    """Exchanges in the given complete lines, in file order. Never raises: bad lines are skipped."""
    records: list[tuple[Line, str, dict[str, Any], str | None]] = []
    bad: list[tuple[int, str]] = []
    for line in inp.lines:
        rec = _loads(line.raw)
        if not isinstance(rec, dict):
            bad.append((line.offset, "not JSON" if rec is None else "not an object"))
            continue
        meta = _meta_payload(rec)
        if meta is not None:
            records.append((line, "session_meta", meta, _str(rec.get("timestamp"))))
            continue
        env = _envelope(rec)
        if env is None:
            bad.append((line.offset, "no envelope"))
            continue
        records.append((line, env[0], env[1], _str(rec.get("timestamp"))))
    reader = Reader(inp, records, clean_human, _meta_dict)
    for ref, reason in bad:
        reader.ledger.skipped(ref, reason)
    for line, rtype, payload, ts in records:
        reader.record(line, rtype, payload, ts)
    return reader.finish()


def parse_lines(
    lines: Sequence[Line],
    *,
    session_id: str | None = None,
    cwd: str | None = None,
    git_branch: str | None = None,
    first_position: int = 0,
) -> list[Exchange]:
    """``parse`` with fallbacks for a read that starts after the ``session_meta`` line."""
    ctx = CursorContext(format=SOURCE_KIND, session_id=session_id or "", cwd=cwd or "", git_branch=git_branch or "",
                        position=first_position)
    return parse(Input(lines=lines, context=ctx)).exchanges


def detect(probe: Probe) -> bool:
    """JSONL whose first records are ``session_meta`` / Codex envelopes, or a bare pre-envelope session meta."""
    for rec in probe.records:
        rtype = rec.get("type") if isinstance(rec.get("type"), str) else None
        if rtype == "session_meta" or (rtype in TYPES and isinstance(rec.get("payload"), dict)):
            return True
        if "type" not in rec and "payload" not in rec and isinstance(rec.get("id"), str) and "timestamp" in rec and (
                "instructions" in rec or "git" in rec):
            return True
    first = probe.text.split("\n", 1)[0][:4096]
    return first.startswith("{") and re.search(r'"type"\s*:\s*"session_meta"', first) is not None


_HOME = ("~/.codex/sessions",)
FORMAT = Format(SOURCE_KIND, "lines", detect, parse, suffixes=(".jsonl",), agent="codex", archive=True,
                places=(Place(
    "Codex", linux=_HOME, macos=_HOME, windows=_HOME, globs=("**/*.jsonl",), setting="codex_sessions"),),
    summary="Codex CLI rollouts (~/.codex/sessions)")
