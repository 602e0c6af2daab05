"""What differs when Gemini CLI or Antigravity CLI runs ``mempal-hook`` (stdlib only, like ``mempal.hook``: no
``json``, ``re``, ``pathlib`` or ``typing`` on its path).

- **Gemini CLI** sends Claude Code's fields (``session_id``, ``transcript_path``, ``cwd``, ``prompt``) and reads
  ``hookSpecificOutput.additionalContext`` under its own event names: ``BeforeAgent`` (the prompt hook),
  ``SessionStart``; ``AfterAgent`` (the stop hook) takes ``decision: "block"`` with a ``reason`` as Claude's Stop
  does. Its transcript is the session file the daemon watches.
- **Antigravity CLI** sends ``conversationId``, ``workspacePaths``, ``transcriptPath`` (and ``invocationNum`` on
  ``PreInvocation``, which fires before every model call: only the first of a turn is the user's prompt, which is
  not in the input but in the transcript, the last ``USER_INPUT`` step's ``<USER_REQUEST>``). Context goes in
  ``injectSteps: [{ephemeralMessage}]``; ``Stop`` takes ``decision: "continue"`` with a ``reason``, and shows no
  message of ours. Its hook events are ``PreToolUse``, ``PostToolUse``, ``PreInvocation``, ``PostInvocation``
  and ``Stop``: with no session start, a conversation's first prompt brings the wake-up as well. It reads every
  hook's stdout as JSON (an empty or broken answer counts as the hook failing), so the hook answers ``{}`` when
  it has nothing to say, whatever went wrong.
- **Cline** (3.36+; ``mempal.hook_cline``) sends ``taskId``, ``workspaceRoots`` and the event's own object
  (``userPromptSubmit.prompt``); context goes in ``contextModification`` next to ``cancel: false``, which is also
  its answer when there is nothing to add.
"""

from __future__ import annotations

from mempal import wirejson
from mempal.hook_cline import CLINE_EMPTY, adapt_cline, is_cline

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

AGENTS = ("claude", "codex", "gemini", "antigravity", "cline")
GEMINI_EVENTS = {"UserPromptSubmit": "BeforeAgent"}
TAIL_BYTES = 1 << 20  # how much of the end of an Antigravity transcript is searched for the last request
_OPEN, _CLOSE = "<USER_REQUEST>", "</USER_REQUEST>"
_BLOCKS = ("<ADDITIONAL_METADATA>", "<USER_SETTINGS_CHANGE>")


def agent_of(args: list[str], data: dict[str, Any]) -> str:
    """``--agent NAME`` when given, else what the input's shape and transcript say."""
    if "--agent" in args:
        i = args.index("--agent")
        if i + 1 < len(args) and args[i + 1] in AGENTS:
            return args[i + 1]
    if "conversationId" in data and "transcriptPath" in data:
        return "antigravity"
    if is_cline(data):
        return "cline"
    transcript = data.get("transcript_path")
    if isinstance(transcript, str) and "/.codex/" in transcript:
        return "codex"
    if isinstance(transcript, str) and "/.gemini/tmp/" in transcript.replace("\\", "/"):
        return "gemini"
    return "claude"


def request_text(content: str) -> str:
    """The user's words in an Antigravity ``USER_INPUT`` step ("" when it holds none)."""
    start = content.find(_OPEN)
    if start >= 0:
        end = content.find(_CLOSE, start)
        return content[start + len(_OPEN): end if end >= 0 else len(content)].strip()
    cut = min([i for i in (content.find(b) for b in _BLOCKS) if i >= 0] or [len(content)])
    return content[:cut].strip()


def last_request(path: str) -> tuple[str, bool]:
    """The last request the user typed in an Antigravity transcript ("" when none is found), and whether it is
    the conversation's first."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - TAIL_BYTES))
        tail = fh.read()
    found: list[str] = []
    for raw in reversed(tail.split(b"\n")):
        if b'"USER_INPUT"' not in raw:
            continue
        try:
            step = wirejson.loads(raw.decode("utf-8"))
        except ValueError:
            continue
        if isinstance(step, dict) and step.get("type") == "USER_INPUT" and \
                step.get("source", "USER_EXPLICIT") == "USER_EXPLICIT" and isinstance(step.get("content"), str):
            found.append(request_text(step["content"]))
            if len(found) > 1:
                break
    return (found[0] if found else ""), len(found) == 1 and size <= TAIL_BYTES


def adapt(agent: str, event: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """The input in the fields the handlers read (Claude Code's); None when this call has nothing to do."""
    if agent == "cline":
        return adapt_cline(event, data)
    if agent != "antigravity":
        return data
    out = dict(data)
    for theirs, ours in (("conversationId", "session_id"), ("transcriptPath", "transcript_path")):
        if isinstance(data.get(theirs), str):
            out[ours] = data[theirs]
    paths = data.get("workspacePaths")
    if isinstance(paths, list) and paths and isinstance(paths[0], str):
        out["cwd"] = paths[0]
    if event == "prompt":
        if data.get("invocationNum") not in (None, 0, 1):
            return None  # a later model call of the same turn: the prompt was answered already
        transcript = out.get("transcript_path")
        out["prompt"], out["wake"] = last_request(transcript) if isinstance(transcript, str) and transcript else \
            ("", False)
    return out


def injection(agent: str, event: str, context: str) -> dict[str, Any]:
    """The output that puts ``context`` (already wrapped) before the model, as this agent reads it."""
    if agent == "antigravity":
        return {"injectSteps": [{"ephemeralMessage": context}]}
    if agent == "cline":
        return {"cancel": False, "contextModification": context}
    if agent == "gemini":
        event = GEMINI_EVENTS.get(event, event)
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}


def stop_reply(agent: str, out: dict[str, Any]) -> str | None:
    """The stop hook's output (a block asking to save, or a note) as this agent reads it; None: print nothing."""
    if agent == "antigravity":
        if out.get("decision") != "block":
            return None
        out = {"decision": "continue", "reason": out.get("reason", "")}
    return wirejson.dumps(out, ensure_ascii=False)


def joined(outputs: list[str | None]) -> str | None:
    """Antigravity answers (``injectSteps``) made one: the steps of each, in order."""
    steps = [step for out in outputs if out for step in wirejson.loads(out).get("injectSteps", [])]
    return wirejson.dumps({"injectSteps": steps}, ensure_ascii=False) if steps else None


def empty_reply(args: list[str]) -> str | None:
    """What the hook prints when it has nothing to say: ``{}`` for Antigravity (it takes no output as a failed
    hook), Cline's no-op ``{"cancel": false}``, nothing for the others."""
    named = args[args.index("--agent") + 1:][:1] if "--agent" in args else []
    return "{}" if named == ["antigravity"] else CLINE_EMPTY if named == ["cline"] else None
