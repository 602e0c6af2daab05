"""Property tests for the OpenCode formats: whatever records a storage folder, a database or an export holds
(every field optional, any field possibly another JSON value), the parse returns exchanges with every record
accounted for once, or raises NormalizeError; never anything else, and no injected span reaches a prompt."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mempald.normalize import opencode_db, opencode_export, opencode_storage
from mempald.normalize.format import Input, Parsed
from mempald.normalize.model import INJECT_CLOSE, INJECT_OPEN, NormalizeError

FUZZ = settings(max_examples=int(os.environ.get("MEMPAL_FUZZ_EXAMPLES", "60")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
ANY = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                   lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                   max_leaves=8)
TEXT = st.sampled_from(["hi", "", " ", f"{INJECT_OPEN} id='x'>recalled{INJECT_CLOSE}", "@src/a.py", "日本語"])
TIME = st.fixed_dictionaries({}, optional={"created": st.integers(0, 2**41) | ANY, "start": st.integers() | ANY})
STATE = st.fixed_dictionaries({}, optional={
    "status": st.sampled_from(["pending", "running", "completed", "error", "x"]) | ANY,
    "input": st.dictionaries(st.sampled_from(["command", "filePath", "pattern"]), TEXT | ANY, max_size=2) | ANY,
    "output": TEXT | ANY, "error": TEXT | ANY, "title": TEXT | ANY})
PART = st.fixed_dictionaries({}, optional={
    "id": st.text(max_size=6) | ANY,
    "type": st.sampled_from(["text", "tool", "reasoning", "file", "step-start", "step-finish", "patch", "subtask",
                             "compaction", "agent", "snapshot", "retry", "x-new"]) | ANY,
    "text": TEXT | ANY, "synthetic": st.booleans() | ANY, "ignored": st.booleans() | ANY, "tool": TEXT | ANY,
    "state": STATE | ANY, "mime": st.sampled_from(["image/png", "text/plain"]) | ANY, "filename": TEXT | ANY,
    "url": TEXT | ANY, "time": TIME | ANY})
INFO = st.fixed_dictionaries({}, optional={
    "id": st.sampled_from(["msg_a", "msg_b", "msg_c"]) | ANY,
    "role": st.sampled_from(["user", "assistant", "system"]) | ANY, "time": TIME | ANY,
    "parentID": st.sampled_from(["msg_a", "msg_b"]) | ANY, "summary": st.booleans() | ANY,
    "error": st.fixed_dictionaries({"name": TEXT, "data": ANY}) | ANY, "modelID": TEXT | ANY,
    "path": st.fixed_dictionaries({"cwd": TEXT}) | ANY})
SESSION = st.fixed_dictionaries({"id": st.just("ses_x")}, optional={
    "directory": TEXT | ANY, "title": TEXT | ANY, "parentID": st.sampled_from(["ses_p"]) | ANY})


def _check(parsed: Parsed) -> None:
    refs = [a.ref for a in parsed.ledger.entries]
    assert len(refs) == len(set(refs)), "no record accounted for twice"
    for ex in parsed.exchanges:
        assert INJECT_OPEN not in ex.user and INJECT_CLOSE not in ex.user


@FUZZ
@given(st.lists(st.tuples(INFO | ANY, st.lists(PART | ANY, max_size=4)), max_size=5), SESSION | ANY)
def test_an_export_of_anything_is_read_or_refused(messages: list[tuple[Any, list[Any]]], info: Any) -> None:
    doc = {"info": info, "messages": [{"info": i, "parts": p} for i, p in messages]}
    with contextlib.suppress(NormalizeError):
        _check(opencode_export.parse(Input(name="x.json", data=json.dumps(doc).encode())))


@FUZZ
@given(st.lists(st.tuples(INFO | ANY, st.lists(PART | ANY, max_size=3)), max_size=5), SESSION | ANY,
       st.binary(max_size=20))
def test_a_storage_folder_of_anything_is_read_or_refused(messages: list[tuple[Any, list[Any]]], info: Any,
                                                        junk: bytes) -> None:
    files = {"session/p/ses_x.json": json.dumps(info).encode(), "message/ses_x/msg_junk.json": junk}
    for i, (msg, parts) in enumerate(messages):
        files[f"message/ses_x/msg_{i}.json"] = json.dumps(msg).encode()
        for j, part in enumerate(parts):
            files[f"part/msg_{i}/prt_{j}.json"] = json.dumps(part).encode()
    try:
        parsed = opencode_storage.parse(Input(name="ses_x", files=files))
    except NormalizeError:
        return
    _check(parsed)
    assert {str(a.ref) for a in parsed.ledger.entries} == set(files), "every file accounted for"


@FUZZ
@given(st.lists(st.tuples(INFO | ANY, st.lists(PART | ANY, max_size=3)), max_size=5),
       st.lists(st.tuples(st.sampled_from(["user", "assistant", "shell", "compaction", "synthetic", "x"]), ANY),
                max_size=4))
def test_database_rows_of_anything_are_read(messages: list[tuple[Any, list[Any]]],
                                            v2: list[tuple[str, Any]]) -> None:
    rows: list[dict[str, Any]] = [{"table": "session", "id": "ses_x", "directory": "/w", "time_updated": 1}]
    for i, (msg, parts) in enumerate(messages):
        rows.append({"table": "message", "id": f"msg_{i}", "session_id": "ses_x", "time_updated": i,
                     "data": json.dumps(msg)})
        rows.extend({"table": "part", "id": f"prt_{i}_{j}", "message_id": f"msg_{i}", "session_id": "ses_x",
                     "time_updated": i, "data": json.dumps(p)} for j, p in enumerate(parts))
    rows.extend({"table": "session_message", "id": f"msg_v{i}", "session_id": "ses_y", "type": t,
                 "time_updated": i, "data": json.dumps(d)} for i, (t, d) in enumerate(v2))
    parsed = opencode_db.parse(Input(rows=rows))
    _check(parsed)
