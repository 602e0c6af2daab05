"""The Claude Code normalizer on the real transcripts in ../shared (counts and contents verified by reading
the files)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mempald.normalize.claude_code import parse_lines
from mempald.normalize.model import INJECT_CLOSE, Line
from tests.conftest import lines_of

LAYOUT = "claude_code/projects_layout/-home-USER-projects-spotter-worktrees-spotter-4te"
MAIN = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"


def test_short_session(formats_dir: Path) -> None:
    ex = parse_lines(lines_of(formats_dir / "claude_code" / "short_session_v2.1.38.jsonl"))
    assert len(ex) == 1
    e = ex[0]
    assert e.user == "mix phx.server doesnt seem to start"
    assert e.session_id == "55604662-cf2a-4331-851a-ec234028f8ca"
    assert e.cwd == "/home/marco/projects/spotter" and e.git_branch == "master"
    assert e.tools == ("Bash", "Glob")
    assert "[tool: Bash] mix phx.server 2>&1 | head -80" in e.assistant
    assert e.assistant.count("-> User rejected tool use") == 2
    assert e.assistant.endswith("[interrupted by user]")
    assert "thinking" not in e.assistant.lower() or "Let me check" in e.assistant
    # the /model local command lines are not exchanges
    assert "<command-name>" not in e.render() and "local-command" not in e.render()


def test_main_session_with_task_and_compaction(formats_dir: Path) -> None:
    ex = parse_lines(lines_of(formats_dir / LAYOUT / f"{MAIN}.jsonl"))
    assert [e.kind for e in ex] == ["exchange", "summary"]
    first, summary = ex
    assert first.user.startswith("Work on bead spotter-4te.")
    assert first.tools == ("Bash", "Task", "Skill")
    assert "[tool: Task] Check OTEL hex package versions" in first.assistant
    # streaming parts of one message are merged; the empty "\n\n" text block adds nothing
    assert first.assistant.count("Now let me check available versions") == 1
    assert "I have successfully completed two full tasks" in first.assistant
    assert summary.assistant.startswith("This session is being continued from a previous conversation")
    assert summary.user == ""
    # the /compact command wrapper and its stdout after the summary are skipped
    assert all("<command-name>" not in e.render() for e in ex)


def test_subagent_attributed_to_parent(formats_dir: Path) -> None:
    sub = formats_dir / LAYOUT / MAIN / "subagents"
    ex = parse_lines(lines_of(sub / "agent-aac57f5.jsonl"))
    assert len(ex) == 1
    assert ex[0].session_id == MAIN and ex[0].agent == "claude/subagent:aac57f5"
    assert ex[0].tools.count("WebSearch") == 6 and ex[0].tools.count("WebFetch") == 6
    assert parse_lines(lines_of(sub / "agent-acompact-946d2b.jsonl")) == []


def _rec(**kw: object) -> bytes:
    base: dict[str, object] = {"sessionId": "s", "cwd": "/p", "timestamp": "2026-01-01T00:00:00Z"}
    base.update(kw)
    return json.dumps(base).encode()


def test_injected_context_and_meta_are_dropped() -> None:
    lines = [
        Line(0, _rec(type="user", uuid="u1", message={"role": "user", "content":
             f'<mempal-context id="x">old memory</mempal-context>{INJECT_CLOSE}\nreal question'})),
        Line(10, _rec(type="assistant", uuid="a1", message={"id": "m1", "content": [{"type": "text", "text": "ok"}]})),
        Line(20, _rec(type="user", uuid="u2", isMeta=True, message={"role": "user", "content": "caveat"})),
        Line(30, _rec(type="user", uuid="u3", message={"role": "user",
                                                        "content": "<mempal-context>x</mempal-context>"})),
        Line(40, b"{not json"),
        Line(50, _rec(type="assistant", uuid="a2", message={"id": "m1", "content": [{"type": "text", "text": "ok"}]})),
    ]
    ex = parse_lines(lines)
    assert len(ex) == 1
    assert ex[0].user == "real question" and ex[0].assistant == "ok" and ex[0].offset == 0


@given(st.lists(st.binary(max_size=200), max_size=20))
def test_arbitrary_lines_never_raise(raws: list[bytes]) -> None:
    parse_lines([Line(i, r) for i, r in enumerate(raws)])


# --- fuzzing with records shaped like Claude Code lines (the fields it reads, with any types) --------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=12,
)
_block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image", "other"]) | _json},
    optional={"text": st.text(max_size=60) | _json, "name": st.text(max_size=10) | _json, "input": _json,
              "content": st.text(max_size=40) | st.lists(_json, max_size=2) | _json, "is_error": _json,
              "id": st.text(max_size=8) | _json, "tool_use_id": st.text(max_size=8) | _json},
)
_record = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "system", "summary", "progress", "file-history-snapshot"])
     | _json},
    optional={
        "message": st.fixed_dictionaries(
            {}, optional={"role": st.sampled_from(["user", "assistant"]) | _json,
                          "content": st.text(max_size=80) | st.lists(_block, max_size=4) | _json,
                          "id": st.text(max_size=6) | _json, "model": _json}) | _json,
        "uuid": st.text(max_size=10) | _json, "parentUuid": st.text(max_size=10) | _json,
        "sessionId": st.text(max_size=10) | _json, "timestamp": st.text(max_size=25) | _json,
        "cwd": st.text(max_size=20) | _json, "gitBranch": _json, "isSidechain": _json, "isMeta": _json,
        "agentId": _json, "isCompactSummary": _json, "toolUseResult": _json, "summary": _json,
    },
)


@given(st.lists(_record, max_size=12), st.integers(min_value=0, max_value=10**6))
def test_record_shaped_lines_never_raise_and_give_well_formed_exchanges(
    records: list[dict[str, object]], first: int
) -> None:
    lines = []
    off = 0
    for rec in records:
        raw = json.dumps(rec).encode()
        lines.append(Line(off, raw))
        off += len(raw) + 1
    out = parse_lines(lines, first_position=first)
    offsets = {ln.offset for ln in lines}
    for pos, ex in enumerate(out):
        assert isinstance(ex.key, str) and ex.key
        assert isinstance(ex.user, str) and isinstance(ex.assistant, str)
        assert ex.offset in offsets
        assert ex.position == first + pos
        assert isinstance(ex.render(), str)
