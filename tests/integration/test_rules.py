"""Rules that hold, end to end: the real ``mempal rule`` commands against a real daemon (real socket, store,
state database and model), the real hook process answering PreToolUse, suggestions from a real transcript,
export / import, backup, and the hook failing open when the daemon is down, hung or answers garbage."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempal.paths import socket_path
from tests.conftest import REPO, Daemon, mempal_cli
from tests.integration.test_hooks import hook, make_env
from tests.integration.test_skeleton import assistant_line, user_line

CWD = "/home/u/projects/spotter"
SESSION = "7d1c2a40-0b1e-4c7e-9f5e-2b8f6a1c0d11"
PUSH = r"git\s+push\b.*\bmain\b"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon for the module; its Claude Code folder holds one session whose user said an always/never."""
    root = tmp_path_factory.mktemp("rules")
    runtime = Path(tempfile.mkdtemp(prefix="mp-"))
    env = make_env(root, runtime)
    proj = Path(env["HOME"]) / ".claude" / "projects" / "-home-u-projects-spotter"
    proj.mkdir()
    lines = [
        user_line(SESSION, CWD, "Set up the release script. Always use pnpm, not npm.", "u1", "2026-11-02T10:00:00Z"),
        assistant_line(SESSION, CWD, "Done: the script calls pnpm build. Never use npm here, noted.", "a1", "u1",
                       "2026-11-02T10:00:05Z"),
        user_line(SESSION, CWD, "Thanks. One more thing: never push to main without running the tests.", "u2",
                  "2026-11-02T10:01:00Z"),
        assistant_line(SESSION, CWD, "Understood, I will run the tests before any push to main.", "a2", "u2",
                       "2026-11-02T10:01:04Z"),
    ]
    (proj / f"{SESSION}.jsonl").write_text("\n".join(lines) + "\n")
    d = Daemon(env, root / "mempald.log").start()
    d.idle()
    yield d
    d.kill()
    shutil.rmtree(runtime, ignore_errors=True)


def cli(d: Daemon, *args: str) -> Any:
    out = mempal_cli(d.env, *args)
    assert out.returncode == 0, out.stderr
    return out


def pre_tool(tool: str, tool_input: dict[str, Any], cwd: str = CWD) -> dict[str, Any]:
    return {"session_id": "s-1", "transcript_path": "/nonexistent/x.jsonl", "cwd": cwd,
            "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
            "tool_input": tool_input, "tool_use_id": "toolu_1"}


def decision(env: dict[str, str], payload: dict[str, Any], *args: str) -> dict[str, Any] | None:
    res, _ = hook(env, "rule", payload, *args)
    assert res.returncode == 0, res.stderr
    if not res.stdout.strip():
        return None
    out: dict[str, Any] = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and set(out) == {"hookEventName", "permissionDecision",
                                                                 "permissionDecisionReason"}
    return out


def remove_all(d: Daemon) -> None:
    for r in d.call("rule_list")["rules"]:
        d.call("rule_remove", {"rule_id": r["id"]})


# the commands --------------------------------------------------------------------------------------------------
def test_add_list_test_and_remove_through_the_cli(live: Daemon) -> None:
    remove_all(live)
    out = cli(live, "rule", "add", "never push to main", "--tool", "Bash", "--match", PUSH, "--decision", "deny",
              "--json")
    rule = json.loads(out.stdout)["rule"]
    assert (rule["tool"], rule["pattern"], rule["decision"], rule["wing"], rule["source"]) == (
        "Bash", PUSH, "deny", "", "user")
    listed = cli(live, "rule", "list").stdout
    assert rule["id"] in listed and "never push to main" in listed and "every wing" in listed
    fired = json.loads(cli(live, "rule", "test", "git push origin main", "--json").stdout)
    assert fired["fires"] and fired["decision"] == "deny" and fired["rule"]["id"] == rule["id"]
    assert rule["id"] in fired["reason"] and "never push to main" in fired["reason"]
    assert "no rule fires" in cli(live, "rule", "test", "git push origin feature").stdout
    assert "deny: mempal rule" in cli(live, "rule", "test", "git push origin main").stdout
    cli(live, "rule", "remove", rule["id"])
    assert "no rules" in cli(live, "rule", "list").stdout
    gone = mempal_cli(live.env, "rule", "remove", rule["id"])
    assert gone.returncode != 0 and "no rule" in gone.stderr


@pytest.mark.parametrize(("match", "why"), [
    ("(unclosed", "not a valid regular expression"),
    ("(a+)+$", "catastrophic backtracking"),
    ("(.*)*", "catastrophic backtracking"),
    ("(a|a)*", "catastrophic backtracking"),
    (".*", "matches every command"),
])
def test_bad_patterns_are_refused_with_a_clear_error_and_nothing_is_kept(live: Daemon, match: str, why: str) -> None:
    remove_all(live)
    out = mempal_cli(live.env, "rule", "add", "a bad one", "--match", match)
    assert out.returncode != 0 and why in out.stderr, out.stderr
    assert live.call("rule_list")["rules"] == []
    audit = live.call("audit", {"limit": 5})
    assert not any(e["action"] == "rule_add" and e["reason"] == "a bad one" for e in audit.get("entries", []))


def test_a_rule_matching_everything_is_kept_with_force(live: Daemon) -> None:
    remove_all(live)
    out = cli(live, "rule", "add", "ask before every shell command", "--match", ".*", "--force", "--json")
    rule = json.loads(out.stdout)["rule"]
    assert rule["forced"] is True
    assert json.loads(cli(live, "rule", "test", "ls", "--json").stdout)["decision"] == "ask"
    remove_all(live)


# the hook ------------------------------------------------------------------------------------------------------
def test_the_hook_answers_the_hosts_decision_through_a_real_daemon(live: Daemon) -> None:
    remove_all(live)
    deny = live.call("rule_add", {"text": "never push to main", "match": PUSH, "decision": "deny"})["rule"]
    ask = live.call("rule_add", {"text": "ask before a migration", "match": "migrat", "wing": "spotter"})["rule"]
    files = live.call("rule_add", {"text": "never edit .env files", "tool": "Edit|Write", "match": r"\.env$",
                                   "decision": "deny"})["rule"]
    env = live.env

    out = decision(env, pre_tool("Bash", {"command": "git push origin main", "description": "push"}))
    assert out is not None and out["permissionDecision"] == "deny"
    assert deny["id"] in out["permissionDecisionReason"] and "never push to main" in out["permissionDecisionReason"]
    assert "added by the user" in out["permissionDecisionReason"]

    out = decision(env, pre_tool("Bash", {"command": "python manage.py migrate"}))
    assert out is not None and out["permissionDecision"] == "ask" and ask["id"] in out["permissionDecisionReason"]
    assert decision(env, pre_tool("Bash", {"command": "python manage.py migrate"}, cwd="/home/u/projects/other")) \
        is None  # a wing's rule holds in that wing only
    out = decision(env, pre_tool("Write", {"file_path": "/home/u/projects/spotter/.env", "content": "X=1"}))
    assert out is not None and out["permissionDecision"] == "deny" and files["id"] in out["permissionDecisionReason"]
    assert decision(env, pre_tool("Read", {"file_path": "/home/u/projects/spotter/.env"})) is None
    big = {"file_path": "/home/u/projects/spotter/.env", "content": "SECRET=1\n" * 300_000}  # 2.7 MB
    out = decision(env, pre_tool("Write", big))  # only what is matched crosses the socket: the rule holds
    assert out is not None and out["permissionDecision"] == "deny"
    assert decision(env, pre_tool("Bash", {"command": "git status"})) is None  # no match: nothing printed

    # Codex: deny is honoured, ask is not (its PreToolUse cannot ask): nothing printed for an ask
    out = decision(env, pre_tool("Bash", {"command": "git push origin main"}), "--agent", "codex")
    assert out is not None and out["permissionDecision"] == "deny"
    assert decision(env, pre_tool("Bash", {"command": "python manage.py migrate"}), "--agent", "codex") is None
    remove_all(live)


def test_bad_hook_input_prints_nothing(live: Daemon) -> None:
    live.call("rule_add", {"text": "never push to main", "match": PUSH, "decision": "deny"})
    for payload in ("", "not json", "[1, 2]", json.dumps({"tool_name": 7, "tool_input": {}}),
                    json.dumps({"tool_name": "Bash"}), json.dumps(pre_tool("Bash", {"command": "x" * 300_000}))):
        res, _ = hook(live.env, "rule", payload)
        assert res.returncode == 0 and res.stdout == "", (payload[:40], res.stdout)
    remove_all(live)


# suggestions ---------------------------------------------------------------------------------------------------
def test_suggestions_cite_the_drawer_and_block_nothing_until_accepted(live: Daemon) -> None:
    remove_all(live)
    out = json.loads(cli(live, "rule", "suggestions", "--json").stdout)
    by_sentence = {s["sentence"]: s for s in out["suggestions"]}
    assert set(by_sentence) == {"Always use pnpm, not npm.",
                                "One more thing: never push to main without running the tests."}, by_sentence
    push = by_sentence["One more thing: never push to main without running the tests."]
    assert (push["pattern"], push["decision"], push["wing"]) == (PUSH, "ask", "spotter")
    drawer = live.call("get", {"drawer_id": [push["drawer_id"]]})["drawers"][0]
    assert "never push to main" in drawer["text"]  # the cited drawer holds the sentence
    assert "Never use npm here" not in {s["sentence"] for s in out["suggestions"]}  # the answer is not the user's
    assert decision(live.env, pre_tool("Bash", {"command": "git push origin main"})) is None  # not yet a rule

    again = json.loads(cli(live, "rule", "suggestions", "--json").stdout)
    assert again["new"] == 0 and again["count"] == 2  # found again: nothing new

    acc = json.loads(cli(live, "rule", "accept", push["id"], "--decision", "deny", "--json").stdout)
    assert acc["rule"]["decision"] == "deny" and acc["rule"]["drawer_id"] == push["drawer_id"]
    out = decision(live.env, pre_tool("Bash", {"command": "git push origin main"}))
    assert out is not None and out["permissionDecision"] == "deny"
    assert f"accepted from drawer {push['drawer_id'][:8]}" in out["permissionDecisionReason"]
    assert [s["id"] for s in live.call("rule_suggestions", {"scan": False})["suggestions"]] == [
        by_sentence["Always use pnpm, not npm."]["id"]]
    cli(live, "rule", "dismiss", by_sentence["Always use pnpm, not npm."]["id"])
    assert live.call("rule_suggestions", {"scan": True})["count"] == 0
    twice = mempal_cli(live.env, "rule", "accept", push["id"])
    assert twice.returncode != 0 and "already accepted" in twice.stderr
    remove_all(live)


# your data -----------------------------------------------------------------------------------------------------
def test_rules_travel_in_an_export_and_come_back_with_an_import(live: Daemon, tmp_path: Path) -> None:
    remove_all(live)
    kept = [live.call("rule_add", {"text": "never push to main", "match": PUSH, "decision": "deny"})["rule"],
            live.call("rule_add", {"text": "ask on sudo", "match": r"\bsudo\b", "wing": "spotter"})["rule"]]
    target = tmp_path / "out" / "palace.jsonl"
    res = live.call("export", {"output": str(target), "format": "jsonl"})
    assert res["rules"] == 2
    rule_lines = [json.loads(x) for x in target.read_text().splitlines() if x.startswith('{"mempal_rule"')]
    assert sorted(r["id"] for r in rule_lines) == sorted(r["id"] for r in kept)

    remove_all(live)
    dry = live.call("import_drawers", {"path": str(target), "dry_run": True})
    assert dry["rules"]["added"] == 2 and live.call("rule_list")["count"] == 0
    back = live.call("import_drawers", {"path": str(target)})
    assert back["rules"] == {"added": 2, "replaced": 0, "unchanged": 0} and back["bad"] == 0
    assert sorted(live.call("rule_list")["rules"], key=lambda r: r["id"]) == sorted(kept, key=lambda r: r["id"])
    assert decision(live.env, pre_tool("Bash", {"command": "git push origin main"}))  # enforced again at once
    assert live.call("import_drawers", {"path": str(target)})["rules"]["unchanged"] == 2

    # a rule line that may not be kept (catastrophic) is a bad line: counted and named, the rest imported
    bad = tmp_path / "bad.jsonl"
    bad.write_text(target.read_text() + json.dumps({"mempal_rule": 1, **kept[0], "id": "rbad00001",
                                                    "pattern": "(a+)+"}) + "\n")
    res = live.call("import_drawers", {"path": str(bad)})
    assert res["bad"] == 1 and "rbad00001" in res["bad_lines"][0] and "catastrophic" in res["bad_lines"][0]
    remove_all(live)


def test_a_backup_holds_the_rules(live: Daemon, tmp_path: Path) -> None:
    remove_all(live)
    rule = live.call("rule_add", {"text": "never push to main", "match": PUSH, "decision": "deny"})["rule"]
    res = live.call("backup", {"path": str(tmp_path / "bk")})
    db = sqlite3.connect(Path(res["path"]) / "state.sqlite3")
    try:
        rows = db.execute("SELECT id, pattern, decision FROM rules").fetchall()
    finally:
        db.close()
    assert rows == [(rule["id"], PUSH, "deny")]
    remove_all(live)


# failing open --------------------------------------------------------------------------------------------------
def test_the_hook_fails_open_with_no_daemon(tmp_path: Path) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="mp-"))
    try:
        env = make_env(tmp_path, runtime)
        res, dt = hook(env, "rule", pre_tool("Bash", {"command": "git push origin main"}))
        assert res.returncode == 0 and res.stdout == "" and dt < 5
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def test_the_hook_fails_open_on_a_daemon_answering_garbage(tmp_path: Path) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="mp-"))
    env = make_env(tmp_path, runtime)
    path = socket_path(env)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    served: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    served.append(conn.recv(65536))
                    conn.sendall(b'{"jsonrpc": "2.0", "id": 1, "result": {"decision": "deny"\n\x00\xffnot json\n')
                except OSError:
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        for garbage in range(2):
            res, dt = hook(env, "rule", pre_tool("Bash", {"command": f"git push origin main {garbage}"}))
            assert res.returncode == 0 and res.stdout == "" and dt < 5, res.stdout
        assert served  # the hook did reach the garbage
    finally:
        stop.set()
        t.join(5)
        server.close()
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.mark.timeout(120)
def test_the_hook_fails_open_on_a_hung_daemon_then_holds_again(live: Daemon) -> None:
    remove_all(live)
    live.call("rule_add", {"text": "never push to main", "match": PUSH, "decision": "deny"})
    assert live.proc is not None
    os.kill(live.proc.pid, signal.SIGSTOP)
    try:
        res, dt = hook(live.env, "rule", pre_tool("Bash", {"command": "git push origin main"}))
        assert res.returncode == 0 and res.stdout == "" and dt < 4, (res.stdout, dt)
    finally:
        os.kill(live.proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + 30
    while decision(live.env, pre_tool("Bash", {"command": "git push origin main"})) is None:
        assert time.monotonic() < deadline, "the hook never held the rule again after the daemon resumed"
        time.sleep(0.2)
    remove_all(live)


# the viewer and the MCP tool -------------------------------------------------------------------------------------
@pytest.mark.timeout(180)
def test_the_viewer_lists_the_rules_and_the_waiting_suggestions(live: Daemon) -> None:
    from tests.integration.test_viewer_security import Viewer

    remove_all(live)
    rule = live.call("rule_add", {"text": "never <b>push</b> to main", "match": PUSH, "decision": "deny"})["rule"]
    live.call("rule_suggestions", {"scan": True, "status": "pending"})
    viewer = Viewer(live.env)
    try:
        page = viewer.get("/rules")
    finally:
        viewer.stop()
    assert page.status == 200
    assert rule["id"] in page.text and "never &lt;b&gt;push&lt;/b&gt; to main" in page.text
    assert "<b>push" not in page.text  # escaped like every memory text
    pending = live.call("rule_suggestions", {"scan": False})["suggestions"]
    assert pending and all(s["id"] in page.text for s in pending)  # waiting, cited, not enforced
    assert 'href="/rules"' in page.text or "/rules" in page.text
    remove_all(live)


def test_the_mcp_rules_tool_is_read_only_and_lists_them(live: Daemon) -> None:
    from mempal.mcp_tools import offered

    (spec,) = [t for t in offered(read_only=True) if t.name == "rules"]
    assert spec.annotations()["readOnlyHint"] is True
    remove_all(live)
    rule = live.call("rule_add", {"text": "never push to main", "match": PUSH, "decision": "deny"})["rule"]
    code = ("import json\nfrom mempal.mcp_server import caller_from, run_tool\n"
            "print(json.dumps(run_tool('rules', {}, caller_from('claude-code'), read_only=True)))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**live.env, "PYTHONPATH": str(REPO)}, cwd=REPO)
    assert res.returncode == 0, res.stderr
    text, error = json.loads(res.stdout)
    assert not error and rule["id"] in text and "never push to main" in text
    remove_all(live)
