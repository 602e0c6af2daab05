"""Always / never instructions in the user's prompts turned into draft rules."""

from __future__ import annotations

import pytest

from mempald.features.rule_check import check_pattern, compile_rules, decide
from mempald.features.rule_suggest import drafts, suggestion_id, user_turn
from mempald.normalize.model import Exchange


@pytest.mark.parametrize(("prompt", "pattern", "decision", "fires", "passes"), [
    ("never push to main without running the tests", r"git\s+push\b.*\bmain\b", "ask", "git push origin main",
     "git push origin feature"),
    ("Always use pnpm, not npm.", r"(?:^|[;&|(]\s*)npm\b", "ask", "npm install", "pnpm install"),
    ("Please never run `rm -rf /` here.", r"rm\s+\-rf\s+/", "deny", "sudo rm -rf /", "rm -r build"),
    ("Never force-push to master!", r"git\s+push\b.*(--force|-f\b).*\bmaster\b", "deny",
     "git push --force origin master", "git push origin master"),
    ("Don't ever use sudo", r"\bsudo\b", "deny", "sudo apt install x", "apt list"),
])
def test_an_instruction_gives_a_draft_that_fires_where_it_should(prompt: str, pattern: str, decision: str,
                                                                  fires: str, passes: str) -> None:
    (d,) = drafts(prompt)
    assert (d.pattern, d.decision, d.tool) == (pattern, decision, "Bash")
    check_pattern(d.pattern)
    rules = compile_rules([{"id": "r", "tool": "Bash", "pattern": d.pattern, "decision": d.decision, "wing": ""}])
    assert decide(rules, "Bash", {"command": fires}, "w").rule is not None
    assert decide(rules, "Bash", {"command": passes}, "w").rule is None


@pytest.mark.parametrize("prompt", [
    "data available on dimensions never before available",  # not an instruction: "never" is not its lead
    "I always forget how this works",
    "should we never push on fridays?",  # a question
    "never give up",  # names nothing a command contains
    "status check without me needing to pass a -p flag.",
])
def test_no_draft_for_what_is_not_a_standing_instruction_about_commands(prompt: str) -> None:
    assert drafts(prompt) == []


def test_only_the_users_turn_is_read() -> None:
    text = Exchange(source_kind="claude_code", session_id="s", key="k", user="Always use pnpm, not npm.",
                    assistant="Never run migrations on prod, noted.").render()
    assert user_turn(text) == "Always use pnpm, not npm."
    assert [d.pattern for d in drafts(user_turn(text))] == [r"(?:^|[;&|(]\s*)npm\b"]


def test_a_suggestion_id_is_stable() -> None:
    assert suggestion_id("d1", "never x") == suggestion_id("d1", "never x") != suggestion_id("d2", "never x")
