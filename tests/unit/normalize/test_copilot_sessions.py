"""GitHub Copilot's sessions (``mempald.normalize.copilot``, ``copilot_cli``; issue 43): VS Code chat sessions in
both shapes (JSON, the mutation log), the Copilot CLI's events, read faithfully, every record accounted for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mempald.normalize import copilot, copilot_cli
from mempald.normalize.format import Input, Parsed, Probe
from mempald.normalize.model import CursorContext, NormalizeError
from mempald.sources.look import LOOK
from tests.copilot_samples import (
    PROJECT,
    cli_events,
    heron_requests,
    mutation_log,
    write_cli_session,
    write_json_session,
    write_jsonl_session,
)


def _parse(fmt_parse: object, path: Path, ctx: CursorContext | None = None) -> Parsed:
    assert callable(fmt_parse)
    out = fmt_parse(Input(name=str(path), data=path.read_bytes(), context=ctx or CursorContext()))
    assert isinstance(out, Parsed)
    return out


def test_a_vscode_session_reads_prompts_whole_answers_verbatim_and_attachments_apart(tmp_path: Path) -> None:
    path = write_json_session(tmp_path)
    ctx = copilot.beside(path, CursorContext(), LOOK)
    assert ctx.cwd == PROJECT  # workspace.json two folders up: the wing
    parsed = _parse(copilot.parse, path, ctx)
    first, second, third = parsed.exchanges
    assert first.user == "#file:writer.py why are partitions written twice?"
    assert first.assistant.startswith("The writer flushes in `writer.py` and again on close:\n\n```python\n"
                                      "self.flush()\nself.close()\n```")
    assert "[tool: copilot_readFile] Read writer.py, lines 1 to 80" in first.assistant
    assert "look at the flush" not in first.assistant and "Searching" not in first.assistant
    assert dict(first.extra)["attachments"] == f"{PROJECT}/writer.py\n{PROJECT}/flush.py:3-9"
    assert (first.key, first.session_id, first.agent, first.cwd) == (
        "request_1", "6c1f0d3e-2b9a-4e55-9d61-0f3c2a7b8e11", "copilot", PROJECT)
    assert first.title == "Partition writer" and first.timestamp == "2025-11-02T10:00:00Z"
    assert second.assistant == f"[edit: {PROJECT}/writer.py]\n\nRemoved the second flush."
    assert second.files == (f"{PROJECT}/writer.py",) and second.tools == ("edit",)
    assert third.assistant == "Start with a part\n\n[canceled]"
    assert [a.ref for a in parsed.ledger.entries] == ["requests[0]", "requests[1]", "requests[2]"]


def test_the_mutation_log_replays_to_the_same_exchanges_and_keeps_their_ids(tmp_path: Path) -> None:
    json_parsed = _parse(copilot.parse, write_json_session(tmp_path / "a"))
    path = write_jsonl_session(tmp_path / "b")
    parsed = _parse(copilot.parse, path)
    assert [(e.key, e.user, e.assistant) for e in parsed.exchanges] == [
        (e.key, e.user, e.assistant) for e in json_parsed.exchanges]
    assert parsed.exchanges[0].title == "Partition writer (log)"
    lines = len(path.read_bytes().splitlines())
    assert parsed.ledger.counts()["folded: session change"] == lines - 1
    # a log cut mid-session (VS Code still writing) reads the requests it has, with the same ids
    entries = mutation_log(heron_requests())
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(json.dumps(e) + "\n" for e in entries[:6]) + '{"kind": 1, "k": ["requ')
    partial = _parse(copilot.parse, cut)
    assert [e.key for e in partial.exchanges] == ["request_1", "request_2"]
    assert partial.ledger.counts()["skipped: not JSON"] == 1
    # a change that does not fit the session is skipped and named, never a crash
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps(entries[0]) + "\n" + json.dumps({"kind": 2, "k": ["requests", 7, "response"], "v": []})
                   + "\n" + json.dumps({"kind": 9, "k": ["x"]}) + "\n")
    assert _parse(copilot.parse, odd).ledger.counts()["skipped: a change that does not fit the session"] == 2


def test_detection_tells_the_shapes_apart(tmp_path: Path) -> None:
    js, jl, cli = write_json_session(tmp_path), write_jsonl_session(tmp_path / "l"), write_cli_session(tmp_path)
    assert copilot.detect(Probe(js.name, js.read_bytes()[:65536]))
    assert copilot.detect(Probe(jl.name, jl.read_bytes()[:65536]))
    assert copilot.detect(Probe(jl.name, jl.read_bytes()[:200]))  # a first line longer than the head
    assert not copilot.detect(Probe(cli.name, cli.read_bytes()))
    assert copilot_cli.detect(Probe(cli.name, cli.read_bytes()))
    assert not copilot_cli.detect(Probe(jl.name, jl.read_bytes()))
    with pytest.raises(NormalizeError):
        copilot.parse(Input(name="x.json", data=b'{"requests": 3}'))


def test_a_copilot_cli_session_reads_prompts_answers_and_tools(tmp_path: Path) -> None:
    path = write_cli_session(tmp_path)
    parsed = _parse(copilot_cli.parse, path)
    first, second = parsed.exchanges
    assert first.user == "List the failing tests"  # never transformedContent
    assert first.assistant == ("[tool: bash] pytest -q\n\n  -> 2 failed, 40 passed\n\n"
                               "Two tests fail: test_flush and test_close.")
    assert (first.key, first.agent, first.cwd, first.git_branch) == ("e02-5b1c", "copilot", PROJECT, "main")
    assert first.session_id == "9a8b7c6d-0000-4000-8000-aabbccddeeff"
    assert dict(first.extra)["attachments"] == f"{PROJECT}/pytest.ini"
    assert second.assistant.startswith("[tool: edit] writer.py\n\n  -> error: no match")
    assert second.files == (f"{PROJECT}/writer.py",)
    offsets = [0]
    for line in path.read_bytes().splitlines(keepends=True)[:-1]:
        offsets.append(offsets[-1] + len(line))
    assert sorted(int(a.ref) for a in parsed.ledger.entries) == offsets  # every event accounted for once
    counts = parsed.ledger.counts()
    assert counts["skipped: reasoning"] == 1 and counts["skipped: streaming delta"] == 1
    assert counts["skipped: session event session.info"] == 1
    assert len(cli_events()) == len(parsed.ledger.entries)


def test_a_legacy_copilot_cli_session_object_is_read(tmp_path: Path) -> None:
    legacy = {"sessionId": "hhh-1", "startTime": "2025-10-08T21:10:16.398Z", "chatMessages": [
        {"role": "user", "content": "please add mcp servers"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "t1", "type": "function", "function": {
            "name": "bash", "arguments": json.dumps({"command": "cat ~/.copilot/mcp-config.json"})}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "{\"mcpServers\": {}}"},
        {"role": "assistant", "content": "Added the server to mcp-config.json."},
        {"role": "system", "content": "ignored"}], "timeline": []}
    path = tmp_path / "history-session-state" / "hhh-1.json"
    path.parent.mkdir()
    path.write_text(json.dumps(legacy, indent=2))
    assert copilot_cli.detect(Probe(path.name, path.read_bytes()))
    assert not copilot.detect(Probe(path.name, path.read_bytes()))
    [ex] = _parse(copilot_cli.parse, path).exchanges
    assert (ex.session_id, ex.user, ex.agent) == ("hhh-1", "please add mcp servers", "copilot")
    assert ex.assistant == ("[tool: bash] cat ~/.copilot/mcp-config.json\n\n  -> {\"mcpServers\": {}}\n\n"
                            "Added the server to mcp-config.json.")
    assert _parse(copilot_cli.parse, path).ledger.counts() == {
        "folded: tool result": 1, "skipped: message of role 'system'": 1, "stored": 3}
