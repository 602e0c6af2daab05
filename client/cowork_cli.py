"""``mempal cowork push|drain|status``: the Claude Code <-> Codex inbox from the command line (stdlib only).

    mempal cowork push --to claude|codex --cwd DIR TEXT   queue a message for the partner's next prompt
    mempal cowork drain --target claude|codex --cwd DIR   take (and remove) the pending messages
    mempal cowork status --cwd DIR                        both inboxes, without draining

``--cwd`` defaults to the current directory; each command takes ``--json``. The sender of a push is
``--from``, else the agent whose shell runs the command (Claude Code sets ``CLAUDECODE=1``), else ``user``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from client.connection import call

AGENTS = ("claude", "codex")
EXIT_OK = 0


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def detect_sender() -> str:
    if os.environ.get("CLAUDECODE") == "1":
        return "claude"
    if any(os.environ.get(k) for k in ("CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_THREAD_ID")):
        return "codex"
    return "user"


def _when(ts: Any) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(float(ts)))
    except (TypeError, ValueError):
        return "?"


def render_messages(messages: list[dict[str, Any]]) -> str:
    out = []
    for m in messages:
        out.append(f"[{m.get('id')}] from {m.get('from')} at {_when(m.get('created_at'))}:")
        out.extend("    " + line for line in str(m.get("text", "")).splitlines() or [""])
    return "\n".join(out)


def _cwd(args: argparse.Namespace) -> str:
    return os.path.abspath(args.cwd or os.getcwd())


def cmd_push(args: argparse.Namespace) -> int:
    params = {"to": args.to, "from": args.sender or detect_sender(), "cwd": _cwd(args),
              "text": args.text}
    res = call("cowork_push", params, timeout=args.timeout)
    if args.json:
        _print_json(res)
    else:
        print(f"queued for {args.to} in {res['message']['cwd']} ({res['pending']} pending); "
              f"delivered {res.get('delivery', 'at its next prompt')}")
    return EXIT_OK


def cmd_drain(args: argparse.Namespace) -> int:
    res = call("cowork_drain", {"target": args.target, "cwd": _cwd(args)}, timeout=args.timeout)
    if args.json:
        _print_json(res)
    elif res["messages"]:
        print(render_messages(res["messages"]))
    else:
        print(f"{args.target}'s inbox is empty")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    res = call("cowork_status", {"cwd": _cwd(args)}, timeout=args.timeout)
    if args.json:
        _print_json(res)
        return EXIT_OK
    print(f"cowork inboxes for {res['cwd']}")
    for agent in AGENTS:
        box = res["inboxes"].get(agent, {})
        print(f"  {agent}: {box.get('pending', 0)} pending ({box.get('bytes', 0)} bytes)")
        if box.get("messages"):
            print("\n".join("    " + line for line in render_messages(box["messages"]).splitlines()))
    return EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``cowork push|drain|status`` to the ``mempal`` parser."""
    cowork = sub.add_parser("cowork", help="the Claude Code <-> Codex inbox for a project")
    csub = cowork.add_subparsers(dest="cowork_command", required=True, metavar="ACTION")

    p = csub.add_parser("push", help="queue a message for the partner agent's next prompt")
    p.add_argument("--to", required=True, choices=AGENTS)
    p.add_argument("--cwd", help="the project directory (default: here)")
    p.add_argument("--from", dest="sender", choices=[*AGENTS, "user"],
                   help="who sends it (default: the agent running this shell, else user)")
    p.add_argument("--json", action="store_true")
    p.add_argument("text")
    p.set_defaults(func=cmd_push)

    p = csub.add_parser("drain", help="take the pending messages (they are removed)")
    p.add_argument("--target", required=True, choices=AGENTS)
    p.add_argument("--cwd", help="the project directory (default: here)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_drain)

    p = csub.add_parser("status", help="both inboxes, without draining")
    p.add_argument("--cwd", help="the project directory (default: here)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)
