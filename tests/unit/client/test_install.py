"""install-hooks / uninstall-hooks / install-mcp: correct, idempotent, non-destructive, reversible."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mempal import install
from tests.conftest import REPO

CODEX_EVENTS = {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "PreToolUse"}  # PreToolUse: rules only
# the file gate is for Claude Code's file tools only; PostCompact is Claude Code's own event
EVENTS = {*CODEX_EVENTS, "PostCompact"}
VERBS = {"SessionStart": ("session-start",), "UserPromptSubmit": ("prompt",), "Stop": ("stop",),
         "PreCompact": ("precompact",), "PostCompact": ("postcompact",), "PreToolUse": ("file", "rule")}
THEIRS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


def mempal(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    code = "import sys\nfrom mempal.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=dict(os.environ),
                          cwd=cwd or REPO, timeout=60)


def ours(settings: dict[str, Any]) -> list[str]:
    return [h["command"] for groups in settings.get("hooks", {}).values() for g in groups for h in g["hooks"]
            if install.is_ours(h)]


def ns(**kw: Any) -> argparse.Namespace:
    base = {"scope": "user", "codex": False, "dry_run": False}
    base.update(kw)
    return argparse.Namespace(**base)


def test_dry_run_prints_a_correct_settings_json(home: Path) -> None:
    out = mempal("install-hooks", "--dry-run")
    assert out.returncode == 0, out.stderr
    settings = json.loads(out.stdout)
    assert set(settings["hooks"]) == EVENTS
    for event, groups in settings["hooks"].items():
        assert len(groups) == (2 if event == "PreToolUse" else 1)  # the file gate and the rules
        for group, verb in zip(groups, VERBS[event], strict=True):
            (handler,) = group["hooks"]
            assert handler["type"] == "command"
            assert isinstance(handler["timeout"], int) and 0 < handler["timeout"] <= 120
            assert install.is_ours(handler)
            assert handler["command"].endswith(f" {verb}")
    # every source Claude Code's current hooks reference lists
    assert settings["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear|compact|fork"
    assert settings["hooks"]["PreCompact"][0]["matcher"] == "manual|auto"
    assert settings["hooks"]["PostCompact"][0]["matcher"] == "manual|auto"
    assert settings["hooks"]["PreToolUse"][0]["matcher"] == "Read|Edit|Write|MultiEdit|NotebookEdit"
    assert settings["hooks"]["PreToolUse"][1]["matcher"] == "*"  # a rule may name any tool
    assert settings["hooks"]["PreCompact"][0]["hooks"][0]["timeout"] <= 5  # compaction never waits
    assert "UserPromptSubmit" in out.stdout and not (home / ".claude" / "settings.json").exists()


def test_installed_commands_run(home: Path) -> None:
    """The command written into settings.json actually starts the hook (and fails open: no daemon)."""
    install.cmd_install_hooks(ns())
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    cmd = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run(cmd, shell=True, input='{"prompt": "hello there world", "cwd": "/tmp"}', text=True,
                         capture_output=True, env=env, timeout=30)
    assert res.returncode == 0 and res.stdout == ""


def test_install_merges_idempotently_with_a_backup(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(THEIRS, indent=4))
    original = path.read_text()

    assert install.cmd_install_hooks(ns()) == 0
    merged = json.loads(path.read_text())
    backups = sorted(path.parent.glob("settings.json.bak-*"))
    assert len(backups) == 1 and backups[0].read_text() == original
    # theirs untouched
    assert merged["permissions"] == THEIRS["permissions"]
    assert merged["hooks"]["PreToolUse"][0] == THEIRS["hooks"]["PreToolUse"][0]
    assert merged["hooks"]["Stop"][0] == THEIRS["hooks"]["Stop"][0]
    assert len(ours(merged)) == 7  # six events, PreToolUse twice (the file gate, the rules)

    # re-running changes nothing: same bytes, no new backup
    after_first = path.read_text()
    assert install.cmd_install_hooks(ns()) == 0
    assert path.read_text() == after_first
    assert len(list(path.parent.glob("settings.json.bak-*"))) == 1


def test_reinstall_replaces_a_stale_entry_in_place(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    stale = {"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": "/old/venv/bin/mempal-hook prompt", "timeout": 3},
                   {"type": "command", "command": "their-prompt-hook"}]}]}}
    path.write_text(json.dumps(stale))
    install.cmd_install_hooks(ns())
    merged = json.loads(path.read_text())
    groups = merged["hooks"]["UserPromptSubmit"]
    assert groups[0]["hooks"] == [{"type": "command", "command": "their-prompt-hook"}]
    assert len([c for c in ours(merged) if "/old/venv" in c]) == 0
    assert len(ours(merged)) == 7  # six events, PreToolUse twice (the file gate, the rules)


def test_uninstall_removes_exactly_what_install_added(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(THEIRS))
    install.cmd_install_hooks(ns())
    assert install.cmd_uninstall_hooks(ns()) == 0
    assert json.loads(path.read_text()) == THEIRS
    # a second uninstall is a no-op
    before = path.read_text()
    install.cmd_uninstall_hooks(ns())
    assert path.read_text() == before

    # on a file that had nothing else, uninstall leaves an empty object (not a broken file)
    path.write_text("{}")
    install.cmd_install_hooks(ns())
    install.cmd_uninstall_hooks(ns())
    assert json.loads(path.read_text()) == {}


def test_project_scope_and_invalid_json_is_left_alone(home: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    monkeypatch.chdir(proj)
    assert install.cmd_install_hooks(ns(scope="project")) == 0
    assert len(ours(json.loads((proj / ".claude" / "settings.json").read_text()))) == 7
    assert not (home / ".claude" / "settings.json").exists()

    bad = home / ".claude" / "settings.json"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("{ not json")
    assert install.cmd_install_hooks(ns()) == 1
    assert bad.read_text() == "{ not json"
    assert "not valid JSON" in capsys.readouterr().err


def test_codex_hooks_file_and_feature_flag_warning(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Current Codex: hooks are on by default (no flag to set), ``codex_hooks`` is a deprecated alias of
    ``[features] hooks``, and new hooks wait for the user's review in ``/hooks``."""
    assert install.cmd_install_hooks(ns(codex=True)) == 0
    err = capsys.readouterr().err
    assert "`/hooks`" in err and "review" in err  # said every time
    assert "warning" not in err and "codex features enable" not in err  # on by default: nothing to enable
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())
    assert set(hooks["hooks"]) == CODEX_EVENTS
    assert all(c.endswith("--agent codex") for c in ours(hooks))
    (rule_group,) = hooks["hooks"]["PreToolUse"]  # the rules, on Codex's shell tool; no file gate
    assert rule_group["matcher"] == "Bash" and rule_group["hooks"][0]["command"].endswith(" rule --agent codex")
    assert all(h.get("timeout") for gs in hooks["hooks"].values() for g in gs for h in g["hooks"])

    config = home / ".codex" / "config.toml"
    config.write_text('model = "gpt-5"\n[features]\ncodex_hooks = true\n')
    install.cmd_install_hooks(ns(codex=True))
    err = capsys.readouterr().err
    assert "warning" not in err and "deprecated alias" in err and "`/hooks`" in err
    config.write_text("[features]\nhooks = true\n")
    install.cmd_install_hooks(ns(codex=True))
    err = capsys.readouterr().err
    assert "warning" not in err and "deprecated" not in err
    for off in ("[features]\nhooks = false\n", "[features]\ncodex_hooks = false\n"):
        config.write_text(off)
        install.cmd_install_hooks(ns(codex=True))
        err = capsys.readouterr().err
        assert "turned off" in err and "`/hooks`" in err

    install.cmd_uninstall_hooks(ns(codex=True))
    assert ours(json.loads((home / ".codex" / "hooks.json").read_text())) == []


def test_install_mcp_for_claude_code_and_codex(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "npx", "args": ["x"]}}}))
    monkeypatch.chdir(proj)
    codex_cfg = home / ".codex" / "config.toml"
    codex_cfg.parent.mkdir(parents=True, exist_ok=True)
    codex_cfg.write_text('model = "gpt-5"\n')
    assert install.cmd_install_mcp(ns(scope="project", codex=True)) == 0
    cfg = json.loads((proj / ".mcp.json").read_text())
    assert cfg["mcpServers"]["other"] == {"command": "npx", "args": ["x"]}
    server = cfg["mcpServers"]["mempal"]
    assert server["type"] == "stdio" and ("mempal-mcp" in server["command"] or "mempal.mcp_server" in server["args"])
    import tomllib

    codex = tomllib.loads(codex_cfg.read_text())
    assert codex["model"] == "gpt-5" and codex["mcp_servers"]["mempal"]["command"] == server["command"]
    text = codex_cfg.read_text()
    install.cmd_install_mcp(ns(scope="project", codex=True))  # idempotent
    assert codex_cfg.read_text() == text
    assert install.cmd_install_mcp(ns(scope="user")) == 0
    assert "mempal" in json.loads((home / ".claude.json").read_text())["mcpServers"]


def test_install_mcp_defaults_to_user_scope_and_pins_what_a_bare_host_would_miss(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    monkeypatch.chdir(proj)
    other = tmp_path / "elsewhere" / "palace"
    monkeypatch.setenv("MEMPAL_DATA_DIR", str(other))
    out = mempal("install-mcp", cwd=proj)
    assert out.returncode == 0, out.stderr
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["mempal"]
    assert not (proj / ".mcp.json").exists()
    # a data dir a bare environment (HOME, USER, PATH) would not compute is pinned, and so is the explicit
    # runtime dir the test environment sets; the default config dir (under HOME) is not
    assert server["env"]["MEMPAL_DATA_DIR"] == str(other)
    assert server["env"]["MEMPAL_RUNTIME_DIR"] == os.environ["MEMPAL_RUNTIME_DIR"]
    assert "MEMPAL_CONFIG_DIR" not in server["env"]
    assert "--read-only" not in server["args"]

    assert mempal("install-mcp", "--scope", "project", "--read-only", cwd=proj).returncode == 0
    project = json.loads((proj / ".mcp.json").read_text())["mcpServers"]["mempal"]
    assert project["args"][-1] == "--read-only"

    # the hook commands carry the same pins, and still end with their verb
    install.cmd_install_hooks(ns())
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    cmd = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert cmd.startswith("env ") and f"MEMPAL_DATA_DIR={other}" in cmd and cmd.endswith(" prompt")


def test_nothing_is_pinned_with_the_default_locations(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mempal.paths import pinned_env

    for key in ("MEMPAL_DATA_DIR", "MEMPAL_CONFIG_DIR", "MEMPAL_RUNTIME_DIR", "MEMPAL_SOCKET", "XDG_DATA_HOME",
                "XDG_CONFIG_HOME"):
        monkeypatch.delenv(key, raising=False)
    assert pinned_env() == {}
    install.cmd_install_mcp(ns())
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["mempal"]
    assert "env" not in server
    # set to exactly the defaults: still nothing to pin
    monkeypatch.setenv("MEMPAL_DATA_DIR", str(home / ".local" / "share" / "mempald"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    assert pinned_env() == {}
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg-data"))
    monkeypatch.delenv("MEMPAL_DATA_DIR")
    assert pinned_env() == {"MEMPAL_DATA_DIR": str(home / "xdg-data" / "mempald")}


def test_the_hook_command_runs_without_site_and_finds_its_package(tmp_path: Path) -> None:
    """``-S`` leaves site-packages off sys.path: the command appends the folder that holds ``mempal`` itself, and
    nothing else is needed (no PYTHONPATH, another cwd)."""
    argv = install.hook_argv()
    assert argv[:4] == [sys.executable, "-P", "-S", "-c"]
    head, guarded = argv[4].split("; exec(", 1)
    assert install.HOOK_ENTRY in guarded and "except BaseException" in guarded  # the import is guarded
    probe = head + "; import mempal.hook; print(mempal.hook.__file__, 'site' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([*argv[:4], probe], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    where, site_loaded = out.stdout.split()
    assert Path(where).resolve() == Path(install.__file__).resolve().parent / "hook.py"
    assert site_loaded == "False"
    # the real entry, on an event it does not know: fails open (exit 0, no output), and imports cleanly
    ran = subprocess.run([*argv, "no-such-event"], input="{}", capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=60)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")
