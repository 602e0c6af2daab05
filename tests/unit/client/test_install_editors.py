"""install-mcp --agent cursor|vscode|copilot-cli (``mempal.install_editors``, issue 43): the user's other servers
and keys kept, idempotent, a dry run writes nothing, --uninstall removes exactly mempal's entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

OTHER = {"command": "npx", "args": ["-y", "@acme/mcp"], "env": {"TOKEN": "x"}}


def mempal(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys\nfrom mempal.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=cwd, timeout=60)


@pytest.mark.parametrize(("agent", "rel", "table", "kind"), [
    ("cursor", ".cursor/mcp.json", "mcpServers", "stdio"),
    ("vscode", ".config/Code/User/mcp.json", "servers", "stdio"),
    ("copilot-cli", ".copilot/mcp-config.json", "mcpServers", "local"),
])
def test_install_mcp_for_an_editor_merges_is_idempotent_and_uninstalls(
        home: Path, tmp_path: Path, agent: str, rel: str, table: str, kind: str) -> None:
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({table: {"acme": OTHER}, "inputs": [{"id": "k"}]}))
    before = path.read_text()
    dry = mempal("install-mcp", "--agent", agent, "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)[table]["mempal"]["type"] == kind
    assert path.read_text() == before  # a dry run writes nothing

    assert mempal("install-mcp", "--agent", agent, cwd=tmp_path).returncode == 0
    cfg = json.loads(path.read_text())
    assert cfg[table]["acme"] == OTHER and cfg["inputs"] == [{"id": "k"}]
    server = cfg[table]["mempal"]
    assert server["type"] == kind and ("mempal-mcp" in server["command"] or "mempal.mcp_server" in server["args"])
    assert (server.get("tools") == ["*"]) == (agent == "copilot-cli")
    text = path.read_text()
    again = mempal("install-mcp", "--agent", agent, cwd=tmp_path)
    assert again.returncode == 0 and "nothing changed" in again.stderr and path.read_text() == text

    assert mempal("install-mcp", "--agent", agent, "--uninstall", cwd=tmp_path).returncode == 0
    assert json.loads(path.read_text()) == {table: {"acme": OTHER}, "inputs": [{"id": "k"}]}


def test_project_scope_files_and_a_broken_file_left_alone(home: Path, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    assert mempal("install-mcp", "--agent", "cursor", "--scope", "project", cwd=proj).returncode == 0
    assert "mempal" in json.loads((proj / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert mempal("install-mcp", "--agent", "vscode", "--scope", "project", cwd=proj).returncode == 0
    assert "mempal" in json.loads((proj / ".vscode" / "mcp.json").read_text())["servers"]
    refused = mempal("install-mcp", "--agent", "copilot-cli", "--scope", "project", cwd=proj)
    assert refused.returncode == 1 and "--scope user" in refused.stderr
    broken = home / ".cursor" / "mcp.json"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text('{"mcpServers": {"acme": ')  # the user's file mid-edit: never overwritten
    out = mempal("install-mcp", "--agent", "cursor", cwd=proj)
    assert out.returncode == 1 and "not valid JSON" in out.stderr
    assert broken.read_text() == '{"mcpServers": {"acme": '


def test_install_hooks_for_cursor_keeps_theirs_is_idempotent_and_uninstalls(home: Path, tmp_path: Path) -> None:
    path = home / ".cursor" / "hooks.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    theirs = {"version": 1, "hooks": {"sessionStart": [{"command": "./audit.sh"}],
                                      "afterFileEdit": [{"command": "prettier --write"}]}}
    path.write_text(json.dumps(theirs))
    dry = mempal("install-hooks", "--agent", "cursor", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(path.read_text()) == theirs
    assert mempal("install-hooks", "--agent", "cursor", cwd=tmp_path).returncode == 0
    cfg = json.loads(path.read_text())
    assert cfg["version"] == 1 and cfg["hooks"]["afterFileEdit"] == [{"command": "prettier --write"}]
    first, ours = cfg["hooks"]["sessionStart"]
    assert first == {"command": "./audit.sh"}
    assert "from mempal.hook_cursor import entry" in ours["command"] and ours["command"].endswith(" session-start")
    assert set(cfg["hooks"]) == {"sessionStart", "afterFileEdit"}  # beforeSubmitPrompt cannot add context
    text = path.read_text()
    assert mempal("install-hooks", "--agent", "cursor", cwd=tmp_path).returncode == 0 and path.read_text() == text

    # the command as Cursor runs it: a Cursor-shaped input, no daemon: exit 0, nothing on stdout (fail open)
    cmd = ours["command"]
    payload = json.dumps({"hook_event_name": "sessionStart", "conversation_id": "c1", "generation_id": "g1",
                          "workspace_roots": [str(tmp_path)]})
    t0 = time.monotonic()
    res = subprocess.run(cmd, shell=True, input=payload, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "MEMPAL_RUNTIME_DIR": str(tmp_path / "no-daemon")})
    assert res.returncode == 0 and res.stdout == ""
    assert time.monotonic() - t0 < 10
    probe = subprocess.run(cmd.replace(" session-start", " session-start --probe"), shell=True,
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and "ok" in probe.stdout

    assert mempal("uninstall-hooks", "--agent", "cursor", cwd=tmp_path).returncode == 0
    assert json.loads(path.read_text()) == theirs
