"""The hook answering Cline's events (its input: ``taskId``, ``workspaceRoots``, the event's own object; its output:
``{"cancel": false, "contextModification": ...}``), against the real daemon of tests/integration/test_hooks.py (the
short fixture session stored under the wing ``spotter``): recall for the prompt, the wake-up at a task's start and
resume, the save at the task's end, and failing open with Cline's no-op answer."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mempal.hook_cline import adapt_cline
from mempald.normalize.model import INJECT_CLOSE, INJECT_OPEN, strip_injected
from tests.conftest import REPO, Daemon
from tests.integration.test_hooks import RELEVANT, SHORT_CWD, hook, live  # noqa: F401 (the fixture)

NOOP = {"cancel": False}
TASK = REPO / "tests" / "fixtures" / "cline" / "cline_vscode_task" / "1773478931000"
EXT_TASKS = Path("Code") / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"


def cline(event: str, **own: Any) -> dict[str, Any]:
    """Cline's base input (clineVersion, hookName, timestamp, taskId, workspaceRoots, userId) and the event's own
    object under its camelCase name."""
    out: dict[str, Any] = {"clineVersion": "3.38.3", "hookName": event, "timestamp": "1765031000000",
                           "taskId": "1765030990000", "workspaceRoots": [SHORT_CWD], "userId": "u-7f3a",
                           "model": {"provider": "anthropic", "slug": "claude-sonnet-4-5"}}
    out.update(own)
    return out


def context_of(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out) == {"cancel", "contextModification"} and out["cancel"] is False
    ctx: str = out["contextModification"]
    assert ctx.startswith(INJECT_OPEN + ' id="') and ctx.endswith(INJECT_CLOSE) and strip_injected(ctx) == ""
    assert len(ctx) <= 9000
    return ctx


def noop(res: subprocess.CompletedProcess[str]) -> bool:
    return res.returncode == 0 and json.loads(res.stdout) == NOOP


@pytest.mark.timeout(240)
def test_cline_prompt_recall_and_task_start_wake_up_come_as_context_modification(live: Daemon) -> None:  # noqa: F811
    submit = cline("UserPromptSubmit", userPromptSubmit={"prompt": RELEVANT, "attachments": []})
    res, _ = hook(live.env, "prompt", submit, "--agent", "cline")
    assert "mix phx.server doesnt seem to start" in context_of(res)
    # found by its shape when --agent is missing
    res, _ = hook(live.env, "prompt", {**submit, "taskId": "1765030990001"})
    assert "mix phx.server doesnt seem to start" in context_of(res)
    unrelated, _ = hook(live.env, "prompt", cline("UserPromptSubmit", userPromptSubmit={
        "prompt": "what is the capital of France?", "attachments": []}), "--agent", "cline")
    assert noop(unrelated)
    start = cline("TaskStart", taskStart={"taskMetadata": {"taskId": "1765030990000", "ulid": "01KBQ",
                                                           "initialTask": RELEVANT}})
    res, _ = hook(live.env, "session-start", start, "--agent", "cline")
    assert "wing spotter" in context_of(res)
    resume = cline("TaskResume", taskResume={"taskMetadata": {"taskId": "1765030990000", "ulid": "01KBQ"},
                                             "previousState": {"lastMessageTs": "1765030995000",
                                                               "messageCount": "4",
                                                               "conversationHistoryDeleted": "false"}})
    res, _ = hook(live.env, "session-start", resume, "--agent", "cline")
    assert "wing spotter" in context_of(res)


@pytest.mark.timeout(240)
def test_cline_task_end_and_pre_compact_ask_for_the_task_folder_and_return_at_once(live: Daemon) -> None:  # noqa: F811
    folder = Path(live.env["XDG_CONFIG_HOME"]) / EXT_TASKS / TASK.name
    shutil.copytree(TASK, folder)
    for event, verb in (("PreCompact", "precompact"), ("TaskComplete", "session-end"), ("TaskCancel", "session-end")):
        payload = cline(event, taskId=TASK.name, workspaceRoots=["/home/dev/ledgerly"])
        res, dt = hook(live.env, verb, payload, "--agent", "cline")
        assert noop(res) and dt < 3.0, (event, res.stderr, dt)

    def stored() -> list[dict[str, Any]]:
        hits: list[dict[str, Any]] = live.call("search", {"query": "Decimal ROUND_HALF_EVEN invoice totals",
                                                          "limit": 20, "min_score": 0, "agent": ["cline"]})["hits"]
        return [h for h in hits if h.get("session_id") == TASK.name]

    assert live.wait_for(stored)[0]["wing"] == "ledgerly"


def test_the_save_events_find_the_task_folder_by_its_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    folder = tmp_path / ".config" / EXT_TASKS / "1765030990000"
    folder.mkdir(parents=True)
    cli = tmp_path / ".cline" / "data" / "tasks" / "1765030990002"
    cli.mkdir(parents=True)
    assert adapt_cline("session-end", cline("TaskComplete"))["transcript_path"] == str(folder)
    assert adapt_cline("precompact", cline("PreCompact", taskId=cli.name))["transcript_path"] == str(cli)
    assert "transcript_path" not in adapt_cline("precompact", cline("PreCompact", taskId="../1765030990000"))
    assert "transcript_path" not in adapt_cline("session-end", cline("TaskCancel", taskId="no-such-task"))
    prompt = adapt_cline("prompt", cline("UserPromptSubmit", userPromptSubmit={"prompt": "hola", "attachments": []}))
    assert (prompt["prompt"], prompt["cwd"], prompt["session_id"]) == ("hola", SHORT_CWD, "1765030990000")


@pytest.mark.timeout(240)
def test_cline_hooks_fail_open_with_the_no_op_answer(live: Daemon, tmp_path: Path) -> None:  # noqa: F811
    for raw in ("{broken", "[1, 2]", "", json.dumps(cline("UserPromptSubmit", userPromptSubmit="not an object"))):
        res, _ = hook(live.env, "prompt", raw, "--agent", "cline")
        assert noop(res), (raw, res.stderr)
    # the daemon down: its socket's folder elsewhere
    down = {**live.env, "MEMPAL_RUNTIME_DIR": str(tmp_path / "nowhere")}
    for verb in ("prompt", "session-start", "precompact", "session-end"):
        res, dt = hook(down, verb, cline("UserPromptSubmit", userPromptSubmit={"prompt": RELEVANT}), "--agent",
                       "cline")
        assert noop(res) and res.stderr == "" and dt < 5.0, (verb, res.stderr)
