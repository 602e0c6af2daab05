"""The command line of a socket method, derived from its declaration (``mempal.methods``).

``parser_for`` gives a method's argparse parser: positionals and flags from its parameters (types, choices,
help), hidden aliases for the spellings users of the seed tools type, and ``--json``. ``params_from`` turns
the parsed arguments back into the method's parameters: paths made absolute, files read, filled parameters
(the working directory, who is calling) supplied.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from mempal.methods.spec import Method, Param
from mempal.methods.vocab import AGENTS

ALIAS = "_alias_"  # dest prefix of a flag that spells a positional parameter another way


def flag_names(p: Param) -> tuple[str, ...]:
    return p.cli.flags or (f"--{p.name.replace('_', '-')}",)


def _type(p: Param) -> Callable[[str], Any] | None:
    return {"int": int, "float": float}.get(p.kind)


def _plural(p: Param) -> bool:
    return p.kind in ("strs", "paths", "ids")


def add_param(parser: argparse.ArgumentParser, p: Param) -> None:
    if not p.cli.show:
        return
    kwargs: dict[str, Any] = {"help": p.help}
    choices = p.choices or None
    if p.cli.positional:
        nargs = p.cli.nargs or (None if p.required else "?")
        kwargs.update(nargs=nargs, metavar=p.cli.metavar or p.name.upper())
        if _type(p):
            kwargs["type"] = _type(p)
        if choices and p.kind == "enum":
            kwargs["choices"] = choices
        parser.add_argument(p.name, **kwargs)
        for alias in p.cli.aliases:
            parser.add_argument(alias, dest=ALIAS + p.name, help=argparse.SUPPRESS)
        return
    kwargs["dest"] = p.name
    if p.kind == "bool":
        kwargs["action"] = "store_true"
    else:
        kwargs["metavar"] = p.cli.metavar or p.name.upper()
        if _type(p):
            kwargs["type"] = _type(p)
        if choices:
            kwargs["choices"] = choices
        if _plural(p):
            kwargs["action"] = "append"
    if p.default is not None and p.kind != "bool":
        kwargs["help"] = f"{p.help} (default: {p.default})"
    parser.add_argument(*flag_names(p), **kwargs)
    for alias in p.cli.aliases:
        hidden = {k: v for k, v in kwargs.items() if k != "help"}
        parser.add_argument(alias, **hidden, help=argparse.SUPPRESS)


def parser_for(method: Method, prog: str, *, json_flag: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=method.summary)
    for p in method.params:
        add_param(parser, p)
    if json_flag:
        parser.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def detect_agent() -> str:
    """Who runs this command: the agent whose shell it is (Claude Code sets CLAUDECODE=1; Codex sets its
    sandbox variables), else the user."""
    if os.environ.get("CLAUDECODE") == "1":
        return "claude"
    if any(os.environ.get(k) for k in ("CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_THREAD_ID")):
        return "codex"
    return "user"


def fill_value(p: Param, agent: str) -> Any:
    """The value a surface gives a filled parameter the caller left out (None: it cannot tell)."""
    if p.fill == "cwd":
        return os.getcwd()
    value: str | None = None
    if p.fill == "agent":
        value = agent
    elif p.fill == "partner" and agent in AGENTS:
        value = next(a for a in AGENTS if a != agent)
    if value is not None and p.choices and value not in p.choices:
        return None  # e.g. "user" has no inbox: the daemon says the parameter is missing
    return value


def _read(value: str) -> str:
    if value == "-":
        return sys.stdin.read()
    with open(os.path.expanduser(value), encoding="utf-8") as fh:
        return fh.read()


def _absolute(value: str) -> str:
    return os.path.abspath(os.path.expanduser(value))


def params_from(method: Method, args: argparse.Namespace) -> dict[str, Any]:
    """The method's parameters from parsed arguments (module docstring)."""
    out: dict[str, Any] = {}
    agent = detect_agent()
    for p in method.params:
        value = getattr(args, p.name, None)
        alias = getattr(args, ALIAS + p.name, None)
        if value is None and alias is not None:
            value = alias
        if p.cli.read_file and p.cli.show:
            value = _read("-" if value is None else value)
        if value is None and p.fill:
            value = fill_value(p, agent)
        if value is None or value is False or value == []:
            continue
        if p.kind == "path":
            value = _absolute(value)
        elif p.kind == "paths":
            value = [_absolute(v) for v in value]
        out[p.name] = value
    return out
