"""``mempal``: the command-line client of the mempald socket (stdlib only, starts fast).

Exit codes: 0 ok, 1 error reported by the daemon, 2 usage error, 3 daemon not running.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from client import render
from client.connection import DaemonUnavailable, call
from client.protocol import RpcError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_DOWN = 3

Command = Callable[[argparse.Namespace], int]


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def cmd_status(args: argparse.Namespace) -> int:
    if args.watch:
        from client.progress import watch_status

        return watch_status(args.interval)
    st = call("status", {}, timeout=args.timeout)
    if args.json:
        _print_json(st)
    else:
        print(render.status(st))
    return EXIT_OK


def search_params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {"query": args.query, "limit": args.limit}
    for key in ("wing", "room", "memory_type", "source_kind", "agent", "machine", "since", "until"):
        value = getattr(args, key, None)
        if value:
            params[key] = value
    return params


def cmd_search(args: argparse.Namespace) -> int:
    result = call("search", search_params(args), timeout=args.timeout)
    if args.json:
        _print_json(result)
    else:
        print(render.search_results(result))
    return EXIT_OK


def add_filter_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wing", help="only this wing (project or source)")
    p.add_argument("--room", help="only this room (aspect)")
    p.add_argument("--memory-type", dest="memory_type",
                   choices=["decision", "preference", "milestone", "problem", "emotional", "none"])
    p.add_argument("--source-kind", dest="source_kind", help="claude_code, codex, chatgpt, slack, project, ...")
    p.add_argument("--agent", help="claude, codex, ...")
    p.add_argument("--machine", help="only drawers from this machine (shared server stores)")
    p.add_argument("--since", help="ISO date or age like 7d")
    p.add_argument("--until", help="ISO date or age like 1d")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mempal", description="Recall what your agents discussed, verbatim.")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the daemon")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("status", help="what the daemon holds and how far behind it is")
    p.add_argument("--json", action="store_true")
    p.add_argument("--watch", action="store_true", help="live progress bars while the daemon catches up")
    p.add_argument("--interval", type=float, default=1.0)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("search", help="hybrid search over every memory, with citations")
    p.add_argument("query")
    p.add_argument("--limit", "-n", type=int, default=10)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_filter_args(p)
    p.set_defaults(func=cmd_search)

    from client import cli_admin, cli_migrate, cli_pack, cli_palace, cli_sources, cowork_cli, install, mcp_shim

    cli_sources.register(sub)
    cli_palace.register(sub)
    cli_pack.register(sub)
    cli_migrate.register(sub)
    cowork_cli.register(sub)
    install.register(sub)
    mcp_shim.register(sub)
    cli_admin.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        from client.cli_pack import maybe_prune

        pruned = maybe_prune(argv)
        if pruned is not None:
            return pruned
        parser = build_parser()
        args = parser.parse_args(argv)
        func: Command = args.func
        return func(args)
    except DaemonUnavailable as exc:
        print(f"mempal: {exc}", file=sys.stderr)
        return EXIT_DOWN
    except RpcError as exc:
        print(f"mempal: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
