"""install-mcp / install-hooks / uninstall-hooks --agent gemini|antigravity on a temp home: the CLIs' own files,
every other setting kept, idempotent, reversible, --dry-run writes nothing, a broken file is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mempal import install
from tests.unit.client.test_install import mempal

GEMINI_EVENTS = {"SessionStart": "session-start", "BeforeAgent": "prompt", "AfterAgent": "stop",
                 "PreCompress": "precompact", "SessionEnd": "session-end"}
ANTIGRAVITY_EVENTS = {"PreInvocation": "prompt", "Stop": "stop"}  # the events agy has (no session start)
GEMINI_THEIRS: dict[str, Any] = {
    "general": {"vimMode": True, "preferredEditor": "code"},
    "security": {"auth": {"selectedType": "oauth-personal"}},
    "mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}},
    "hooks": {"BeforeTool": [{"matcher": "run_shell_command",
                              "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5000}]}],
              "SessionStart": [{"hooks": [{"type": "command", "name": "greet", "command": "echo hi"}]}]},
}
ANTIGRAVITY_THEIRS: dict[str, Any] = {
    "safety-gate": {"PreToolUse": [{"matcher": "run_command", "hooks": [{"command": "./scripts/safety-check.sh"}]}]},
    "reminder": {"enabled": False, "PreInvocation": [{"type": "command", "command": "./scripts/reminder.sh"}]},
}


def _write(path: Path, data: Any) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=4) + "\n"
    path.write_text(text)
    return text


def _handlers(config: dict[str, Any], events: dict[str, str]) -> dict[str, dict[str, Any]]:
    table = config.get("hooks", {})
    return {event: h for event in events for g in table.get(event, []) for h in g["hooks"] if install.is_ours(h)}


def test_gemini_hooks_merge_into_settings_keep_the_rest_and_come_out_exactly(home: Path) -> None:
    settings = home / ".gemini" / "settings.json"
    original = _write(settings, GEMINI_THEIRS)
    dry = mempal("install-hooks", "--agent", "gemini", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert settings.read_text() == original  # --dry-run writes nothing
    shown = json.loads(dry.stdout)
    ours = _handlers(shown, GEMINI_EVENTS)
    assert set(ours) == set(GEMINI_EVENTS)
    for event, handler in ours.items():
        assert handler["command"].endswith(f" {GEMINI_EVENTS[event]} --agent gemini"), handler
        assert handler["type"] == "command" and 1000 <= handler["timeout"] <= 60000  # milliseconds
    res = mempal("install-hooks", "--agent", "gemini")
    assert res.returncode == 0, res.stderr
    after = json.loads(settings.read_text())
    assert after == shown
    for key in ("general", "security", "mcpServers"):
        assert after[key] == GEMINI_THEIRS[key]
    assert after["hooks"]["BeforeTool"] == GEMINI_THEIRS["hooks"]["BeforeTool"]
    assert after["hooks"]["SessionStart"][0] == GEMINI_THEIRS["hooks"]["SessionStart"][0]  # theirs first, kept
    backups = sorted(settings.parent.glob("settings.json.bak-*"))
    assert len(backups) == 1 and backups[0].read_text() == original
    again = mempal("install-hooks", "--agent", "gemini")
    assert "already up to date" in again.stderr and json.loads(settings.read_text()) == after
    assert len(list(settings.parent.glob("settings.json.bak-*"))) == 1
    gone = mempal("uninstall-hooks", "--agent", "gemini")
    assert gone.returncode == 0, gone.stderr
    assert json.loads(settings.read_text()) == GEMINI_THEIRS


def test_gemini_mcp_server_joins_the_others(home: Path, monkeypatch: Any) -> None:
    elsewhere = home / "gemini-home"
    monkeypatch.setenv("GEMINI_CLI_HOME", str(elsewhere))  # the CLI's own override of where ~/.gemini is
    settings = elsewhere / ".gemini" / "settings.json"
    _write(settings, GEMINI_THEIRS)
    res = mempal("install-mcp", "--agent", "gemini")
    assert res.returncode == 0, res.stderr
    after = json.loads(settings.read_text())
    assert after["mcpServers"]["github"] == GEMINI_THEIRS["mcpServers"]["github"]
    server = after["mcpServers"]["mempal"]
    assert "mcp" in " ".join([server["command"], *server["args"]]) and "type" not in server
    assert {k: v for k, v in after.items() if k != "mcpServers"} == \
        {k: v for k, v in GEMINI_THEIRS.items() if k != "mcpServers"}
    assert not (home / ".claude.json").exists()  # Claude Code's file is not touched


def test_antigravity_hooks_are_one_named_entry_beside_theirs(home: Path) -> None:
    hooks = home / ".gemini" / "config" / "hooks.json"
    _write(hooks, ANTIGRAVITY_THEIRS)
    res = mempal("install-hooks", "--agent", "antigravity")
    assert res.returncode == 0, res.stderr
    after = json.loads(hooks.read_text())
    assert {k: v for k, v in after.items() if k != "mempal"} == ANTIGRAVITY_THEIRS
    entry = after["mempal"]
    assert set(entry) == set(ANTIGRAVITY_EVENTS)
    for event, (handler,) in entry.items():
        verb = ANTIGRAVITY_EVENTS[event]
        assert install.is_ours(handler) and handler["command"].endswith(f" {verb} --agent antigravity")
        assert 1 <= handler["timeout"] <= 60  # seconds
    assert "already up to date" in mempal("install-hooks", "--agent", "antigravity").stderr
    assert mempal("uninstall-hooks", "--agent", "antigravity").returncode == 0
    assert json.loads(hooks.read_text()) == ANTIGRAVITY_THEIRS


def test_antigravity_mcp_and_a_fresh_home(home: Path) -> None:
    res = mempal("install-mcp", "--agent", "antigravity")
    assert res.returncode == 0, res.stderr
    config = json.loads((home / ".gemini" / "config" / "mcp_config.json").read_text())
    assert set(config) == {"mcpServers"} and set(config["mcpServers"]) == {"mempal"}
    assert mempal("uninstall-hooks", "--agent", "antigravity").stderr.startswith("mempal hooks: nothing installed")
    res = mempal("install-hooks", "--agent", "antigravity")
    assert res.returncode == 0 and set(json.loads((home / ".gemini" / "config" / "hooks.json").read_text())) == \
        {"mempal"}


def test_broken_or_foreign_files_are_refused_and_left_alone(home: Path) -> None:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"general": {"vimMode": true},')  # half-written by the CLI
    for args in (("install-hooks", "--agent", "gemini"), ("install-mcp", "--agent", "gemini")):
        res = mempal(*args)
        assert res.returncode == 1 and "not valid JSON" in res.stderr and "nothing was changed" in res.stderr
    assert settings.read_text() == '{"general": {"vimMode": true},'
    hooks = home / ".gemini" / "config" / "hooks.json"
    text = _write(hooks, {"mempal": {"Stop": [{"type": "command", "command": "someone-elses-tool"}]}})
    res = mempal("install-hooks", "--agent", "antigravity")
    assert res.returncode == 1 and "not mempal's" in res.stderr
    assert mempal("uninstall-hooks", "--agent", "antigravity").returncode == 0
    assert hooks.read_text() == text


def test_gemini_hooks_turned_off_in_the_settings_are_named(home: Path) -> None:
    settings = home / ".gemini" / "settings.json"
    _write(settings, {"hooksConfig": {"enabled": False, "disabled": ["mempal-prompt", "theirs"]}})
    res = mempal("install-hooks", "--agent", "gemini")
    assert res.returncode == 0, res.stderr
    assert '"hooksConfig": {"enabled": false}' in res.stderr and "turns off mempal-prompt" in res.stderr
    after = json.loads(settings.read_text())
    assert after["hooksConfig"] == {"enabled": False, "disabled": ["mempal-prompt", "theirs"]}  # theirs to change
    assert set(_handlers(after, GEMINI_EVENTS)) == set(GEMINI_EVENTS)
    quiet = mempal("install-hooks", "--agent", "gemini")
    assert "warning" in quiet.stderr  # said again while it holds
    _write(settings, {"hooksConfig": {"enabled": True}})
    assert "warning" not in mempal("install-hooks", "--agent", "gemini").stderr
