"""Cline, Roo Code and Kilo Code, live: the real daemon on a home laid out as VS Code and Cursor lay it out (task
folders under ``~/.config/<editor>/User/globalStorage/<extension id>/tasks/``), found with no watch configured,
a task that gains a message stores only the new exchange, found by search (``--agent``) and by the prompt hook;
the extension's rewrites (a streamed answer rewritten again and again, a half-written file, a folder deleted)
never duplicate, lose or crash anything."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, Daemon

SAMPLES = REPO / "tests" / "fixtures" / "cline"
CLINE_TASK = SAMPLES / "cline_vscode_task" / "1773478931000"
ROO_TASK = SAMPLES / "roo_parent_task" / "0195f3a0-1c2d-7e3f-8a9b-0c1d2e3f4a5b"


def _tasks(home: Path, editor: str, ext: str) -> Path:
    return home / ".config" / editor / "User" / "globalStorage" / ext / "tasks"


def _hits(daemon: Daemon, query: str, **filters: Any) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = daemon.call("search", {"query": query, "limit": 20, "min_score": 0, **filters})["hits"]
    return hits


def _drawers(daemon: Daemon, session: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = daemon.call("drawers", {"session_id": [session], "limit": 1000})["drawers"]
    return items


def _write(path: Path, messages: list[dict[str, Any]], **dump: Any) -> None:
    """As the extension writes it: the whole array again, in place."""
    path.write_text(json.dumps(messages, ensure_ascii=False, **dump))


@pytest.mark.timeout(600)
def test_a_task_is_found_where_the_editor_keeps_it_and_a_new_message_stores_only_its_exchange(
        daemon: Daemon, home: Path) -> None:
    cline_task = _tasks(home, "Code", "saoudrizwan.claude-dev") / CLINE_TASK.name
    roo_task = _tasks(home, "Cursor", "rooveterinaryinc.roo-cline") / ROO_TASK.name
    shutil.copytree(CLINE_TASK, cline_task)
    shutil.copytree(ROO_TASK, roo_task)
    ui_path = cline_task / "ui_messages.json"
    ui: list[dict[str, Any]] = json.loads(ui_path.read_text())
    daemon.start()
    daemon.idle()

    hit = daemon.wait_for(lambda: [h for h in _hits(daemon, "Decimal ROUND_HALF_EVEN invoice totals", agent=["cline"])
                                   if h.get("session_id") == CLINE_TASK.name])[0]
    assert hit["wing"] == "ledgerly"
    roo = daemon.wait_for(lambda: _hits(daemon, "Переведи все строки корзины на русский", agent=["roo"]))
    assert roo[0]["wing"] == "shop-frontend" and roo[0]["session_id"] == ROO_TASK.name
    assert not _hits(daemon, "Переведи все строки корзины на русский", agent=["kilo"])
    agents = {(a["agent"], a["path"]): a for a in daemon.call("status")["agents"]}
    seen = agents[("Cline", str(cline_task.parent))]
    assert seen["found"] and seen["watched"] and seen["exchanges"] == 3
    assert agents[("Roo Code", str(roo_task.parent))]["watched"]
    assert not agents[("Kilo Code", str(_tasks(home, "Code", "kilocode.kilo-code")))]["found"]
    # inspect reads the task folder as its unit: every message accounted for
    report = daemon.call("inspect", {"path": str(cline_task), "counts_only": True})
    assert report["format"] == "cline" and report["records"] == len(ui) + 2  # + the two files beside it
    assert report["accounted"]["stored"] == 8 and report["accounted"]["skipped: reasoning"] == 1
    before = _drawers(daemon, CLINE_TASK.name)
    assert len(before) == 3
    ids = {d["drawer_id"] for d in before}

    # the user types a follow-up; the extension rewrites the array with it, then streams the answer in place
    t = ui[-1]["ts"] + 60_000
    word = "zqkestrelmargin"
    ui.append({"ts": t, "type": "say", "say": "user_feedback", "text": f"Also round the {word} discount line "
               "half-even before the VAT is added.", "images": [], "files": []})
    ui.append({"ts": t + 300, "type": "say", "say": "api_req_started", "text": json.dumps({"request": "<feedback>"})})
    t0 = time.monotonic()
    _write(ui_path, ui)
    found = daemon.wait_for(lambda: [h for h in _hits(daemon, word) if word in h.get("text", "")], timeout=60,
                            interval=0.05)
    fresh = time.monotonic() - t0
    assert [(h["session_id"], h["agent"]) for h in found] == [(CLINE_TASK.name, "cline")]
    answer = {"ts": t + 900, "type": "say", "say": "text", "text": "", "partial": True}
    ui.append(answer)
    full = "The discount line now quantizes half-even before VAT; the margin report matches the ledger again."
    for i in range(1, 101):  # 100 rewrites of the same task while the answer streams
        answer["text"] = full[: len(full) * i // 100]
        answer["partial"] = i < 100
        _write(ui_path, ui, indent=None if i % 2 else 2)
    daemon.idle()
    daemon.wait_for(lambda: any("margin report matches the ledger" in str(h.get("text", "")) for h in _hits(
        daemon, f"{word} discount line half-even VAT")))
    after = _drawers(daemon, CLINE_TASK.name)
    assert len(after) == 4, "one new exchange, no duplicate after 100 rewrites"
    assert ids <= {d["drawer_id"] for d in after}, "earlier drawers kept"
    print(f"cline freshness: keyword hit {fresh * 1000:.0f} ms after the rewrite")

    # found by the prompt hook too, in the project's wing
    payload = {"session_id": "claude-1", "transcript_path": "/nonexistent/x.jsonl",
               "cwd": "/home/dev/projects/ledgerly", "permission_mode": "default",
               "hook_event_name": "UserPromptSubmit",
               "prompt": f"how did we round the {word} discount line before VAT?"}
    res = subprocess.run([sys.executable, "-m", "mempal.hook", "prompt"], input=json.dumps(payload),
                         capture_output=True, text=True, env={**daemon.env, "PYTHONPATH": str(REPO)}, cwd=REPO,
                         timeout=60)
    assert res.returncode == 0 and word in res.stdout, res.stdout + res.stderr

    # a half-written array (the extension mid-write): nothing lost, read again once whole
    raw = json.dumps(ui).encode()
    ui_path.write_bytes(raw[: len(raw) // 2])
    daemon.idle()
    assert len(_drawers(daemon, CLINE_TASK.name)) == 4
    ui_path.write_bytes(raw)
    daemon.idle()
    assert len(_drawers(daemon, CLINE_TASK.name)) == 4

    # a task folder deleted while the daemon reads: no crash, its drawers stay searchable
    shutil.rmtree(roo_task)
    daemon.idle()
    assert daemon.call("ping")
    assert _hits(daemon, "Переведи все строки корзины на русский", agent=["roo"])


@pytest.mark.timeout(600)
def test_a_cline_4_session_is_found_in_its_sdk_store_and_a_new_prompt_stores_only_its_exchange(
        daemon: Daemon, home: Path) -> None:
    sdk = SAMPLES / "cline_sdk_session" / "1781203311842_k3f9q"
    sessions = home / ".cline" / "data" / "sessions"
    session = sessions / sdk.name
    shutil.copytree(sdk, session)
    (sessions / "sessions.index.json").write_text(json.dumps({"version": 1, "sessions": [sdk.name]}))
    messages_path = session / f"{sdk.name}.messages.json"
    root: dict[str, Any] = json.loads(messages_path.read_text())
    daemon.start()
    daemon.idle()
    hits = daemon.wait_for(lambda: [h for h in _hits(daemon, "Warteschlange verliert Tickets beim Neustart",
                                                     agent=["cline"]) if h.get("session_id") == sdk.name])
    assert hits[0]["wing"] == "ticketing"
    assert len(_drawers(daemon, sdk.name)) == 2
    word = "zqheronbacklog"
    root["messages"] += [
        {"role": "user", "content": [{"type": "text", "text": f'<user_input mode="act">Also drain the {word} '
                                                             "queue before the flush.</user_input>"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "The backlog queue is drained first now."}]}]
    messages_path.write_text(json.dumps(root, indent=2))  # the SDK writes the whole file again
    found = daemon.wait_for(lambda: [h for h in _hits(daemon, word) if word in h.get("text", "")], timeout=60)
    assert [(h["session_id"], h["agent"]) for h in found] == [(sdk.name, "cline")]
    for indent in (None, 2, 4):  # rewritten again, unchanged: nothing new, nothing twice
        messages_path.write_text(json.dumps(root, indent=indent))
    daemon.idle()
    assert len(_drawers(daemon, sdk.name)) == 3
