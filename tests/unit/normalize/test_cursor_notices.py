"""Cursor's own messages in the user's place (issue 43, "nothing the user did not type is stored as their
prompt"): when a background task (a shell command, a sub-agent) ends, Cursor adds a user message holding its
``<system_notification>`` (after a ``<timestamp>`` in some releases) and, in current releases, the fixed query
"Briefly inform the user about the task result...". The same message is a user bubble in ``state.vscdb`` and a
``**User**`` turn in Cursor's "Export chat" Markdown (and in a SpecStory history of the chat). Never a prompt:
the answer after it goes on with the exchange that started the task, with a line naming the task. Samples
written here in the shapes public readers and exports show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mempald.normalize import cursor, cursor_export
from mempald.normalize import cursor_bubbles as cb
from mempald.normalize.format import Input
from mempald.normalize.model import CursorContext
from mempald.sources.look import LOOK
from tests.cursor_samples import answer, create_db, user, write_conversation

NOTICE = ("<system_notification>\nThe following task has finished. If you were already aware, ignore this "
          "notification and do not restate prior responses.\n\n<task>\nkind: shell\nstatus: error\n"
          "task_id: 77164\ntitle: Run full test suite\ndetail: exit_code=1\n"
          "output_path: /home/dev/.cursor/projects/home-dev-hrm/terminals/77164.txt\n</task>\n"
          "</system_notification>\n<user_query>Briefly inform the user about the task result and perform any "
          "follow-up actions (if needed). If there's no follow-ups needed, don't explicitly say that."
          "</user_query>")
BARE = ("<timestamp>Thursday, Aug 27, 2026, 11:02 PM (UTC-7)</timestamp>\n<system_notification>\nThe following "
        "task has finished.\nkind: subagent\nstatus: success\n</system_notification>")


def _parse(tmp_path: Path, messages: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], dict[str, int]]:
    db_path = tmp_path / "User" / "globalStorage" / "state.vscdb"
    db = create_db(db_path)
    write_conversation(db, "c-tests", messages)
    db.close()
    ctx = cursor.beside(db_path, CursorContext(format="cursor"), LOOK)
    parsed = cursor.parse(cursor.gather(db_path, ctx, LOOK))
    return [(e.user, e.assistant) for e in parsed.exchanges], parsed.ledger.counts()


def test_a_task_notification_bubble_is_never_a_prompt(tmp_path: Path) -> None:
    exchanges, counts = _parse(tmp_path, [
        user("u1", "run the tests in the background"), answer("a1", "Started the suite."),
        user("n1", NOTICE), answer("a2", "Three tests failed: duplicate English rows."),
        user("n2", BARE), answer("a3", "The sub-agent finished the cleanup."),
        user("u2", "great, now clean it up"), answer("a4", "Done."),
    ])
    assert exchanges == [
        ("run the tests in the background", "Started the suite.\n\n[task finished] Run full test suite (error)\n\n"
                                            "Three tests failed: duplicate English rows.\n\n"
                                            "The sub-agent finished the cleanup."),
        ("great, now clean it up", "Done."),
    ]
    assert counts["folded: Cursor's own follow-up (not typed)"] == 2  # every row accounted for


def test_a_notification_before_any_prompt_is_skipped_with_its_reason(tmp_path: Path) -> None:
    exchanges, counts = _parse(tmp_path, [user("n1", BARE), user("u1", "the real prompt"), answer("a1", "ok")])
    assert exchanges == [("the real prompt", "ok")]
    assert counts["skipped: Cursor's own follow-up (not typed)"] == 1


def test_a_typed_query_beside_a_notification_is_the_prompt_and_keys_agree() -> None:
    typed = "<system_notification>\nkind: shell\nstatus: success\n</system_notification>\n" \
            "<user_query>now push it</user_query>"
    assert cb.user_text({"text": typed}) == "now push it"
    assert cb.user_text({"text": "plain <b>typed</b> text"}) == "plain <b>typed</b> text"  # typed text as it is


def test_an_export_s_notification_turn_is_folded_into_the_exchange_before() -> None:
    export = (f"# Coverage\n_Exported on 11/2/2026 at 10:04:11 GMT+1 from Cursor (2.4.31)_\n\n---\n\n**User**\n\n"
              f"run the full suite\n\n---\n\n**Cursor**\n\nRunning it in the background.\n\n---\n\n**User**\n\n"
              f"{NOTICE}\n\n---\n\n**Cursor**\n\n**Done.** The full suite passes.\n\n---\n\n**User**\n\n"
              f"ok now the commits\n\n---\n\n**Cursor**\n\nHere is the plan.\n")
    parsed = cursor_export.parse(Input(name="/exports/coverage.md", data=export.encode()))
    assert [(e.user, e.assistant) for e in parsed.exchanges] == [
        ("run the full suite", "Running it in the background.\n\n[task finished] Run full test suite (error)\n\n"
                               "**Done.** The full suite passes."),
        ("ok now the commits", "Here is the plan."),
    ]
    assert parsed.ledger.counts()["folded: Cursor's own follow-up (not typed)"] == 1
    assert [e.key for e in parsed.exchanges] == ["coverage:0", "coverage:1"]
