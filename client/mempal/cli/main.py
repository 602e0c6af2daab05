"""``mempal``: the command-line client of the mempald socket (stdlib only, starts fast).

The commands come from the method table (``mempal.methods``): each method that declares command words is a
command, with its parser derived from its parameters (``mempal.cli.build``) and its output from
``mempal.cli.commands``. A few commands run here without the daemon (``LOCAL``). Only the parser of the command
being run is built.

Users of the seed tools (MemPal, mempal, memorypack) type their old spellings: ``seed_spellings`` turns
them into ours before anything else (hidden from the overview; the README lists them). ``--palace PATH``, on any
command, names the data directory whose daemon to talk to.

Exit codes: 0 ok, 1 error reported by the daemon, 2 usage error, 3 daemon not running (or not this palace's).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from mempal.cli.commands import UsageError
from mempal.connection import DaemonUnavailable
from mempal.protocol import RpcError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_DOWN = 3

# Commands that do not go through the socket: (their words, help, module whose ``register`` adds them).
LOCAL: tuple[tuple[str, str, str], ...] = (
    ("config", "settings: show, get KEY, set KEY VALUE, edit", "mempal.cli.admin"),
    ("logs", "show the daemon's logs (journal or launchd log)", "mempal.cli.admin"),
    ("doctor", "check the installation and explain each fix (exit 0 only if all pass)", "mempal.cli.admin"),
    ("identity", "edit the L0 identity file", "mempal.cli.admin"),
    ("install-hooks", "add mempal's hooks to Claude Code (and Codex) settings", "mempal.install"),
    ("uninstall-hooks", "remove exactly the hooks install-hooks added", "mempal.install"),
    ("install-mcp", "register the mempal MCP server with Claude Code (and Codex)", "mempal.install"),
    ("mcp", "serve mempal's tools over MCP on stdin/stdout (for Claude Code, Codex...)", "mempal.mcp_server"),
    ("ui", "browse the palace in a local web viewer (127.0.0.1, key-protected)", "mempal.ui.command"),
    ("bench", "retrieval benchmarks without the daemon: bench longmemeval FILE", "mempal.cli.bench"),
)


# old command words -> ours (where the old word means nothing else here)
COMMAND_ALIASES: dict[str, tuple[str, ...]] = {
    "cowork-status": ("cowork", "status"),
    "cowork-drain": ("cowork", "drain"),
    "cowork-push": ("cowork", "push"),
    "cowork-peek": ("cowork", "peek"),
    "cowork-install-hooks": ("install-hooks",),
    "ingest": ("mine",),
}
WATCH_ACTIONS = ("add", "remove", "list")


def seed_spellings(argv: list[str]) -> list[str]:
    """``argv`` with the seed tools' spellings turned into ours (module docstring); ``--palace PATH``, anywhere
    before ``--``, is taken out and sets ``MEMPAL_DATA_DIR`` for this process."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out += argv[i:]
            break
        if arg == "--palace" or arg.startswith("--palace="):
            value = arg.split("=", 1)[1] if "=" in arg else (argv[i + 1] if i + 1 < len(argv) else "")
            if not value:
                raise UsageError("--palace needs a PATH (the data directory of the palace)")
            os.environ["MEMPAL_DATA_DIR"] = os.path.abspath(os.path.expanduser(value))
            i += 1 if "=" in arg else 2
            continue
        out.append(arg)
        i += 1
    first = 0
    while first < len(out) and out[first].startswith("-"):  # the global options (mempal --timeout N COMMAND)
        first += 2 if out[first] == "--timeout" else 1
    if first >= len(out):
        return out
    word, rest = out[first], out[first + 1:]
    if word in COMMAND_ALIASES:
        words = list(COMMAND_ALIASES[word])
        if word == "cowork-install-hooks":
            rest = ["--codex" if a == "--global-codex" else a for a in rest]
        return out[:first] + words + rest
    if word == "serve":
        if "--mcp" not in rest:
            raise UsageError("`mempal serve` speaks MCP only: `mempal serve --mcp` (or `mempal mcp`); the daemon "
                             "itself is `mempald`")
        return [*out[:first], "mcp", *(a for a in rest if a != "--mcp")]
    if word == "watch" and rest and rest[0] not in WATCH_ACTIONS and not rest[0].startswith("-"):
        return [*out[:first], "watch", "add", *rest]  # memorypack: `watch DIR [--interval N]`
    return out


def socket_commands() -> dict[tuple[str, ...], str]:
    """Command words -> method name, for every method with a command line."""
    from mempal.methods import METHODS

    return {m.cli: m.name for m in METHODS.values() if m.cli is not None}


def overview() -> str:
    from mempal.methods import METHODS

    lines = ["usage: mempal [--timeout SECONDS] COMMAND [ARGS...]", "",
             "Recall what your agents discussed, verbatim. Commands:"]
    rows = [(" ".join(m.cli), m.summary) for m in METHODS.values() if m.cli is not None]
    rows += [(words, text) for words, text, _ in LOCAL]
    width = max(len(r[0]) for r in rows)
    lines += [f"  {words:<{width}}  {text.split('. ')[0].rstrip('.')}" for words, text in rows]
    lines += ["", "`mempal COMMAND --help` describes a command. The daemon is `mempald`."]
    return "\n".join(lines)


def _global_options(argv: list[str]) -> tuple[float | None, list[str]]:
    timeout: float | None = None
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        arg = argv[i]
        if arg == "--timeout" and i + 1 < len(argv):
            timeout = float(argv[i + 1])
            i += 2
        elif arg.startswith("--timeout="):
            timeout = float(arg.split("=", 1)[1])
            i += 1
        elif arg in ("-h", "--help"):
            return timeout, []
        elif arg == "--version":
            from importlib.metadata import PackageNotFoundError, version

            try:
                print(f"mempal {version('mempald')}")
            except PackageNotFoundError:
                print("mempal (not installed)")
            raise SystemExit(EXIT_OK)
        else:
            raise UsageError(f"unknown option {arg} (options go after the command: mempal COMMAND {arg})")
    return timeout, argv[i:]


def _match(words: list[str], table: dict[tuple[str, ...], Any]) -> tuple[str, ...] | None:
    best: tuple[str, ...] | None = None
    for cmd in table:
        if tuple(words[: len(cmd)]) == cmd and (best is None or len(cmd) > len(best)):
            best = cmd
    return best


def _run_socket(words: tuple[str, ...], method_name: str, rest: list[str], timeout: float | None) -> int:
    from mempal.cli.build import params_from, parser_for
    from mempal.cli.commands import COMMANDS, Command, run_command
    from mempal.methods import METHODS

    cmd = COMMANDS.get(method_name) or Command(method_name)
    parser = parser_for(METHODS[method_name], "mempal " + " ".join(words))
    if cmd.options is not None:
        cmd.options(parser)
    args = parser.parse_args(rest)
    args.timeout = timeout
    return run_command(cmd, args, params_from(cmd.method, args))


# local commands that print text of their own: ``--json`` wraps what they print (README: every command takes it)
JSON_WRAPPED = ("install-hooks", "uninstall-hooks", "install-mcp", "logs")


def _captured(run: Callable[[], int]) -> tuple[int, str, str]:
    """Run ``run`` with file descriptors 1 and 2 sent to temporary files (so the programs it starts, such as
    journalctl, are caught too): its exit code, stdout and stderr."""
    import tempfile

    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            try:
                code = run()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        out.seek(0)
        err.seek(0)
        return code, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")


def _as_json(word: str, run: Callable[[], int]) -> int:
    import json

    code, out, err = _captured(run)
    print(json.dumps({"command": word, "ok": code == 0, "exit_code": code, "output": out.splitlines(),
                      "messages": err.splitlines()}, indent=2, ensure_ascii=False))
    return code


def _run_local(word: str, module: str, argv: list[str]) -> int:
    import importlib

    parser = argparse.ArgumentParser(prog="mempal")
    sub = parser.add_subparsers(dest="command", required=True)
    importlib.import_module(module).register(sub)
    if word in JSON_WRAPPED:
        sub.choices[word].add_argument("--json", action="store_true", dest="wrap_json",
                                       help="print {command, ok, exit_code, output, messages} as JSON")
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    if getattr(args, "wrap_json", False):
        if getattr(args, "follow", False):
            raise UsageError("logs --json prints the last lines once: leave out --follow")
        return _as_json(word, lambda: func(args))
    return func(args)


def _group_help(prefix: str, commands: dict[tuple[str, ...], str]) -> str:
    from mempal.methods import METHODS

    rows = [(" ".join(w), METHODS[m].summary) for w, m in commands.items() if w[0] == prefix]
    return "\n".join([f"usage: mempal {prefix} ACTION ...", ""] + [f"  mempal {w}: {s}" for w, s in rows])


def dispatch(argv: list[str]) -> int:
    timeout, words = _global_options(seed_spellings(argv))
    if not words:
        print(overview())
        return EXIT_OK
    commands = socket_commands()
    match = _match(words, commands)
    if match is not None:
        return _run_socket(match, commands[match], words[len(match):], timeout)
    for name, _help, module in LOCAL:
        if words[0] == name:
            return _run_local(name, module, words)
    if any(w[0] == words[0] for w in commands):
        print(_group_help(words[0], commands), file=sys.stderr)
        return EXIT_USAGE
    print(f"mempal: unknown command {words[0]!r}\n\n{overview()}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return dispatch(argv)
    except DaemonUnavailable as exc:
        print(f"mempal: {exc}", file=sys.stderr)
        return EXIT_DOWN
    except RpcError as exc:
        print(f"mempal: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except (UsageError, ValueError) as exc:
        print(f"mempal: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # a file named on the command line, or stdout closed by `| head`
        if isinstance(exc, BrokenPipeError):
            _quiet_stdout()
            return EXIT_OK
        print(f"mempal: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


def _quiet_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's final flush says nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
