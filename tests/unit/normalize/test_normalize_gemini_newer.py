"""Gemini CLI chats of 0.45+ on real-shaped samples (tests/fixtures/fidelity/gemini, a ``~/.gemini/tmp/<project>``
folder): a sub-agent's chat (``kind: "subagent"``, in ``chats/<parent session id>/``) holds no prompt, files under
the project's wing and is linked to the parent exchange that started it; a chat that opens with a model turn keeps
that turn and its tool call."""

from __future__ import annotations

from pathlib import Path

from mempald.ingest.units import folder_wing, prepare
from mempald.normalize import gemini
from mempald.normalize.format import Input, Parsed
from mempald.normalize.model import CursorContext
from mempald.normalize.wings import wing_from_cwd

TMP = Path(__file__).resolve().parents[2] / "fixtures" / "fidelity" / "gemini" / "tmp"
CHATS = TMP / "demo-app" / "chats"
PARENT_ID = "7c1e2d3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
PARENT = CHATS / "session-2026-03-02T09-14-7c1e2d3f.jsonl"
SUB = CHATS / PARENT_ID / "session-2026-03-02T09-14-b2c3d4e5.jsonl"
OPENING = CHATS / "session-2026-03-03T08-00-e9f8a7b6.json"


def _read(path: Path) -> Parsed:
    """As the ingest reads it: the context from beside the file, then the parse."""
    ctx = prepare(path, gemini.FORMAT, CursorContext(format=gemini.SOURCE_KIND))
    return gemini.parse(Input(name=str(path), context=ctx, data=path.read_bytes()))


def test_sub_agent_chat_has_no_prompt_and_is_linked_to_its_parent() -> None:
    parsed = _read(SUB)
    (work,) = parsed.exchanges
    assert work.user == "" and work.kind == "subagent" and work.agent == "gemini/subagent"
    assert work.assistant.startswith("[sub-agent task] Your task is to answer the following question about Gemini "
                                     "CLI:\n<question>\nHow can a user make Gemini CLI remember")
    assert "[sub-agent nudge] You have exceeded the maximum number of turns." in work.assistant
    assert work.tools == ("get_internal_docs", "get_internal_docs", "complete_task")
    assert work.parent == "u-1"  # the parent session's prompt whose cli_help call ran it
    assert parsed.ledger.counts() == {"folded: sub-agent nudge": 1, "folded: tool call": 3,
                                      "skipped: session header": 1, "stored": 1}


def test_sub_agent_chat_files_under_the_project_not_the_parent_session_id() -> None:
    for path in (PARENT, SUB, OPENING):
        (wing,) = {wing_from_cwd(e.project, default=folder_wing(path, TMP)) for e in _read(path).exchanges}
        assert wing == "demo-app", path
    assert folder_wing(SUB, TMP) == "demo-app"  # (before: the parent session id, its folder's name)


def test_parent_session_prompts_are_unchanged() -> None:
    ex = _read(PARENT).exchanges
    assert [(e.user, e.kind, e.parent) for e in ex] == [
        ("how do I make gemini cli remember my preferred test command?", "exchange", ""),
        ("ok, add it to GEMINI.md", "exchange", "")]
    assert ex[0].assistant.startswith("[tool: cli_help] How can a user make Gemini CLI remember")


def test_a_chat_that_opens_with_a_model_turn_keeps_its_tool_call() -> None:
    parsed = _read(OPENING)
    first, bump = parsed.exchanges
    assert first.user == "" and first.key == "o-1" and first.tools == ("run_shell_command",)
    assert first.assistant == ("[tool: run_shell_command] npm test -- --watch=false\n  -> Tests: 41 passed, 41 total\n"
                               "All 41 tests pass.")
    assert bump.user == "great, now bump the version" and bump.assistant == "Bumped to 1.4.0."
    assert "skipped: answer before any prompt" not in parsed.ledger.counts()


def test_a_json_sub_agent_chat_is_read_the_same(tmp_path: Path) -> None:
    """The whole-object shape (``session-*.json``) of the same sub-agent chat: same link, same wing."""
    import json
    import shutil

    chats = tmp_path / "tmp" / "demo-app" / "chats"
    shutil.copytree(TMP / "demo-app", tmp_path / "tmp" / "demo-app")
    sub = chats / PARENT_ID / SUB.name
    header, *messages = [json.loads(line) for line in sub.read_text().splitlines()]
    as_json = sub.with_suffix(".json")
    as_json.write_text(json.dumps({**header, "messages": messages}))
    sub.unlink()
    (work,) = _read(as_json).exchanges
    assert (work.kind, work.parent, wing_from_cwd(work.project)) == ("subagent", "u-1", "demo-app")


def test_without_a_project_root_the_sub_agent_files_where_its_parent_does(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "tmp"
    shutil.copytree(TMP / "demo-app", root / "demo-app")
    (root / "demo-app" / ".project_root").unlink()  # older Gemini CLI: no marker, the folder names the project
    sub = root / "demo-app" / "chats" / PARENT_ID / SUB.name
    parent = root / "demo-app" / "chats" / PARENT.name
    wings = {folder_wing(p, root) for p in (sub, parent)}
    assert wings == {"demo-app"}  # not the parent session's id
    assert not any(e.project for p in (sub, parent) for e in _read(p).exchanges)
