"""``mempal install-mcp --agent cline|roo|kilo``: the extension's MCP settings file in every editor that has the
extension (VS Code's when none has it yet) and the Cline CLI's; the user's other servers and settings kept;
idempotent; a broken file refused with nothing changed."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mempal import install_mcp
from tests.conftest import REPO

THEIRS = {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                     "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}, "disabled": False, "autoApprove": []}}


def mempal(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys\nfrom mempal.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=dict(os.environ),
                          cwd=REPO, timeout=60)


def ns(**kw: Any) -> argparse.Namespace:
    return argparse.Namespace(**{"scope": "user", "codex": False, "read_only": False, "dry_run": False, **kw})


@pytest.fixture
def config_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home / ".config"


def _settings(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_cline_gets_mempal_beside_the_users_servers_in_each_editor_that_has_it(config_home: Path) -> None:
    ext = "saoudrizwan.claude-dev"
    code = config_home / "Code" / "User" / "globalStorage" / ext / "settings" / "cline_mcp_settings.json"
    cursor = config_home / "Cursor" / "User" / "globalStorage" / ext / "settings" / "cline_mcp_settings.json"
    code.parent.mkdir(parents=True)
    code.write_text(json.dumps({"mcpServers": THEIRS}, indent=2))
    (config_home / "Cursor" / "User" / "globalStorage" / ext).mkdir(parents=True)
    assert install_mcp.cmd_install_mcp(ns(agent="cline")) == 0
    for path in (code, cursor):
        servers = _settings(path)["mcpServers"]
        server = servers["mempal"]
        assert "mempal-mcp" in server["command"] or "mempal.mcp_server" in server["args"]
        assert server["disabled"] is False
    assert _settings(code)["mcpServers"]["github"] == THEIRS["github"]
    assert not (config_home / "VSCodium").exists(), "an editor without the extension is left alone"
    before = code.read_text()
    assert install_mcp.cmd_install_mcp(ns(agent="cline")) == 0
    assert code.read_text() == before, "idempotent"


def test_roo_and_kilo_write_mcp_settings_json_and_keep_what_the_user_set_on_our_entry(config_home: Path) -> None:
    roo = config_home / "Code" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline" / "settings" / \
        "mcp_settings.json"
    roo.parent.mkdir(parents=True)
    roo.write_text(json.dumps({"mcpServers": {**THEIRS, "mempal": {"command": "old", "alwaysAllow": ["search"]}}}))
    assert install_mcp.cmd_install_mcp(ns(agent="roo")) == 0
    mine = _settings(roo)["mcpServers"]["mempal"]
    assert mine["command"] != "old" and mine["alwaysAllow"] == ["search"]
    assert _settings(roo)["mcpServers"]["github"] == THEIRS["github"]
    assert list(roo.parent.glob("mcp_settings.json.bak-*")), "the file it changed is backed up"
    # Kilo Code not installed anywhere yet: VS Code's place, created
    assert install_mcp.cmd_install_mcp(ns(agent="kilo", read_only=True)) == 0
    kilo = config_home / "Code" / "User" / "globalStorage" / "kilocode.kilo-code" / "settings" / "mcp_settings.json"
    assert "--read-only" in _settings(kilo)["mcpServers"]["mempal"]["args"]
    assert not (config_home / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev").exists()


def test_the_cline_cli_and_macos_and_windows_places(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    (home / ".cline" / "data").mkdir(parents=True)
    monkeypatch.setattr(sys, "platform", "darwin")
    paths = install_mcp.extension_mcp_paths("cline")
    assert paths == [home / ".cline" / "data" / "settings" / "cline_mcp_settings.json"]
    (home / "Library" / "Application Support" / "Windsurf" / "User" / "globalStorage" / "saoudrizwan.claude-dev") \
        .mkdir(parents=True)
    assert install_mcp.extension_mcp_paths("cline")[0] == home / "Library" / "Application Support" / "Windsurf" / \
        "User" / "globalStorage" / "saoudrizwan.claude-dev" / "settings" / "cline_mcp_settings.json"
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    assert install_mcp.extension_mcp_paths("roo") == [
        tmp_path / "Roaming" / "Code" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline" / "settings" /
        "mcp_settings.json"]


def test_a_broken_settings_file_is_refused_and_left_as_it_was(config_home: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = config_home / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "settings" / \
        "cline_mcp_settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"mcpServers": {"github": ')
    assert install_mcp.cmd_install_mcp(ns(agent="cline")) == 1
    assert path.read_text() == '{"mcpServers": {"github": '
    assert "not valid JSON" in capsys.readouterr().err


def test_the_command_line_takes_the_agent(config_home: Path) -> None:
    out = mempal("install-mcp", "--agent", "roo", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert '"mempal"' in out.stdout and "mcp_settings.json" in out.stderr
    assert not (config_home / "Code").exists(), "a dry run writes nothing"
    out = mempal("install-mcp", "--agent", "kilo")
    assert out.returncode == 0, out.stderr
    assert (config_home / "Code" / "User" / "globalStorage" / "kilocode.kilo-code" / "settings" /
            "mcp_settings.json").is_file()
    assert not (Path(os.environ["HOME"]) / ".claude.json").exists(), "Claude Code's file is not touched"
