"""Claude Code 2.1.x records on a real-shaped session (tests/fixtures/fidelity/claude_code, written in the shape of
2.1.123-2.1.177 files): background-task notifications are no prompts, ``mode`` records are known, a ``/btw`` side
question keeps the user's question and not the parent's copied history, and a session's sub-agents file under
the session's wing whatever sub-folder they worked in."""

from __future__ import annotations

import json
from pathlib import Path

from mempald.ingest.units import prepare
from mempald.normalize import claude_code
from mempald.normalize.format import Input, Parsed
from mempald.normalize.model import CursorContext, Line
from mempald.normalize.wings import wing_from_cwd

PROJECT = Path(__file__).resolve().parents[2] / "fixtures" / "fidelity" / "claude_code" / "-home-USER-projects-Demo"
SID = "5d0c7a9e-3b1f-4c2a-9e8d-7f6a5b4c3d2e"
SESSION = PROJECT / f"{SID}.jsonl"
SUBAGENTS = PROJECT / SID / "subagents"
ASIDE = SUBAGENTS / "agent-aside_question-c5e5c961a7749e08.jsonl"
AGENT = SUBAGENTS / "agent-a1f3c5e7b9d0a2c4e.jsonl"


def _lines(path: Path) -> list[Line]:
    out, off = [], 0
    for raw in path.read_bytes().splitlines(keepends=True):
        out.append(Line(off, raw.rstrip(b"\r\n")))
        off += len(raw)
    return out


def _read(path: Path) -> Parsed:
    """As the ingest reads it: the context from beside the file, then the parse."""
    ctx = prepare(path, claude_code.FORMAT, CursorContext(format=claude_code.SOURCE_KIND))
    parsed = claude_code.parse(Input(name=str(path), context=ctx, lines=_lines(path)))
    assert len(parsed.ledger.entries) == len(_lines(path))  # every record accounted for, once
    return parsed


def test_task_notifications_are_folded_not_prompts() -> None:
    parsed = _read(SESSION)
    ex = parsed.exchanges
    assert [e.user for e in ex] == ["split the todo app's types into their own package",
                                    "run the build in the background and tell me when it is done", "thanks, commit it"]
    build = ex[1].assistant
    assert "<task-notification>" not in build and "<task-id>" not in build
    assert "[task notification] Monitor event: build step 1/3 (tsc) finished\nWaiting." in build
    assert build.endswith('[task notification] Background command "Build the app" completed (exit code 0)\n'
                          "The build finished cleanly: 2 warnings about unused imports in packages/types.")
    counts = parsed.ledger.counts()
    assert counts["folded: task notification"] == 3


def test_notification_text_without_origin_and_before_any_prompt() -> None:
    note = ('{"type":"user","sessionId":"s","uuid":"u1","message":{"role":"user","content":"<task-notification>\\n'
            '<task-id>b1</task-id>\\n<summary>Agent \\"Research\\" finished</summary>\\n</task-notification>"}}')
    parsed = claude_code.parse(Input(lines=[Line(0, note.encode())]))
    assert parsed.exchanges == [] and parsed.ledger.counts() == {"skipped: task notification": 1}


def test_mode_records_are_known() -> None:
    counts = _read(SESSION).ledger.counts()
    assert counts["skipped: mode"] == 2 and not any("unknown" in k for k in counts)


def test_side_question_is_the_prompt_and_the_copied_history_is_skipped() -> None:
    parsed = _read(ASIDE)
    (side,) = parsed.exchanges
    assert side.user == "which package manager does this repo use?" and side.kind == "exchange"
    assert side.agent == "claude/side-question"
    assert side.assistant == "npm: the build runs `npm run build` and there is a package-lock.json."
    assert "system-reminder" not in side.render() and "Set model to" not in side.render()
    counts = parsed.ledger.counts()
    assert counts["skipped: side question: copy of the parent's history"] == 5
    session_keys = {e.key for e in _read(SESSION).exchanges}
    assert side.key not in session_keys  # its drawers never collide with the session's


def test_side_question_still_open_is_read_again_from_the_question() -> None:
    lines = _lines(ASIDE)
    parsed = claude_code.parse(Input(name=str(ASIDE), lines=lines[:6]))  # the question, no answer yet
    assert parsed.resume is not None and parsed.resume[0] == lines[5].offset
    again = claude_code.parse(Input(name=str(ASIDE), lines=lines[5:]))
    assert [e.user for e in again.exchanges] == ["which package manager does this repo use?"]


def test_a_session_is_one_wing_sub_agents_included() -> None:
    wings = {wing_from_cwd(e.project or e.cwd) for p in (SESSION, AGENT, ASIDE) for e in _read(p).exchanges}
    assert wings == {"Demo"}
    (work,) = _read(AGENT).exchanges
    assert work.cwd == "/home/USER/projects/Demo/todo-app"  # where it worked is kept; the wing is the session's
    assert work.parent == _read(SESSION).exchanges[0].key and work.kind == "subagent"


def test_real_sub_agent_files_take_their_session_project(formats_dir: Path) -> None:
    projects = formats_dir / "claude_code" / "real2" / "projects"
    agents = sorted(projects.rglob("agent-*.jsonl"))
    assert len(agents) == 5
    for agent in agents:
        session = agent.parent.parent.with_suffix(".jsonl") if agent.parent.name == "subagents" else next(
            p for p in agent.parent.glob("*.jsonl") if not p.name.startswith("agent-"))
        first_cwd = next(e.cwd for e in _read(session).exchanges if e.cwd)
        assert all(e.project == first_cwd for e in _read(agent).exchanges), agent


def test_a_message_another_process_posted_is_no_prompt_and_its_answer_is_kept() -> None:
    """``origin.kind`` other than ``human`` (a ``peer`` posting into the session over its socket, as Claude Code
    records it: ``isSynthetic``, ``origin: {kind: peer, from, verifiedPeerPid}``): never stored as the user's
    prompt; it opens an exchange of its own and the answer it gets stays there."""
    rows = [
        {"type": "user", "sessionId": "s", "uuid": "u1", "timestamp": "2026-11-20T10:00:00Z",
         "origin": {"kind": "human"}, "message": {"role": "user", "content": "watch the deploy for me"}},
        {"type": "assistant", "sessionId": "s", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-11-20T10:00:05Z",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Watching it."}]}},
        {"type": "user", "sessionId": "s", "uuid": "p1", "parentUuid": "a1", "timestamp": "2026-11-20T10:09:00Z",
         "isReplay": True, "isSynthetic": True, "origin": {"kind": "peer", "from": "deploy-bot", "verifiedPeerPid": 9},
         "message": {"role": "user", "content": "deploy 4411 failed: migration 0042 timed out"}},
        {"type": "assistant", "sessionId": "s", "uuid": "a2", "parentUuid": "p1", "timestamp": "2026-11-20T10:09:04Z",
         "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Rolling back 4411."}]}},
        {"type": "user", "sessionId": "s", "uuid": "p2", "parentUuid": "a2", "timestamp": "2026-11-20T10:10:00Z",
         "origin": {"kind": "peer", "from": "unknown"}, "message": {"role": "user", "content": "rollback done"}},
    ]
    lines, off = [], 0
    for row in rows:
        raw = json.dumps(row).encode()
        lines.append(Line(off, raw))
        off += len(raw) + 1
    parsed = claude_code.parse(Input(lines=lines))
    assert [(e.user, e.assistant) for e in parsed.exchanges] == [
        ("watch the deploy for me", "Watching it."),
        ("", "[peer message from deploy-bot] deploy 4411 failed: migration 0042 timed out\nRolling back 4411."),
        ("", "[peer message] rollback done"),
    ]
    assert [a.what for a in parsed.ledger.entries] == [
        "prompt", "answer", "peer message (no prompt)", "answer", "peer message (no prompt)"]
    assert len(parsed.ledger.entries) == len(rows)
