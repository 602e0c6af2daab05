"""The hook answering Gemini CLI's and Antigravity CLI's events (their input fields, their output shapes), against
the real daemon of tests/integration/test_hooks.py (the short fixture session stored, stop_every=2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mempald.normalize.model import INJECT_CLOSE, INJECT_OPEN, strip_injected
from tests.conftest import Daemon
from tests.integration.test_hooks import RELEVANT, SHORT_CWD, context_of, hook, live  # noqa: F401 (the fixture)

CID = "7d1e2f3a-4b5c-4d6e-8f90-a1b2c3d4e5f6"
CHAT = "/home/marco/.gemini/tmp/spotter/chats/session-2026-03-02T10-00-g.json"


def gemini(event: str, **kw: object) -> dict[str, object]:
    """Gemini CLI's base input (session_id, transcript_path, cwd, hook_event_name, timestamp) and the event's own."""
    out: dict[str, object] = {"session_id": "g-sess-1", "cwd": SHORT_CWD, "hook_event_name": event,
                              "transcript_path": CHAT,
                              "timestamp": "2026-03-02T10:00:00.000Z"}
    out.update(kw)
    return out


def agy_transcript(folder: Path, prompt: str, first: bool = False) -> Path:
    logs = folder / "brain" / CID / ".system_generated" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / "transcript_full.jsonl"
    steps = [{"step_index": 0, "source": "USER_EXPLICIT", "type": "USER_INPUT", "status": "DONE",
              "created_at": "2026-07-08T10:00:00Z", "content": "<USER_REQUEST>\nan earlier question\n</USER_REQUEST>"},
             {"step_index": 1, "source": "MODEL", "type": "PLANNER_RESPONSE", "status": "DONE",
              "created_at": "2026-07-08T10:00:05Z", "content": "an earlier answer"},
             {"step_index": 2, "source": "USER_EXPLICIT", "type": "USER_INPUT", "status": "DONE",
              "created_at": "2026-07-08T10:01:00Z",
              "content": f"<USER_REQUEST>\n{prompt}\n</USER_REQUEST>\n<ADDITIONAL_METADATA>\nThe current local time "
                         "is: 2026-07-08T12:01:00+02:00.\n</ADDITIONAL_METADATA>"}]
    path.write_text("".join(json.dumps(s) + "\n" for s in steps[2 if first else 0:]))
    return path


def agy(transcript: Path, **kw: object) -> dict[str, object]:
    out: dict[str, object] = {"conversationId": CID, "workspacePaths": [SHORT_CWD], "transcriptPath": str(transcript),
                              "artifactDirectoryPath": str(transcript.parents[2]), "modelName": "Gemini 3.5 Flash"}
    out.update(kw)
    return out


@pytest.mark.timeout(240)
def test_gemini_before_agent_and_session_start_get_context_under_their_names(live: Daemon) -> None:  # noqa: F811
    res, _ = hook(live.env, "prompt", gemini("BeforeAgent", prompt=RELEVANT), "--agent", "gemini")
    ctx = context_of(res, "BeforeAgent")
    assert "mix phx.server doesnt seem to start" in ctx and "drawer " in ctx
    for source in ("startup", "resume", "clear"):
        res, _ = hook(live.env, "session-start", gemini("SessionStart", source=source), "--agent", "gemini")
        assert "wing spotter" in context_of(res, "SessionStart")
    # without --agent, the transcript under ~/.gemini/tmp says who runs it
    res, _ = hook(live.env, "prompt", gemini("BeforeAgent", prompt=RELEVANT, session_id="g-sess-2"))
    context_of(res, "BeforeAgent")
    unrelated, _ = hook(live.env, "prompt", gemini("BeforeAgent", prompt="what is the capital of France?"),
                        "--agent", "gemini")
    assert (unrelated.returncode, unrelated.stdout) == (0, "")


@pytest.mark.timeout(240)
def test_gemini_never_drains_another_agents_inbox(live: Daemon, tmp_path: Path) -> None:  # noqa: F811
    cwd = str(tmp_path / "acme")
    live.call("cowork_push", {"from": "codex", "to": "claude", "cwd": cwd, "text": "for claude only"})
    res, _ = hook(live.env, "prompt", gemini("BeforeAgent", prompt="ok", cwd=cwd), "--agent", "gemini")
    assert (res.returncode, res.stdout) == (0, "")
    assert live.call("cowork_status", {"cwd": cwd})["inboxes"]["claude"]["pending"] == 1


@pytest.mark.timeout(240)
def test_gemini_after_agent_saves_every_n_turns_and_session_end_returns_at_once(live: Daemon) -> None:  # noqa: F811
    transcript = str(next((Path(live.env["HOME"]) / ".claude" / "projects").rglob("*.jsonl")))
    payload = gemini("AfterAgent", session_id="g-stop", transcript_path=transcript, prompt="p", prompt_response="r",
                     stop_hook_active=False)
    first, _ = hook(live.env, "stop", payload, "--agent", "gemini")
    assert (first.returncode, first.stdout) == (0, "")
    second, _ = hook(live.env, "stop", payload, "--agent", "gemini")
    assert json.loads(second.stdout)["systemMessage"].startswith("mempal: this session is saved in memory")
    end, dt = hook(live.env, "session-end", gemini("SessionEnd", transcript_path=transcript, reason="exit"),
                   "--agent", "gemini")
    assert (end.returncode, end.stdout) == (0, "") and dt < 2.0


@pytest.mark.timeout(240)
def test_antigravity_pre_invocation_recalls_for_the_prompt_in_the_transcript(live: Daemon, tmp_path: Path) -> None:  # noqa: F811
    transcript = agy_transcript(tmp_path / ".gemini" / "antigravity-cli", RELEVANT)
    res, _ = hook(live.env, "prompt", agy(transcript, invocationNum=1), "--agent", "antigravity")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out) == {"injectSteps"}
    [step] = out["injectSteps"]
    ctx = step["ephemeralMessage"]
    assert ctx.startswith(INJECT_OPEN + ' id="') and ctx.endswith(INJECT_CLOSE) and strip_injected(ctx) == ""
    assert "mix phx.server doesnt seem to start" in ctx
    assert "wing spotter" not in ctx  # not the conversation's first prompt: no wake-up
    # later model calls of the same turn add nothing (agy reads "{}" as "nothing to add")
    later, _ = hook(live.env, "prompt", agy(transcript, invocationNum=2), "--agent", "antigravity")
    assert (later.returncode, later.stdout) == (0, "{}\n")
    other = agy_transcript(tmp_path / "other", "what is the capital of France?")
    res, _ = hook(live.env, "prompt", agy(other, invocationNum=1, conversationId="c-2"))  # found by its shape
    assert (res.returncode, res.stdout) == (0, "")
    # agy has no session start: a conversation's first prompt brings the wake-up after the recalled memories
    first = agy_transcript(tmp_path / "first", RELEVANT, first=True)
    res, _ = hook(live.env, "prompt", agy(first, invocationNum=1, conversationId="c-3"), "--agent", "antigravity")
    steps = [s["ephemeralMessage"] for s in json.loads(res.stdout)["injectSteps"]]
    assert len(steps) == 2 and "mix phx.server doesnt seem to start" in steps[0] and "wing spotter" in steps[1]
    assert all(strip_injected(s) == "" for s in steps)


@pytest.mark.timeout(240)
def test_antigravity_stop_and_bad_input_fail_open(live: Daemon, tmp_path: Path) -> None:  # noqa: F811
    transcript = agy_transcript(tmp_path, "anything")
    for _ in range(3):  # stop_every=2: the second saves; agy shows no message of ours
        res, _ = hook(live.env, "stop", agy(transcript, terminationReason="NO_TOOL_CALL"), "--agent", "antigravity")
        assert (res.returncode, res.stdout) == (0, "{}\n"), res.stderr
    for event, stdin in (("prompt", json.dumps(agy(tmp_path / "missing.jsonl", invocationNum=1))),
                         ("prompt", json.dumps({"conversationId": 7, "transcriptPath": None})),
                         ("prompt", "not json"), ("session-end", "[1]"), ("stop", "{")):
        for agent, nothing in (("gemini", ""), ("antigravity", "{}\n")):
            res, _ = hook(live.env, event, stdin, "--agent", agent)
            assert (res.returncode, res.stdout) == (0, nothing), (event, stdin, agent, res.stderr)
