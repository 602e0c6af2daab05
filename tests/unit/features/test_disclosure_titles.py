"""Index lines and titles (``mempald.features.disclosure``): a title is not cut to a few words by the line's
head, and a drawer of tool calls is titled by its session's title, else by what its tools did."""

from __future__ import annotations

from mempal.tokens import estimate
from mempald.features.disclosure import INDEX_TOKENS, index_line, title_of

ID = "cdcfe5ee-eeb3-5f5a-9228-ae2c13c81870"


def hit(text: str, title: str = "") -> dict[str, object]:
    return {"drawer_id": ID, "timestamp": "2026-03-01T10:00:00", "wing": "spotter-worktrees", "room": "problems",
            "score": 1.2345, "relevance": 0.81, "text": text, "title": title}


def test_a_prompt_keeps_its_words_in_the_index_line() -> None:
    for prompt in ("! git status --short", "Do you have any idea why mix phx.server does not start here?"):
        line, title, tokens = index_line(None, hit(f"> {prompt}\nsome answer"), 1234)
        assert title == prompt and line.endswith(prompt) and tokens == estimate(line) <= INDEX_TOKENS
        assert " | 0.81 | 1234 tok | " in line  # the calibrated relevance, not the fusion score 1.23


def test_a_long_title_is_cut_within_the_line_budget() -> None:
    dense = hit("> " + "x1-y2/z3.w4 " * 20)  # punctuation and digits: many tokens a character
    line, title, tokens = index_line(None, dense, 99)
    assert title.endswith("…") and title_of(dense).startswith(title[:-1]) and len(title) >= 20
    assert tokens == estimate(line) <= INDEX_TOKENS


def test_a_drawer_of_tool_calls_is_titled_by_its_session_else_by_its_tools() -> None:
    tools = "[tool: Edit] lib/spotter_web/live/dashboard_live.ex\n-> ok\n[tool: Bash] mix test"
    assert title_of(hit(tools, "Fix the dashboard's live reload")) == "Fix the dashboard's live reload"
    assert title_of(hit(tools)) == "Edit lib/spotter_web/live/dashboard_live.ex; Bash mix test"
    assert title_of(hit("")) == "(no text)"
