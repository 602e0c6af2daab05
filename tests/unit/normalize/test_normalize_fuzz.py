"""Property tests: whatever bytes or JSON values a normalizer is given, it returns a list of exchanges or
raises NormalizeError, nothing else; and no injected ``<mempal-context ...>`` span survives in a human turn.

Besides arbitrary bytes and arbitrary JSON (``st.recursive``), each format gets JSON shaped like its own
records, with every field optional and any field possibly replaced by arbitrary JSON, so the deep paths run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mempald.normalize import aider, chatgpt, claude_ai, claude_code, codex, gemini, plaintext, slack
from mempald.normalize.detect import detect_bytes, detect_dir
from mempald.normalize.model import INJECT_CLOSE, INJECT_OPEN, Exchange, Line, NormalizeError

# MEMPAL_FUZZ_EXAMPLES raises the number of examples for a longer hunt (the default keeps the suite fast)
FUZZ = settings(max_examples=int(os.environ.get("MEMPAL_FUZZ_EXAMPLES", "60")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

KEYS = st.sampled_from([
    "type", "payload", "role", "content", "message", "text", "parts", "mapping", "current_node", "parent",
    "children", "author", "recipient", "chat_messages", "sender", "uuid", "parent_message_uuid", "messages",
    "toolCalls", "ts", "thread_ts", "user", "subtype", "files", "attachments", "blocks", "elements", "id", "name",
    "args", "result", "sessionId", "projectHash", "timestamp", "cwd", "git", "input", "output", "call_id",
]) | st.text(max_size=6)
VALUES = st.sampled_from([
    "user", "assistant", "human", "tool", "system", "developer", "session_meta", "response_item", "event_msg",
    "turn_context", "compacted", "user_message", "agent_message", "message", "function_call", "text", "tool_use",
    "tool_result", "gemini", "info", "bot_message", "tombstone", "rich_text", "all",
    "00000000-0000-4000-8000-000000000000",
])
PIECES = st.sampled_from([
    "hi", " ", "\n", "<@U1>", "<@U2|bob>", "<#C1|dev>", "<!here>", "<http://x/f?t=xoxe-1-abc|l>", "&amp;", "<", ">",
    "|", f"{INJECT_OPEN} id='x'>", INJECT_CLOSE, INJECT_OPEN, "## My request for Codex:", "<environment_context>",
    "#### ", "> ", "\u3010", "\ud800",
])
TEXT = st.text(max_size=30) | st.lists(PIECES, max_size=8).map("".join)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | TEXT | VALUES
JSON = st.recursive(SCALARS, lambda c: st.lists(c, max_size=4) | st.dictionaries(KEYS, c, max_size=5), max_leaves=16)


def obj(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A dict whose keys are all optional and whose values may be the expected shape or any JSON."""
    return st.fixed_dictionaries({}, optional={k: v | JSON for k, v in fields.items()})


def pick(*values: Any) -> st.SearchStrategy[Any]:
    return st.sampled_from(values)


def dumps(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


def check(fn: Callable[..., list[Exchange]], *args: Any, **kwargs: Any) -> list[Exchange]:
    try:
        out = fn(*args, **kwargs)
    except NormalizeError:
        return []
    assert isinstance(out, list)
    for e in out:
        assert isinstance(e, Exchange)
        assert isinstance(e.user, str) and isinstance(e.assistant, str) and isinstance(e.key, str)
        assert isinstance(e.session_id, str) and isinstance(e.position, int)
        # no injected content survives (a stray closing tag, which carries none, may: see model.strip_injected)
        assert INJECT_OPEN not in e.user
        e.render()
    return out


DOCUMENT_PARSERS = [chatgpt.parse_document, claude_ai.parse_document, gemini.parse_document, aider.parse_document,
                    plaintext.parse_document]


@FUZZ
@given(st.binary(max_size=300))
def test_arbitrary_bytes(data: bytes) -> None:
    for parse in DOCUMENT_PARSERS:
        check(parse, data, "f.json")
    lines = [Line(i * 100, raw) for i, raw in enumerate(data.split(b"\n"))]
    check(codex.parse_lines, lines)
    check(claude_code.parse_lines, lines)
    assert isinstance(codex.session_meta(lines), dict)
    check(slack.parse_export, {"users.json": data, "general/2020-01-01.json": data})
    assert detect_bytes(data, "x") is None or isinstance(detect_bytes(data), str)


@FUZZ
@given(JSON)
def test_arbitrary_json(value: Any) -> None:
    data = dumps(value)
    for parse in DOCUMENT_PARSERS:
        check(parse, data)
    lines = [Line(0, data), Line(len(data) + 1, data)]
    check(codex.parse_lines, lines, session_id="s", cwd="/c")
    check(claude_code.parse_lines, lines)
    check(slack.parse_export, {"users.json": data, "channels.json": data, "c/2021-02-03.json": data})
    kind = detect_bytes(data)
    assert kind is None or isinstance(kind, str)


@FUZZ
@given(st.lists(JSON, max_size=6))
def test_arbitrary_jsonl(values: list[Any]) -> None:
    lines, off = [], 0
    for v in values:
        raw = dumps(v)
        lines.append(Line(off, raw))
        off += len(raw) + 1
    check(codex.parse_lines, lines)
    check(claude_code.parse_lines, lines)
    codex.session_meta(lines)
    detect_bytes(b"\n".join(ln.raw for ln in lines))


_IDS = pick("a", "b", "c", "d")
_CG_MSG = obj(
    id=_IDS, author=obj(role=pick("user", "assistant", "tool", "system"), name=TEXT),
    content=obj(content_type=pick("text", "code", "multimodal_text", "tether_quote", "system_error", "thoughts",
                                  "user_editable_context", "execution_output"),
                parts=st.lists(TEXT | obj(content_type=pick("image_asset_pointer", "audio_transcription"),
                                          text=TEXT), max_size=3),
                text=TEXT, title=TEXT, url=TEXT, name=TEXT, result=TEXT),
    create_time=st.floats(allow_nan=True) | st.integers(), recipient=pick("all", "browser", "python"),
    metadata=obj(model_slug=TEXT, is_visually_hidden_from_conversation=st.booleans()),
)
_CG_NODE = obj(id=_IDS, parent=_IDS | st.none(), children=st.lists(_IDS, max_size=3), message=_CG_MSG)
CHATGPT = st.lists(obj(id=TEXT, title=TEXT, create_time=st.floats(), current_node=_IDS,
                       mapping=st.dictionaries(_IDS, _CG_NODE, max_size=4)), max_size=3)


@FUZZ
@given(CHATGPT)
def test_chatgpt_shaped(doc: list[Any]) -> None:
    check(chatgpt.parse_document, dumps(doc))


_UUIDS = pick("m1", "m2", "m3", claude_ai.NULL_PARENT)
_CA_BLOCK = obj(type=pick("text", "thinking", "tool_use", "tool_result", "voice_note"), text=TEXT, name=TEXT,
                input=obj(command=TEXT, title=TEXT, query=TEXT, id=TEXT),
                content=st.lists(obj(type=pick("text"), text=TEXT), max_size=2), is_error=st.booleans())
_CA_MSG = obj(uuid=_UUIDS, text=TEXT, content=st.lists(_CA_BLOCK, max_size=3), sender=pick("human", "assistant"),
              created_at=TEXT, parent_message_uuid=_UUIDS,
              attachments=st.lists(obj(file_name=TEXT, extracted_content=TEXT), max_size=2),
              files=st.lists(obj(file_name=TEXT), max_size=2))
CLAUDE_AI = st.lists(obj(uuid=TEXT, name=TEXT, summary=TEXT, chat_messages=st.lists(_CA_MSG, max_size=5),
                         current_leaf_message_uuid=_UUIDS), max_size=3)


@FUZZ
@given(CLAUDE_AI)
def test_claude_ai_shaped(doc: list[Any]) -> None:
    check(claude_ai.parse_document, dumps(doc))


_GM_CALL = obj(name=TEXT, args=obj(command=TEXT, file_path=TEXT), status=pick("success", "error", "cancelled"),
               resultDisplay=TEXT, result=st.lists(obj(functionResponse=obj(response=obj(output=TEXT))), max_size=2))
_GM_MSG = obj(id=TEXT, type=pick("user", "gemini", "info", "error", "warning"), timestamp=TEXT,
              content=TEXT | st.lists(obj(text=TEXT), max_size=2), toolCalls=st.lists(_GM_CALL, max_size=2),
              model=TEXT)
GEMINI = obj(sessionId=TEXT, projectHash=TEXT, summary=TEXT, messages=st.lists(_GM_MSG, max_size=6))


@FUZZ
@given(GEMINI)
def test_gemini_shaped(doc: dict[str, Any]) -> None:
    check(gemini.parse_document, dumps(doc))


_CX_PAYLOAD = obj(
    type=pick("message", "user_message", "agent_message", "function_call", "function_call_output", "custom_tool_call",
              "local_shell_call", "web_search_call", "turn_aborted", "exec_command_begin", "mcp_tool_call_begin",
              "patch_apply_begin", "web_search_end", "reasoning"),
    role=pick("user", "assistant", "developer"),
    content=st.lists(obj(type=pick("input_text", "output_text"), text=TEXT), max_size=2),
    message=TEXT, kind=pick("plain", "environment_context"), name=TEXT, arguments=TEXT | JSON.map(json.dumps),
    call_id=pick("c1", "c2"), output=TEXT | JSON.map(json.dumps), input=TEXT,
    action=obj(command=st.lists(TEXT, max_size=3) | TEXT, query=TEXT), cwd=TEXT, id=TEXT, git=obj(branch=TEXT),
    replacement_history=JSON, invocation=obj(server=TEXT, tool=TEXT, arguments=JSON), changes=JSON, reason=TEXT,
    images=st.lists(JSON, max_size=2), subagent=JSON, source=JSON,
)
_CX_RECORD = obj(timestamp=TEXT, type=pick("session_meta", "response_item", "event_msg", "turn_context", "compacted"),
                 payload=_CX_PAYLOAD)


@FUZZ
@given(st.lists(_CX_RECORD, max_size=12), st.none() | TEXT)
def test_codex_shaped(records: list[Any], sid: str | None) -> None:
    lines, off = [], 0
    for r in records:
        raw = dumps(r)
        lines.append(Line(off, raw))
        off += len(raw) + 1
    out = check(codex.parse_lines, lines, session_id=sid)
    assert all(e.offset is not None and e.offset in {ln.offset for ln in lines} for e in out)
    assert len({e.key for e in out}) == len(out)
    meta = codex.session_meta(lines)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items())


_SL_MSG = obj(type=pick("message"), user=pick("U1", "U2", "U9"), text=TEXT,
              ts=pick("1.5", "1700000000.000100", "x", "1e400", "nan") | TEXT, thread_ts=pick("1.5", "2.5"),
              subtype=pick("bot_message", "tombstone", "channel_join", "file_comment", "me_message",
                           "thread_broadcast"),
              files=st.lists(obj(title=TEXT, name=TEXT, url_private=TEXT, permalink=TEXT), max_size=2),
              file=obj(title=TEXT, permalink=TEXT),
              attachments=st.lists(obj(title=TEXT, text=TEXT, fallback=TEXT, title_link=TEXT), max_size=2),
              blocks=st.lists(obj(type=pick("rich_text", "section"), elements=JSON, text=JSON, fields=JSON),
                              max_size=2),
              bot_profile=obj(name=TEXT), user_profile=obj(display_name=TEXT, real_name=TEXT),
              comment=obj(user=pick("U1", "U3")), hidden=st.booleans(), username=TEXT, bot_id=TEXT)
_SL_USERS = st.lists(obj(id=pick("U1", "U2"), name=TEXT, real_name=TEXT, profile=obj(display_name=TEXT)), max_size=3)
SLACK = st.dictionaries(
    pick("users.json", "channels.json", "dms.json", "general/2020-01-01.json", "C1/2020-01-02.json",
         "a/b/general/2020-01-03.json", "notes.txt", "general/not-a-day.json"),
    st.one_of(st.lists(_SL_MSG, max_size=5).map(dumps), _SL_USERS.map(dumps),
              st.lists(obj(id=pick("C1"), name=TEXT), max_size=2).map(dumps), st.binary(max_size=40)),
    max_size=5,
)


@FUZZ
@given(SLACK)
def test_slack_shaped(files: dict[str, bytes]) -> None:
    out = check(slack.parse_export, files)
    assert all("xoxe-1-abc" not in e.user for e in out)
    assert len({e.key for e in out}) == len(out)
    assert detect_dir(files) in (None, "slack")


MARKDOWN = st.lists(pick("#### /code x", "#### x", "#### /commit m", "> Applied edit to a.py", "> ", ">", "",
                         "# aider chat started at 2025-01-01 00:00:00", "text", "####", "#### ", "> quoted",
                         "Commit abcdef1 msg", f"#### {INJECT_OPEN}>m{INJECT_CLOSE}", "x" * 900) | TEXT,
                    max_size=15).map("\n".join)


@FUZZ
@given(MARKDOWN)
def test_markdown_shaped(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    out = check(aider.parse_document, data)
    assert len({e.key for e in out}) == len(out)
    notes = check(plaintext.parse_document, data)
    assert len({e.key for e in notes}) == len(notes)
    assert all(len(e.assistant) <= plaintext.NOTE_CHARS for e in notes if e.kind == "note")
    detect_bytes(data)
