"""The ``rule`` hook (PreToolUse, every tool): the user's rules checked before a tool runs.

The daemon matches the tool's name and input against the accepted rules of the session's wing and the global
ones (``rule_check``: precompiled patterns, each match within its time limit) and answers the rule that fires.
Printed as the host's documented decision: ``hookSpecificOutput`` with ``permissionDecision`` (``ask``: the host
asks the user; ``deny``: the call is refused) and ``permissionDecisionReason`` (the rule and its source, one line).
Codex's PreToolUse honours ``deny`` only (an ``ask`` is rejected there and the call runs), so on Codex a ``deny``
rule is sent and an ``ask`` rule prints nothing. No rule fires: nothing printed. Every failure (the daemon down,
hung, or answering garbage): nothing printed, exit 0, as every hook (``mempal.hook.main``).

Stdlib only, nothing that imports ``re`` or ``json`` (``mempal.hook``'s contract): it runs before every tool call.
"""

from __future__ import annotations

from mempal import wirejson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# What a rule's pattern is matched against (mempald.features.rule_check.subject): only these keys are sent when the
# input has one (a Write's megabytes of content never cross the socket); else the input, cut to MAX_INPUT.
SUBJECT_KEYS = ("command", "file_path", "notebook_path", "path", "url")
MAX_INPUT = 8000
RULE_TIMEOUT = 1.5  # below the hook's deadline (mempal.hook.DEADLINES["rule"])
DECISIONS = ("ask", "deny")
MAX_REASON = 500


def on_rule(data: dict[str, Any], agent: str, call: Callable[..., Any]) -> str | None:
    tool = data.get("tool_name")
    tool_input = data.get("tool_input")
    if not isinstance(tool, str) or not tool or tool_input is None:
        return None
    params: dict[str, Any] = {"tool_name": tool, "tool_input": _matched_part(tool_input), "agent": agent}
    cwd = data.get("cwd")
    if isinstance(cwd, str) and cwd.startswith("/"):
        params["cwd"] = cwd
    res = call("rule_check", params, timeout=RULE_TIMEOUT)
    decision = res.get("decision") if isinstance(res, dict) else None
    reason = res.get("reason") if isinstance(res, dict) else None
    if decision not in DECISIONS or not isinstance(reason, str) or not reason.strip():
        return None
    if agent == "codex" and decision != "deny":
        return None  # Codex's PreToolUse cannot ask: the call goes through its own approval flow
    out = {"hookEventName": "PreToolUse", "permissionDecision": decision,
           "permissionDecisionReason": reason[:MAX_REASON]}
    return wirejson.dumps({"hookSpecificOutput": out}, ensure_ascii=False)


def _matched_part(tool_input: Any) -> str:
    """The tool input as the daemon matches it, as JSON: the subject's keys, or the whole input (as a JSON string of
    its first ``MAX_INPUT`` characters when longer)."""
    if isinstance(tool_input, dict):
        part = {k: tool_input[k] for k in SUBJECT_KEYS if k in tool_input}
        if part:
            tool_input = part
    text = wirejson.dumps(tool_input, ensure_ascii=False)
    return text if len(text) <= MAX_INPUT else wirejson.dumps(text[:MAX_INPUT], ensure_ascii=False)


def rule_handler(call: Callable[..., Any]) -> Callable[[dict[str, Any], str], str | None]:
    """``on_rule`` with the hook's ``call`` (its connection, its hung-daemon marking)."""
    def handler(data: dict[str, Any], agent: str) -> str | None:
        return on_rule(data, agent, call)
    return handler
