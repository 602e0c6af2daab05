"""The Claude Code normalizer on the real transcripts in ../shared (counts and contents verified by reading
the files)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mempald.normalize.claude_code import parse_lines
from mempald.normalize.model import INJECT_CLOSE, Line

LAYOUT = "claude_code/projects_layout/-home-USER-projects-spotter-worktrees-spotter-4te"
MAIN = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"


def lines_of(path: Path) -> list[Line]:
    out, off = [], 0
    for raw in path.read_bytes().split(b"\n"):
        if raw.strip():
            out.append(Line(off, raw))
        off += len(raw) + 1
    return out


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
    base = {"sessionId": "s", "cwd": "/p", "timestamp": "2026-01-01T00:00:00Z"}
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
