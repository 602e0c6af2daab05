"""A rule's pattern checked before it is kept, and matched against a tool call within a time limit.

Refused when added (``InvalidInput``, the message says why and what to write instead):

- not a valid regular expression (checked by both ``re``, whose parse tree the shape checks read, and the
  ``regex`` package, which matches);
- a catastrophic shape, one that can take exponential time on a crafted input: a repeat inside a repeat
  (``(a+)+``, ``(.*)*``, ``(x+x+)+y``), or an alternation inside a repeat whose branches can start the same way
  (``(a|a)*``, ``(a|aa)+``). The check is conservative: some harmless nested repeats are refused too;
  a possessive repeat or an atomic group (``(?>...)``) is always accepted;
- one that matches every command (it matches all of ``PROBES``), unless forced.

Matching (``Matcher``): a compiled ``regex`` pattern, an input cut to ``MAX_SUBJECT`` characters, and the
``regex`` package's own timeout per match (``MATCH_TIMEOUT_S``) inside a budget for all rules of one call; a
match that runs out of time counts as no match and is reported (``timed_out``), never a hang of the hook.
"""

from __future__ import annotations

import importlib
import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from mempald.errors import InvalidInput

MAX_PATTERN = 500
MAX_SUBJECT = 8000  # characters of a tool call matched
MATCH_TIMEOUT_S = 0.05
CALL_BUDGET_S = 0.25  # all rules of one call
# A pattern that matches all of these matches every command: refused unless forced.
PROBES = ("", "a", "ls", "git status", "echo hello world", "npm test", "Z9 ~/x.txt", "python -m pytest -q")
DECISIONS = ("ask", "deny")
ANY_TOOL = "*"
# Tool inputs matched by one field: the shell command, else the file or path the tool touches.
SUBJECT_KEYS = ("command", "file_path", "notebook_path", "path", "url")

_parser: Any = importlib.import_module("re._parser")  # the stdlib's parser (no public API gives the tree)
_c: Any = importlib.import_module("re._constants")
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT}
_OPAQUE = object()  # the first character of a branch is not a known literal


def check_pattern(pattern: str, *, force: bool = False) -> None:
    """Raise ``InvalidInput`` unless ``pattern`` may be kept as a rule's pattern."""
    if not pattern.strip():
        raise InvalidInput("the rule's pattern is empty: give --match REGEX (e.g. 'git\\s+push\\b.*\\bmain\\b')")
    if len(pattern) > MAX_PATTERN:
        raise InvalidInput(f"the rule's pattern is {len(pattern)} characters long; at most {MAX_PATTERN}")
    try:
        tree = _parser.parse(pattern)
        regex.compile(pattern)
    except (re.error, regex.error, RecursionError, OverflowError) as exc:
        raise InvalidInput(f"the pattern {pattern!r} is not a valid regular expression: {exc}") from None
    why = _catastrophic(list(tree), inside=False)
    if why:
        raise InvalidInput(f"the pattern {pattern!r} is refused: {why}, which can take exponential time on some "
                           "inputs (catastrophic backtracking); write it without a repeat around another repeat "
                           "or around overlapping alternatives (e.g. 'a+' instead of '(a+)+')")
    if not force:
        compiled = regex.compile(pattern)
        if all(compiled.search(p, timeout=MATCH_TIMEOUT_S) for p in PROBES):
            raise InvalidInput(f"the pattern {pattern!r} matches every command (it matches {PROBES[3]!r}, "
                               f"{PROBES[2]!r} and the empty one): add --force to keep a rule that fires on every "
                               "call of its tool")


def check_tool(tool: str) -> str:
    """A rule's tool: a tool name (``Bash``, ``Edit``, ``mcp__server__tool``), several joined by ``|``, or ``*``."""
    tool = tool.strip()
    names = [t.strip() for t in tool.split("|")]
    if tool == ANY_TOOL:
        return tool
    if not tool or not all(re.fullmatch(r"[A-Za-z_][\w.-]{0,99}", n) for n in names):
        raise InvalidInput(f"the rule's tool {tool!r} is not a tool name: give one such as Bash, Edit or Write, "
                           "several joined by '|', or '*' for every tool")
    return "|".join(names)


def _unbounded(hi: int) -> bool:
    return bool(hi > 20)  # MAXREPEAT (unbounded) included


def _catastrophic(items: list[Any], *, inside: bool) -> str:
    """Why this parsed sequence (inside an unbounded repeat or not) is catastrophic, "" when it is not."""
    for op, av in items:
        if op in _REPEATS:
            _lo, hi, body = av
            body = list(body)
            if inside and _unbounded(hi) and _matches_text(body):
                return "it has a repeat inside a repeat (nested quantifiers)"
            why = _catastrophic(body, inside=inside or _unbounded(hi))
            if why:
                return why
        elif op == _c.SUBPATTERN:
            why = _catastrophic(list(av[3]), inside=inside)
            if why:
                return why
        elif op == _c.BRANCH:
            branches = [list(b) for b in av[1]]
            if inside and _overlapping(branches):
                return "it repeats alternatives that can match the same text"
            for b in branches:
                why = _catastrophic(b, inside=inside)
                if why:
                    return why
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            why = _catastrophic(list(av[1]), inside=inside)
            if why:
                return why
    return ""


def _matches_text(body: list[Any]) -> bool:
    return any(op not in (_c.AT,) for op, _av in body)


def _first(items: list[Any]) -> object:
    """The literal a sequence must start with (its code), ``_OPAQUE``, or None for an empty sequence."""
    for op, av in items:
        if op == _c.AT:
            continue
        if op == _c.LITERAL:
            return av
        if op == _c.SUBPATTERN:
            return _first(list(av[3]))
        return _OPAQUE
    return None


def _overlapping(branches: list[list[Any]]) -> bool:
    firsts = [_first(b) for b in branches]
    if any(f is None or f is _OPAQUE for f in firsts):
        return len(firsts) > 1
    return len(set(firsts)) < len(firsts)


def subject(tool_input: Mapping[str, Any] | Any) -> str:
    """The text a rule's pattern is matched against: the shell command, else the file / path / URL the call
    touches, else the whole input as compact JSON (keys sorted); at most ``MAX_SUBJECT`` characters."""
    if isinstance(tool_input, Mapping):
        for key in SUBJECT_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                return value[:MAX_SUBJECT]
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                return " ".join(value)[:MAX_SUBJECT]  # a command as an argv list
    text = tool_input if isinstance(tool_input, str) else json.dumps(tool_input, sort_keys=True, ensure_ascii=False,
                                                                      default=str)
    return text[:MAX_SUBJECT]


def tool_matches(rule_tool: str, tool_name: str) -> bool:
    return rule_tool == ANY_TOOL or tool_name in rule_tool.split("|")


@dataclass(frozen=True, slots=True)
class Compiled:
    rule: Mapping[str, Any]
    pattern: Any  # a compiled ``regex`` pattern


@dataclass(frozen=True, slots=True)
class Verdict:
    rule: Mapping[str, Any] | None  # the rule that fired (deny before ask), None: none
    timed_out: tuple[str, ...] = ()  # ids of rules whose match ran out of time


def compile_rules(rules: Iterable[Mapping[str, Any]]) -> list[Compiled]:
    """Rules compiled once (a stored rule that no longer compiles is left out: it was checked when added)."""
    out: list[Compiled] = []
    for r in rules:
        try:
            out.append(Compiled(r, regex.compile(str(r["pattern"]))))
        except (regex.error, KeyError):
            continue
    return out


def decide(rules: Sequence[Compiled], tool_name: str, tool_input: Any, wing: str) -> Verdict:
    """The rule that fires for this call in ``wing``: of the global rules and the wing's, a ``deny`` first, else
    the first ``ask``; every match within its time limit."""
    text = subject(tool_input)
    started = time.monotonic()
    fired: list[Mapping[str, Any]] = []
    late: list[str] = []
    for c in rules:
        if c.rule.get("wing") not in ("", wing) or not tool_matches(str(c.rule.get("tool", "")), tool_name):
            continue
        left = CALL_BUDGET_S - (time.monotonic() - started)
        if left <= 0:
            late.append(str(c.rule.get("id")))
            continue
        try:
            hit = c.pattern.search(text, timeout=min(MATCH_TIMEOUT_S, left))
        except TimeoutError:
            late.append(str(c.rule.get("id")))
            continue
        if hit:
            fired.append(c.rule)
            if c.rule.get("decision") == "deny":
                break
    chosen = next((r for r in fired if r.get("decision") == "deny"), fired[0] if fired else None)
    return Verdict(chosen, tuple(late))
