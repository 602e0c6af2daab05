"""Arbitrary input never crashes the reader of Cursor's agent transcripts (issue 43, bad input): every record is
accounted for once, keys are unique, what is stored is in an exchange, and a prompt is never Cursor's own
follow-up, whatever the records, the text of a legacy ``.txt`` or where the file lies."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from mempald.normalize import cursor_transcript
from mempald.normalize.format import Input
from mempald.normalize.model import CursorContext
from tests.unit.normalize.test_normalize_fuzz import FUZZ, JSON, TEXT, obj, pick

_TAGGED = st.sampled_from(["<user_query>\n", "\n</user_query>", "<timestamp>Friday, May 8, 2026, 6:05 AM (UTC+5:30)"
                           "</timestamp>", "<attached_files>\n<code_selection path=\"/a.py\" lines=\"1-2\">\n",
                           "</code_selection>\n</attached_files>",
                           "<system_notification>title: t</system_notification>",
                           "Briefly inform the user about the task result", "[REDACTED]", "<think>", "</think>",
                           "[Image]", "\n"])
_WORDS = TEXT | st.lists(_TAGGED | TEXT, max_size=8).map("".join)
_PART = obj(type=pick("text", "tool_use", "tool_result", "thinking", None), text=_WORDS, name=_WORDS,
            input=JSON | _WORDS, content=JSON)
_RECORD = obj(role=pick("user", "assistant", "tool", "system", None), message=obj(content=st.lists(_PART | JSON,
              max_size=3) | _WORDS), type=pick("turn_ended", None))
_NAMES = pick("/h/.cursor/projects/a-b/agent-transcripts/u/u.jsonl",
              "/h/.cursor/projects/a-b/agent-transcripts/u/subagents/v.jsonl", "x.jsonl", "/p/agent-transcripts/u.txt")
_TXT = st.lists(pick("user:", "assistant:", "A:", "[Thinking] a.", "[Tool call] Shell", "  command: ls",
                     "[Tool result] Shell", "") | _WORDS, max_size=12).map("\n".join)


def _check(name: str, data: bytes) -> None:
    out = cursor_transcript.parse(Input(name=name, data=data, context=CursorContext()))
    entries = out.ledger.entries
    assert len({a.ref for a in entries}) == len(entries), "every record once"
    keys = [e.key for e in out.exchanges]
    assert len(set(keys)) == len(keys), "unique keys"
    assert {a.exchange for a in entries if a.outcome != "skipped"} <= set(keys), "stored in an exchange"
    for e in out.exchanges:
        assert not e.user.startswith(("Briefly inform the user", "The above subagent result")), e.user
        e.render()


@FUZZ
@given(st.lists(_RECORD | JSON, max_size=8), _NAMES, st.booleans())
def test_any_records_are_read_and_accounted_for(records: list[object], name: str, torn: bool) -> None:
    data = "\n".join(json.dumps(r) for r in records).encode()
    _check(name, data[: len(data) - 7] if torn and len(data) > 7 else data)  # a last line cut while written


@FUZZ
@given(_TXT)
def test_any_legacy_text_is_read_and_accounted_for(text: str) -> None:
    _check("/p/agent-transcripts/u.txt", text.encode("utf-8", "surrogatepass"))  # (bytes that are not UTF-8 too)
