"""Arbitrary input never crashes the Cursor, Copilot and SpecStory readers (issue 43, bad input): a parse either
returns exchanges with every record accounted for once, or raises NormalizeError."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mempald.normalize import copilot, copilot_cli, cursor, cursor_export, specstory
from mempald.normalize.format import Input, Parsed
from mempald.normalize.model import CursorContext, NormalizeError
from tests.unit.normalize.test_normalize_fuzz import FUZZ, JSON, TEXT, obj, pick

_BID = pick("u1", "a1", "u2", "a2", "x")
_BUBBLE = obj(type=pick(1, 2, 3, "1", None), bubbleId=_BID, text=TEXT, thinking=obj(text=TEXT),
              toolFormerData=obj(name=TEXT, rawArgs=TEXT, params=JSON, result=JSON, status=TEXT),
              codeBlocks=st.lists(obj(content=TEXT, languageId=TEXT) | JSON, max_size=2),
              context=obj(fileSelections=st.lists(obj(uri=JSON) | JSON, max_size=2)), createdAt=JSON)
_COMPOSER = obj(composerId=TEXT, name=TEXT, status=pick("completed", "generating", None),
                lastUpdatedAt=JSON, createdAt=JSON, workspaceIdentifier=JSON,
                fullConversationHeadersOnly=st.lists(obj(bubbleId=_BID, type=JSON) | JSON, max_size=5),
                conversation=st.lists(_BUBBLE | JSON, max_size=3))


def _accounted(parsed: Parsed) -> None:
    entries = parsed.ledger.entries
    assert len({(a.ref, a.outcome) for a in entries}) == len(entries)
    keys = [e.key for e in parsed.exchanges]
    assert len(set(keys)) == len(keys)
    for e in parsed.exchanges:
        e.render()


def _value(v: Any, raw: bool) -> Any:
    return v if raw and isinstance(v, str) else json.dumps(v)


@FUZZ
@given(st.lists(st.tuples(pick("composerData:c1", "composerData:c2", "bubbleId:c1:u1", "bubbleId:c1:a1",
                               "bubbleId:c2:u2", "bubbleId:c1", cursor.LEGACY_CHAT, "other"),
                          _COMPOSER | _BUBBLE | JSON | obj(tabs=st.lists(obj(bubbles=st.lists(
                              obj(type=pick("user", "ai"), text=TEXT, id=TEXT) | JSON, max_size=3)) | JSON,
                              max_size=2)), st.booleans()), max_size=8),
       st.integers(min_value=0, max_value=2**40))
def test_arbitrary_cursor_rows(rows: list[tuple[str, Any, bool]], since: int) -> None:
    seen: dict[str, Any] = {}
    for key, value, raw in rows:
        seen[key] = _value(value, raw)  # the table's keys are unique
    inp = Input(name="state.vscdb", context=CursorContext(format="cursor", since=since), rows=[
        {"table": "ItemTable" if k == cursor.LEGACY_CHAT else "cursorDiskKV", "rowid": n + 1, "key": k, "value": v}
        for n, (k, v) in enumerate(seen.items())])
    parsed = cursor.parse(inp)
    assert parsed.context.since <= since  # never past what the read covered
    _accounted(parsed)
    refs = [str(a.ref) for a in parsed.ledger.entries]
    for row in inp.rows:  # every row read has exactly one outcome (the legacy chat row: one per message)
        if row["key"] != cursor.LEGACY_CHAT:
            assert refs.count(f"{row['table']}/{row['key']}") == 1, (row["key"], refs)


@FUZZ
@given(st.binary(max_size=300) | JSON.map(lambda v: json.dumps(v).encode())
       | st.lists(obj(kind=pick(0, 1, 2, 3), k=st.lists(pick("requests", 0, 1, "response", "x"), max_size=3),
                      v=JSON | obj(requests=st.lists(JSON, max_size=2)), i=JSON), max_size=5).map(
           lambda es: b"\n".join(json.dumps(e).encode() for e in es)))
def test_arbitrary_documents(data: bytes) -> None:
    for fmt in (copilot, copilot_cli, specstory, cursor_export):
        try:
            parsed = fmt.parse(Input(name="x.jsonl", data=data))
        except NormalizeError:
            continue
        _accounted(parsed)
