"""The aider chat-history normalizer on the real history in ../shared (every ``#### `` line read: 13 input
lines, five ``/code X`` + ``X`` echo pairs and two ``/commit`` commands, so six prompts) and on synthetic
histories."""

from __future__ import annotations

from pathlib import Path

import pytest

from mempald.normalize.aider import SOURCE_KIND, parse, parse_document
from mempald.normalize.format import Input, Parsed
from mempald.normalize.model import INJECT_CLOSE, INJECT_OPEN, Exchange

FORMATS = Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "formats"


@pytest.fixture
def history() -> list[Exchange]:
    path = FORMATS / "aider" / ".aider.chat.history.head.md"
    if not path.is_file():
        pytest.skip(f"the shared aider fixture is not at {path} (it lives beside the repo, not in it)")
    return parse_document(path.read_bytes(), ".aider.chat.history.md")


def test_prompts_and_code_echo(history: list[Exchange]) -> None:
    assert [e.user for e in history] == [
        "give me a quick summarized overview of this repo",
        "i want to add a dark/light mode switch on the top right of the screen, please notice that the current them "
        "is dark background with white keys so the current one is the dark mode",
        "i want the buttons to have a 3d look for it, and add some on press animations on the equal key",
        "add a nyancat animation in the background",
        "add a random hovering semi-transparent bubble with a random emoji in it, and on press, the bubble would "
        "burst and a dialog would show up letting the user know that he jussed popped the emoji bubble",
        "make the bubble to move form left to right while hovering, liek a cloud passing by, and it would appear "
        "randomly and periodicly",
    ]
    assert all(e.source_kind == SOURCE_KIND == "aider" and e.agent == "aider" for e in history)
    assert all(e.session_id == "2025-05-04T17:02:36" and e.timestamp == "2025-05-04T17:02:36" for e in history)
    assert [e.key for e in history] == [f"2025-05-04T17:02:36#{i}" for i in range(6)]
    assert [e.position for e in history] == list(range(6))


def test_answers_and_aider_output(history: list[Exchange]) -> None:
    first = history[0]
    assert first.assistant.startswith("This repository contains a simple web-based calculator application built "
                                      "using React.")
    assert first.assistant.endswith("What changes would you like to make?")
    assert first.tools == ()
    # aider's own "> " chatter is dropped
    text = "\n".join(e.render() for e in history)
    for noise in ("Tokens:", "Add file to the chat?", "Retrying in", "litellm.RateLimitError", "Aider v0.82.2",
                  "Repo-map:"):
        assert noise not in text
    dark = history[1]
    assert dark.tools == ("edit",)
    assert "<<<<<<< SEARCH\nimport React, { useState } from \"react\";" in dark.assistant
    assert dark.assistant.endswith("[aider] Applied edit to src/App.js\n[aider] Applied edit to src/styles.css")


def test_commit_commands_attach_to_the_previous_exchange(history: list[Exchange]) -> None:
    three_d = history[2]
    assert three_d.tools == ("edit", "/commit", "commit")
    assert three_d.assistant.endswith(
        "[aider] Applied edit to src/components/ButtonsContainer.jsx\n[aider] Applied edit to src/styles.css\n\n"
        "[aider: /commit the latest updates with a proper commit mesage]\n"
        "[aider] Commit c339495 aider: the latest updates with a proper commit mesage")
    assert history[3].assistant.endswith("[aider: /commit add changes with a good message]\n"
                                         "[aider] Commit 26a3c45 aider: add changes with a good message")
    assert history[4].assistant.endswith("[aider] Applied edit to src/components/EmojiBubble.jsx")
    assert history[5].tools == ("edit-failed",)
    assert "[aider] The LLM did not conform to the edit format." in history[5].assistant
    assert all(not e.user.startswith("/") for e in history)


def test_synthetic_sessions_multiline_prompts_and_injected() -> None:
    doc = (
        "stray text before any run\n"
        "# aider chat started at 2025-06-01 09:00:00\n\n"
        "> Aider v0.85.0  \n\n"
        "#### /add src/a.py  \n"
        "> Added src/a.py to the chat  \n\n"
        "#### first line of a prompt  \n"
        "#### second line  \n\n"
        "Answer one.  \n\n"
        "> Tokens: 1k sent, 10 received.  \n\n"
        f"#### {INJECT_OPEN}>remembered{INJECT_CLOSE}  \n\n"
        "An answer to injected context only.\n\n"
        "# aider chat started at 2025-06-02 10:30:15\n\n"
        "#### /ask what does a.py do?  \n\n"
        "#### what does a.py do?  \n\n"
        "It adds.\r\n\n"
        "#### what does a.py do?  \n\n"
        "Asked again: it still adds.\n"
        "#### /code\n"
    ).encode()
    ex = parse_document(doc)
    assert [(e.session_id, e.key, e.user, e.assistant) for e in ex] == [
        ("2025-06-01T09:00:00", "2025-06-01T09:00:00#0", "first line of a prompt\nsecond line", "Answer one."),
        ("2025-06-02T10:30:15", "2025-06-02T10:30:15#0", "what does a.py do?", "It adds."),
        ("2025-06-02T10:30:15", "2025-06-02T10:30:15#1", "what does a.py do?",
         "Asked again: it still adds.\n[aider: /code]"),
    ]
    assert ex[2].tools == ("/code",)


def test_anything_is_accepted() -> None:
    assert parse_document(b"") == []
    assert parse_document(b"\xff\xfe no prompts here") == []
    (e,) = parse_document(b"#### hi")
    assert e.user == "hi" and e.session_id == "" and e.key == "#0" and e.timestamp is None


# --- Real-shaped samples written for issue #41 (tests/fixtures/fidelity) ------------------------------------

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "fidelity"


def _parse_sample(name: str) -> Parsed:
    data = (SAMPLES / name).read_bytes()
    parsed = parse(Input(name=name, data=data))
    n_lines = data.decode().count("\n") + (not data.endswith(b"\n"))
    assert sorted(int(str(a.ref).split()[1]) for a in parsed.ledger.entries) == list(range(1, n_lines + 1))
    return parsed


def test_aider_050_paste_separated_by_blank_lines_is_one_prompt() -> None:
    parsed = _parse_sample("aider_v050_pastes_help.chat.history.md")
    ex = parsed.exchanges
    assert [e.user.splitlines()[0] for e in ex] == [
        "here is the traceback from the scheduler, please fix it:", "/help how do I add a file read-only?",
        "which jobs are one-off?", "add a test for the one-off job", "thanks"]
    assert all(e.assistant for e in ex)  # every prompt has its answer
    paste = ex[0].user
    assert paste == ("here is the traceback from the scheduler, please fix it:\n\nTraceback (most recent call last):\n"
                     '  File "sched/run.py", line 41, in tick\n    job.next_run = cron.next(now)\n'
                     "AttributeError: 'NoneType' object has no attribute 'next'\n\n"
                     "the cron field can be empty for one-off jobs")
    assert ex[0].tools == ("edit", "commit")
    assert ex[3].user == "add a test for the one-off job\nit should not crash when cron is None"
    reasons = parsed.ledger.counts()
    assert reasons["skipped: blank line between the lines of one input"] >= 8


def test_aider_help_question_is_the_prompt_and_its_docs_are_context() -> None:
    parsed = _parse_sample("aider_v050_pastes_help.chat.history.md")
    help_ex = parsed.exchanges[1]
    assert help_ex.user == "/help how do I add a file read-only?" and help_ex.tools == ("/help",)
    assert help_ex.assistant.startswith("Use `/read-only FILE` to add a file")
    text = "\n".join(e.render() for e in parsed.exchanges)
    for context in ("# Question:", "Relevant docs", "<doc from_url", "[aider: /add src]", "In-chat commands"):
        assert context not in text
    folded = [a for a in parsed.ledger.entries if a.what == "aider /help context"]
    assert len(folded) == 24 and {a.exchange for a in folded} == {help_ex.key}
    assert parsed.exchanges[2].tools == ("/tokens",)  # /ask's echo is no second prompt, /tokens no prompt
    assert parsed.exchanges[3].tools == ("edit", "/help")  # a bare /help is a command


def test_aider_help_context_without_its_command_line_is_not_a_prompt() -> None:
    doc = (b"# aider chat started at 2025-10-01 09:00:00\n\n#### # Question: how do I run tests  \n"
           b"#### # Announcement lines from when this session of aider was launched:  \n#### Aider v0.86.2  \n\n"
           b"Use /run.\n\n#### please check the build  \n#### second line  \n\nThe build passes.\n")
    parsed = parse(Input(name="h.md", data=doc))
    assert [e.user for e in parsed.exchanges] == ["please check the build\nsecond line"]
    assert parsed.ledger.counts()["skipped: aider /help context"] == 3


def test_aider_confirmation_echoes_are_not_prompts() -> None:
    parsed = _parse_sample("aider_v086_confirmations.chat.history.md")
    assert [(e.user, e.assistant.splitlines()[0]) for e in parsed.exchanges] == [
        ("read AGENTS.md and HANDOFF.md to get an idea of the project",
         "The project is a CLI that syncs calendars; HANDOFF.md lists the open work."),
        ("fix the timezone bug in src/sync.py", "Done: events now keep their zone.")]
    assert parsed.ledger.counts()["folded: aider confirmation"] == 2


def test_aider_real_histories_keep_their_prompts(formats_dir: Path) -> None:
    rfp = formats_dir / "aider" / "real2" / "Ahmedrali__rfp_response_platform__backend" / ".aider.chat.history.md"
    ex = parse(Input(name="h.md", data=rfp.read_bytes())).exchanges
    assert len(ex) == 28 and not any("(Y)es/(N)o" in e.user for e in ex)


def test_newer_multi_line_blocks_end_at_a_blank_line() -> None:
    """In the newer shape a multi-line input is one block: after it, a blank line ends it, even when no answer
    follows (an interrupted request) and the next block is another prompt or comes after /help's context."""
    doc = (b"# aider chat started at 2025-10-01 09:00:00\n\n"
           b"#### fix the parser  \n#### it drops the last line  \n\n"
           b"#### actually, first run the tests  \n\nAll 12 pass.\n\n"
           b"#### /help how do I undo  \n\n#### # Question: how do I undo  \n#### # Relevant docs:  \n"
           b"#### <doc>/undo reverts the last commit aider made</doc>  \n\n"
           b"#### what changed in the last commit?  \n\nThe parser fix.\n")
    parsed = parse(Input(name="h.md", data=doc))
    assert [(e.user, e.assistant) for e in parsed.exchanges] == [
        ("fix the parser\nit drops the last line", ""), ("actually, first run the tests", "All 12 pass."),
        ("/help how do I undo", ""), ("what changed in the last commit?", "The parser fix.")]
    assert parsed.ledger.counts()["folded: aider /help context"] == 3
