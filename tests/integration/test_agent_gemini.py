"""Gemini CLI and Antigravity CLI end to end: the real daemon on a home laid out as each CLI lays it out (found by
the formats' declared places, no watch added), the session rewritten or appended as the CLI does, the new prompt
found by search and by the hook, nothing stored twice."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.integration.test_hooks import hook

SID = "5b1c2d3e-9f8a-4b7c-8d6e-0123456789ab"
CID = "c0ffee00-1234-4abc-9def-0123456789ab"
PROJECT = "/home/dev/okapi"


def _gemini_message(i: int, kind: str, text: str, **kw: Any) -> dict[str, Any]:
    return {"id": f"{SID[:8]}-{i:03d}-{kind}", "timestamp": f"2026-03-02T10:{i // 60:02d}:{i % 60:02d}.000Z",
            "type": kind, "content": text, **kw}


def _gemini_session(prompts: list[str]) -> str:
    messages: list[dict[str, Any]] = []
    for i, prompt in enumerate(prompts):
        messages.append(_gemini_message(i, "user", prompt))
        messages.append(_gemini_message(i, "gemini", f"Answer {i}: the importer retries because the vendor API drops "
                                                      "every tenth request.", model="gemini-3-pro-preview",
                                        toolCalls=[{"id": f"c{i}", "name": "read_file", "status": "success",
                                                    "args": {"absolute_path": f"{PROJECT}/importer.py"},
                                                    "resultDisplay": "ok"}]))
    return json.dumps({"sessionId": SID, "projectHash": "okapi", "startTime": "2026-03-02T10:00:00.000Z",
                       "lastUpdated": f"2026-03-02T11:{len(prompts) % 60:02d}:00.000Z", "messages": messages},
                      ensure_ascii=False, indent=2)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)  # as Gemini CLI rewrites its session file


def _hits(d: Daemon, word: str, **kw: Any) -> list[dict[str, Any]]:
    return [h for h in d.call("search", {"query": word, "limit": 10, **kw})["hits"] if word in (h.get("text") or "")]


def _found(d: Daemon, word: str, timeout: float = 60.0) -> tuple[list[dict[str, Any]], float]:
    t0 = time.monotonic()
    hits = d.wait_for(lambda: _hits(d, word), timeout=timeout, interval=0.05)
    return hits, time.monotonic() - t0


@pytest.mark.timeout(300)
def test_gemini_cli_session_rewritten_is_found_once_by_search_and_by_the_hook(daemon: Daemon, home: Path) -> None:
    gem = home / ".gemini"
    chats = gem / "tmp" / "okapi-1" / "chats"  # the CLI's short name for the folder (a second "okapi" it knows)
    chats.mkdir(parents=True)
    (gem / "projects.json").write_text(json.dumps({"projects": {"/home/old/okapi": "okapi", PROJECT: "okapi-1"}}))
    session = chats / f"session-2026-03-02T10-00-{SID[:8]}.json"
    words = [f"zq{uuid.uuid4().hex[:8]}" for _ in range(3)]
    prompts = [f"why does the {words[0]} importer retry three times?"]
    _write_atomic(session, _gemini_session(prompts))
    daemon.start()
    hits, _ = _found(daemon, words[0])
    assert hits[0]["agent"] == "gemini" and hits[0]["wing"] == "okapi", hits[0]
    agents = {a["agent"]: a for a in daemon.call("status")["agents"]}
    assert agents["Gemini CLI"]["found"] and agents["Gemini CLI"]["watched"], agents
    assert not agents["Antigravity CLI"]["found"]  # listed where it would be, not installed here
    # the CLI rewrites the whole file as the session grows: a hundred rewrites, two new prompts among them
    for n in range(100):
        if n == 40:
            prompts.append(f"and does the {words[1]} cache survive a restart?")
        text = _gemini_session(prompts).replace('"lastUpdated": "', f'"lastUpdated": "{n:03d}-', 1)
        _write_atomic(session, text)
        time.sleep(0.01)  # the CLI's pace between two saves (not a wait for the daemon)
    prompts.append(f"finally, where is the {words[2]} timeout set?")
    _write_atomic(session, _gemini_session(prompts))
    hits, fresh = _found(daemon, words[2])
    print(f"\nRELIABILITY gemini: a prompt in a rewritten session is keyword-searchable {fresh * 1000:.0f} ms "
          "after the write")
    daemon.idle()
    for word in words:  # each exchange stored once, whatever the number of rewrites
        found = _hits(daemon, word, agent=["gemini"])
        assert len({h["drawer_id"] for h in found}) == 1 and len({h["exchange_key"] for h in found}) == 1, found
    assert _hits(daemon, words[0], agent=["claude"]) == []
    res, _ = hook(daemon.env, "prompt", {"session_id": "another-session", "cwd": PROJECT, "hook_event_name":
                                         "BeforeAgent", "prompt": f"where was the {words[2]} timeout set?",
                                         "transcript_path": str(session)}, "--agent", "gemini")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "BeforeAgent" and words[2] in out["additionalContext"]


def _step(i: int, kind: str, content: str, source: str = "MODEL", **kw: Any) -> str:
    rec = {"step_index": i, "source": source, "type": kind, "status": "DONE",
           "created_at": f"2026-07-08T10:{i // 60:02d}:{i % 60:02d}Z", "content": content, **kw}
    return json.dumps(rec) + "\n"


def _ask(i: int, text: str) -> str:
    return _step(i, "USER_INPUT", f"<USER_REQUEST>\n{text}\n</USER_REQUEST>\n<ADDITIONAL_METADATA>\nThe current "
                                  "local time is: 2026-07-08T12:00:00+02:00.\n</ADDITIONAL_METADATA>", "USER_EXPLICIT")


@pytest.mark.timeout(300)
def test_antigravity_cli_conversation_appended_is_found_once_by_search_and_by_the_hook(
        daemon: Daemon, home: Path) -> None:
    root = home / ".gemini" / "antigravity-cli"
    logs = root / "brain" / CID / ".system_generated" / "logs"
    logs.mkdir(parents=True)
    (root / "history.jsonl").write_text(json.dumps({"display": "first", "timestamp": 1783520307000,
                                                    "workspace": PROJECT, "conversationId": CID}) + "\n")
    full, cut = logs / "transcript_full.jsonl", logs / "transcript.jsonl"
    words = [f"zq{uuid.uuid4().hex[:8]}" for _ in range(2)]
    first = _ask(0, f"why does the {words[0]} importer retry?") + _step(
        1, "PLANNER_RESPONSE", "Because the vendor API drops requests.", tool_calls=[
            {"name": "view_file", "args": {"AbsolutePath": json.dumps(f"{PROJECT}/importer.py")}}]) + _step(
        2, "VIEW_FILE", "Created At: 2026-07-08T10:00:02Z\n1: import time")
    for path in (full, cut):  # the CLI writes both: the cut one is never read while the full one is there
        path.write_text(first)
    daemon.start()
    hits, _ = _found(daemon, words[0])
    assert hits[0]["agent"] == "antigravity" and hits[0]["wing"] == "okapi", hits[0]
    seen = daemon.call("inspect", {"path": str(full), "counts_only": True})  # the unit, every record accounted for
    assert (seen["format"], seen["records"], sum(seen["accounted"].values())) == ("antigravity", 3, 3)
    assert [e["wing"] for e in seen["exchanges"]] == ["okapi"]
    more = _ask(3, f"and where is the {words[1]} backoff configured?") + _step(
        4, "PLANNER_RESPONSE", "In settings.py, BACKOFF_S.", thinking="look it up")
    t0 = time.monotonic()
    for path in (full, cut):
        with path.open("a") as fh:
            fh.write(more)
    hits = daemon.wait_for(lambda: _hits(daemon, words[1]), timeout=60, interval=0.05)
    print(f"\nRELIABILITY antigravity: an appended prompt is keyword-searchable {(time.monotonic() - t0) * 1000:.0f} "
          "ms after the write")
    daemon.idle()
    for word in words:
        found = _hits(daemon, word, agent=["antigravity"])
        assert len({h["drawer_id"] for h in found}) == 1, found  # not again from transcript.jsonl
    assert "look it up" not in json.dumps(_hits(daemon, words[1]))
    payload = {"conversationId": "another-conversation", "workspacePaths": [PROJECT], "invocationNum": 1,
               "transcriptPath": str(home / "other.jsonl")}
    (home / "other.jsonl").write_text(_ask(0, f"where is the {words[1]} backoff configured?"))
    res, _ = hook(daemon.env, "prompt", payload, "--agent", "antigravity")
    assert res.returncode == 0, res.stderr
    assert words[1] in json.loads(res.stdout)["injectSteps"][0]["ephemeralMessage"]
