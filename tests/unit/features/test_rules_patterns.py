"""A rule's pattern: refused when invalid, catastrophic or matching every command; matched within a time limit."""

from __future__ import annotations

import time

import pytest
import regex

from mempald.errors import InvalidInput
from mempald.features.rule_check import (
    MAX_SUBJECT,
    Compiled,
    check_pattern,
    check_tool,
    compile_rules,
    decide,
    subject,
)


@pytest.mark.parametrize("pattern", ["(unclosed", "a)", "*a", "[z-a]", "(?P<x>a)(?P<x>b)", "a{2,1}"])
def test_an_invalid_pattern_is_refused_naming_it(pattern: str) -> None:
    with pytest.raises(InvalidInput, match="not a valid regular expression"):
        check_pattern(pattern)


@pytest.mark.parametrize("pattern", [r"(a+)+", r"(.*)*", r"(a|a)*", r"(a|aa)+$", r"(x+x+)+y", r"^(\w+\s?)*$",
                                     r"git (push|p)+ ((-f|--force)*)+", r"(?:a*)*b", r"((ab)*)+c", r"(a|ab|abc)*d"])
def test_a_catastrophic_pattern_is_refused_with_the_reason(pattern: str) -> None:
    with pytest.raises(InvalidInput, match="catastrophic backtracking"):
        check_pattern(pattern)


@pytest.mark.parametrize("pattern", [r"git\s+push\b.*\bmain\b", r"\brm\s+-\w*r", r"(foo|bar)*baz", r"a{1,3}b",
                                     r"^npm\s+(install|i)\b", r"(?i)drop\s+table", r"(?>a+)+b", r"\bsudo\b"])
def test_ordinary_patterns_are_kept(pattern: str) -> None:
    check_pattern(pattern)


@pytest.mark.parametrize("pattern", [r".*", r"", r"^", r"\s*", r"(?s).?", r"x?", r"|git"])
def test_a_pattern_matching_every_command_is_refused_unless_forced(pattern: str) -> None:
    with pytest.raises(InvalidInput, match=r"empty|every command"):
        check_pattern(pattern)
    if pattern:
        check_pattern(pattern, force=True)


def test_tools_are_names_lists_or_star() -> None:
    assert check_tool(" Bash ") == "Bash"
    assert check_tool("Edit | Write") == "Edit|Write"
    assert check_tool("*") == "*"
    assert check_tool("mcp__github__create_pr") == "mcp__github__create_pr"
    for bad in ("", "rm -rf", "Bash|", "a*"):
        with pytest.raises(InvalidInput, match="not a tool name"):
            check_tool(bad)


def test_the_subject_is_the_command_else_the_path_else_the_input() -> None:
    assert subject({"command": "git push origin main", "description": "push"}) == "git push origin main"
    assert subject({"file_path": "/p/.env", "content": "x"}) == "/p/.env"
    assert subject({"command": ["git", "push"]}) == "git push"
    assert subject({"query": "q", "limit": 3}) == '{"limit": 3, "query": "q"}'
    assert len(subject({"command": "x" * 100_000})) == MAX_SUBJECT


def rule(rid: str, pattern: str, decision: str = "ask", tool: str = "Bash", wing: str = "") -> dict[str, object]:
    return {"id": rid, "text": rid, "tool": tool, "pattern": pattern, "decision": decision, "wing": wing}


def test_deny_wins_over_ask_and_wing_rules_hold_only_in_their_wing() -> None:
    rules = compile_rules([rule("r1", r"git\s+push"), rule("r2", r"\bmain\b", "deny", wing="spotter"),
                           rule("r3", r"\.env$", "deny", tool="Edit|Write")])
    v = decide(rules, "Bash", {"command": "git push origin main"}, "spotter")
    assert v.rule is not None and v.rule["id"] == "r2"
    v = decide(rules, "Bash", {"command": "git push origin main"}, "other")
    assert v.rule is not None and v.rule["id"] == "r1"
    assert decide(rules, "Write", {"file_path": "/p/.env"}, "x").rule["id"] == "r3"  # type: ignore[index]
    assert decide(rules, "Read", {"file_path": "/p/.env"}, "x").rule is None
    assert decide(rules, "Bash", {"command": "ls"}, "spotter").rule is None


def test_a_match_that_runs_out_of_time_does_not_hang_and_is_reported() -> None:
    """A slow pattern (stored before the checks, or forced through an import) costs at most the budget."""
    slow = Compiled(rule("slow", r"(x+x+)+y"), regex.compile(r"(x+x+)+y"))
    fast = compile_rules([rule("fast", r"^x")])
    t0 = time.monotonic()
    v = decide([slow, *fast], "Bash", {"command": "x" * 5000}, "")
    elapsed = time.monotonic() - t0
    assert v.timed_out == ("slow",)
    assert v.rule is not None and v.rule["id"] == "fast"
    assert elapsed < 1.0, elapsed
