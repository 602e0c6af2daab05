"""The aider chat-history normalizer on the real history in ../shared (every ``#### `` line read: 13 input
lines, five ``/code X`` + ``X`` echo pairs and two ``/commit`` commands, so six prompts) and on synthetic
histories."""

from __future__ import annotations

from pathlib import Path

import pytest

from mempald.normalize.aider import SOURCE_KIND, parse_document
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
