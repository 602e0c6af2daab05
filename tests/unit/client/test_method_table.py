"""One declaration per socket method: the daemon's handlers, the CLI, the MCP tools and the Python API all agree
with the method table (``mempal.methods``), and the daemon's validation does what the declaration says."""

from __future__ import annotations

import argparse
import inspect
import math
import subprocess
import sys
from typing import Any

import pytest

from mempal.api import Client
from mempal.cli.build import ALIAS, parser_for
from mempal.cli.commands import COMMANDS
from mempal.cli.main import socket_commands
from mempal.mcp_server import TOOLS, build_params, input_schema
from mempal.mcp_server import Caller as McpCaller
from mempal.methods import METHODS, codegen
from mempal.methods.spec import Method, Param
from mempal.methods.validate import ParamError, validate
from mempald.rpc.agents import AgentMethods
from mempald.rpc.archive import ArchiveMethods
from mempald.rpc.core import CoreMethods
from mempald.rpc.data import DataMethods
from mempald.rpc.disclosure import DisclosureMethods
from mempald.rpc.memory import MemoryMethods
from mempald.rpc.palace import PalaceMethods
from mempald.rpc.rules import RuleMethods
from mempald.rpc.sources import SourceMethods
from mempald.rpc.sync import SyncMethods
from mempald.rpc.viewer import ViewerMethods
from tests.conftest import REPO

GROUPS = (RuleMethods, CoreMethods, MemoryMethods, PalaceMethods, SourceMethods, AgentMethods, ViewerMethods,
          SyncMethods, DisclosureMethods, DataMethods, ArchiveMethods)


def daemon_handler_names() -> list[str]:
    names: list[str] = []
    for group in GROUPS:
        names += list(group.__new__(group).handlers())  # handlers() only names bound methods
    return names


def test_the_daemon_has_a_handler_for_exactly_the_declared_methods() -> None:
    names = daemon_handler_names()
    assert len(names) == len(set(names)), "a method is handled twice"
    assert sorted(names) == sorted(METHODS)


def cli_dests(parser: argparse.ArgumentParser) -> set[str]:
    return {a.dest for a in parser._actions if a.dest not in ("help", "json") and not a.dest.startswith(ALIAS)}


@pytest.mark.parametrize("method", [m for m in METHODS.values() if m.cli], ids=lambda m: m.name)
def test_the_cli_has_every_shown_parameter_of_its_method(method: Method) -> None:
    parser = parser_for(method, "mempal " + " ".join(method.cli or ()))
    shown = {p.name for p in method.params if p.cli.show}
    assert cli_dests(parser) == shown
    for action in parser._actions:
        if action.dest in shown:
            p = method.param(action.dest)
            if p.kind == "enum":
                assert tuple(action.choices or ()) == p.choices, p.name
            if p.kind == "int":
                assert action.type is int, p.name


def test_every_method_with_command_words_is_a_command_and_no_command_is_undeclared() -> None:
    words = socket_commands()
    assert sorted(words.values()) == sorted(m.name for m in METHODS.values() if m.cli)
    assert len(set(words)) == len(words)
    assert set(COMMANDS) <= set(METHODS)
    assert all(COMMANDS[name].method is METHODS[name] for name in COMMANDS)


def test_every_method_with_a_tool_name_is_an_mcp_tool_with_its_parameters() -> None:
    assert sorted(t.name for t in TOOLS) == sorted(m.mcp for m in METHODS.values() if m.mcp)
    for tool in TOOLS:
        schema = input_schema(tool.method)
        assert set(schema["properties"]) == {p.name for p in tool.method.params if p.mcp}, tool.name
        assert set(schema.get("required", [])) == {p.name for p in tool.method.params
                                                   if p.mcp and p.required and not p.fill}, tool.name
        assert tool.read_only == (not tool.method.writes)
        for p in tool.method.params:
            if p.mcp and p.kind == "enum":
                assert schema["properties"][p.name]["enum"] == list(p.choices)


def test_mcp_fills_who_calls_and_never_lets_a_client_sign_as_someone_else() -> None:
    spec = next(t for t in TOOLS if t.name == "ingest")
    params = build_params(spec, {"text": "x", "agent": "mallory"}, McpCaller("claude", "claude-code"))
    assert params["agent"] == "claude" and params["cwd"]


def api_params(name: str) -> list[inspect.Parameter]:
    return list(inspect.signature(getattr(Client, name)).parameters.values())[1:]


@pytest.mark.parametrize("method", list(METHODS.values()), ids=lambda m: m.name)
def test_the_python_api_has_a_typed_method_with_the_declared_parameters(method: Method) -> None:
    params = api_params(method.name)
    assert [p.name.rstrip("_") for p in params] == [p.name for p in method.params
                                                    if p.required and not p.fill] + \
        [p.name for p in method.params if not (p.required and not p.fill)]
    for p in params:
        declared = method.param(p.name.rstrip("_"))
        if declared.required and not declared.fill:
            assert p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.default is inspect.Parameter.empty
        else:
            assert p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is None
        assert p.annotation != inspect.Parameter.empty


def test_the_generated_api_is_up_to_date() -> None:
    assert codegen.main(["--check"]) == 0, "run python -m mempal.methods.codegen"


def test_every_method_says_whether_it_writes_and_is_idempotent() -> None:
    for m in METHODS.values():
        assert isinstance(m.writes, bool) and isinstance(m.idempotent, bool)
        if m.destructive:
            assert m.writes
        assert m.summary.strip() and len(m.summary) > 20, m.name
        for p in m.params:
            assert p.help.strip(), f"{m.name}.{p.name} has no help"


# validation ------------------------------------------------------------------------------------------------
M = Method("probe", "A method made for these tests, with every kind.", (
    Param("text", "text", "free text", required=True),
    Param("name", "str", "a name"),
    Param("n", "int", "a count", default=3, lo=1, hi=10),
    Param("x", "float", "a number", lo=0.0, hi=1.0),
    Param("flag", "bool", "a flag"),
    Param("tags", "strs", "some names", aliases=("tag",)),
    Param("kind", "enum", "one of two", choices=("a", "b")),
    Param("path", "path", "a path"),
    Param("when", "time", "a time"),
    Param("ids", "ids", "drawer ids"),
))


def test_validation_fills_defaults_and_converts() -> None:
    v = validate(M, {"text": "hi", "tag": "t1", "flag": "true", "when": "1970-01-02", "n": 5})
    assert v["text"] == "hi" and v["n"] == 5 and v["flag"] is True and v["tags"] == ("t1",)
    assert v["when"] == 86400.0 and v["name"] is None and v["ids"] == () and v["x"] is None
    assert validate(M, {"text": "hi"})["n"] == 3 and validate(M, {"text": "hi"})["flag"] is False


@pytest.mark.parametrize(("raw", "needle"), [
    ({}, "missing parameter 'text'"),
    ({"text": "x", "nope": 1}, "unknown parameter 'nope'"),
    ({"text": 5}, "must be a string"),
    ({"text": "x", "n": True}, "must be an integer"),
    ({"text": "x", "n": 2.5}, "must be an integer"),
    ({"text": "x", "n": 11}, "between 1 and 10"),
    ({"text": "x", "x": math.nan}, "finite"),
    ({"text": "x", "x": math.inf}, "finite"),
    ({"text": "\ud800"}, "lone surrogate"),
    ({"text": "x", "name": "a\x00b"}, "NUL"),
    ({"text": "x", "path": "/a\x00b"}, "NUL"),
    ({"text": "x", "kind": "c"}, "must be one of a, b"),
    ({"text": "x", "ids": ["", "\x00"]}, "NUL"),
    ({"text": "x", "ids": "not-a-uuid"}, "is not a drawer id"),
    ({"text": "x", "when": "yesterday-ish"}, "not an ISO date"),
    ({"text": "x", "flag": "maybe"}, "true or false"),
    ({"text": "x", "tags": [1]}, "must be a string"),
])
def test_validation_refuses_with_a_message_naming_the_parameter(raw: dict[str, Any], needle: str) -> None:
    with pytest.raises(ParamError) as err:
        validate(M, raw)
    assert needle in str(err.value)


def test_every_cli_command_answers_help_without_a_daemon() -> None:
    for words in (("search",), ("watch", "add"), ("kg",), ("cowork", "push"), ("pack", "prune")):
        out = subprocess.run([sys.executable, "-m", "mempal.cli.main", *words, "--help"], capture_output=True,
                             text=True, cwd=REPO, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "usage: mempal " + " ".join(words) in out.stdout


def test_integers_past_a_floats_range_are_param_errors_for_every_number_parameter() -> None:
    """Issue 47 L1: ``math.isfinite(10**400)`` raises OverflowError; every number and time parameter refuses such
    an integer (and its negative) with a ParamError naming it, as -32602 on the wire."""
    checked = 0
    for method in METHODS.values():
        for p in method.params:
            if p.kind not in ("int", "float", "time"):
                continue
            for value in (10**400, -(10**400), 2**63):
                with pytest.raises(ParamError, match=p.name):
                    validate(method, {p.name: value})
                checked += 1
    assert checked > 100
