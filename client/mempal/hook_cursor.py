"""``mempal-hook`` for Cursor (``~/.cursor/hooks.json``, installed by ``install-hooks --agent cursor``): Cursor's
hook input and output around the same handlers as Claude Code's (``mempal.hook``).

Cursor's events and what they accept (its hooks documentation): ``sessionStart`` returns
``{"additional_context": ...}`` (and ``env``): the wake-up text of the workspace's wing is given there;
``beforeSubmitPrompt`` accepts only ``{"continue", "user_message"}``, so per-prompt recall cannot be injected
and is not installed; ``stop`` accepts ``followup_message`` only, and Cursor's conversations are read from its
own store as it writes them, so nothing needs saving at stop. Input: ``{hook_event_name, conversation_id,
generation_id, workspace_roots: [...]}``: the first workspace root is the cwd, the conversation the session.

The contract is ``mempal.hook``'s: one JSON object in, at most one out, exit 0 always (fail open), a deadline
below the installed timeout, stdlib only.
"""

from __future__ import annotations

import os
import sys

from mempal import hook, wirejson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Cursor's event -> mempal.hook's handler
EVENTS = {"sessionStart": "session-start"}


def translate(data: dict[str, Any]) -> dict[str, Any]:
    """Cursor's hook input in the shape ``mempal.hook``'s handlers read."""
    out: dict[str, Any] = {}
    roots = data.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str) and roots[0]:
        out["cwd"] = roots[0]
    sid = data.get("conversation_id") or data.get("session_id")
    if isinstance(sid, str) and sid:
        out["session_id"] = sid
    return out


def render(claude_out: str | None) -> str | None:
    """A handler's Claude-shaped output as Cursor's (``additional_context``)."""
    if not claude_out:
        return None
    parsed = wirejson.loads(claude_out)
    spec = parsed.get("hookSpecificOutput") if isinstance(parsed, dict) else None
    text = spec.get("additionalContext") if isinstance(spec, dict) else None
    return wirejson.dumps({"additional_context": text}, ensure_ascii=False) if isinstance(text, str) else None


def run(event: str, stdin: bytes) -> str | None:
    if event not in hook.HANDLERS:
        raise ValueError(f"unknown hook event {event!r}")
    data = wirejson.loads(stdin.decode("utf-8")) if stdin.strip() else {}
    if not isinstance(data, dict):
        raise TypeError("hook input is not a JSON object")
    return render(hook.run([event, "--agent", "cursor"], wirejson.dumps(translate(data)).encode("utf-8")))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    event = args[0] if args else ""
    if hook.PROBE_FLAG in args:
        known = event in hook.HANDLERS  # `mempal doctor` reads "mempal-hook ok" as hook.main's probe says it
        print(f"mempal-hook ok: {event} (cursor)" if known else f"mempal-hook: unknown event {event!r}",
              file=sys.stdout if known else sys.stderr)
        return 0 if event in hook.HANDLERS else 2
    out = None
    armed = hasattr(hook._signal, "setitimer")
    try:
        if armed:
            hook._signal.signal(hook._signal.SIGALRM, hook._on_alarm)
            hook._signal.setitimer(hook._signal.ITIMER_REAL, hook.DEADLINES.get(event, 4.0))
        out = run(event, sys.stdin.buffer.read())
    except BaseException as exc:  # fail open: the daemon down or slow, bad input, anything
        if os.environ.get("MEMPAL_HOOK_DEBUG"):
            print(f"mempal-hook (cursor): {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        if armed:
            hook._signal.setitimer(hook._signal.ITIMER_REAL, 0)
    if out:
        try:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
        except OSError:
            pass
    try:
        hook._report_injection()
    except BaseException:
        return 0  # best effort, after the output is out
    return 0


def entry() -> None:
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)
