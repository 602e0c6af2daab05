"""``mempal install-mcp --agent opencode``: OpenCode's global config gets the mempal server, every other setting
kept, idempotent, in the shape of the OpenCode the user runs; a commented ``.jsonc`` is never rewritten."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

USER_CONFIG = {
    "$schema": "https://opencode.ai/config.json",
    "theme": "tokyonight",
    "model": "anthropic/claude-sonnet-4-5",
    "mcp": {"context7": {"type": "remote", "url": "https://mcp.context7.com/mcp", "enabled": True}},
    "permission": {"bash": "ask"},
}


def mempal(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys\nfrom mempal.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=dict(os.environ),
                          cwd=REPO, timeout=60)


def test_opencode_1_config_gets_mcp_mempal_and_keeps_every_setting(home: Path) -> None:
    cfg = home / ".config" / "opencode" / "opencode.json"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(json.dumps(USER_CONFIG, indent=2))
    out = mempal("install-mcp", "--agent", "opencode")
    assert out.returncode == 0, out.stderr
    after = json.loads(cfg.read_text())
    server = after["mcp"].pop("mempal")
    assert after == USER_CONFIG, "the user's settings and servers are kept as they were"
    assert server["type"] == "local" and server["enabled"] is True
    assert server["command"][0].endswith("mempal-mcp") or server["command"][1:3] == ["-m", "mempal.mcp_server"]
    assert server["environment"]["MEMPAL_RUNTIME_DIR"] == os.environ["MEMPAL_RUNTIME_DIR"], "what a host would drop"
    assert not (home / ".claude.json").exists(), "--agent opencode writes OpenCode's config only"
    assert list(cfg.parent.glob("opencode.json.bak-*")), "a backup before the change"
    text = cfg.read_text()
    assert mempal("install-mcp", "--agent", "opencode").returncode == 0
    assert cfg.read_text() == text, "idempotent"
    assert mempal("install-mcp", "--agent", "opencode", "--read-only").returncode == 0
    assert json.loads(cfg.read_text())["mcp"]["mempal"]["command"][-1] == "--read-only"


def test_a_fresh_home_gets_a_config_and_opencode_2_gets_mcp_servers(home: Path) -> None:
    cfg = home / ".config" / "opencode" / "opencode.json"
    assert mempal("install-mcp", "--agent", "opencode", "--dry-run").returncode == 0
    assert not cfg.exists(), "a dry run writes nothing"
    assert mempal("install-mcp", "--agent", "opencode").returncode == 0
    fresh = json.loads(cfg.read_text())
    assert fresh["$schema"] == "https://opencode.ai/config.json" and fresh["mcp"]["mempal"]["type"] == "local"

    v2 = {"mcp": {"servers": {"docs": {"type": "remote", "url": "https://example.com/mcp"}}}, "theme": "system"}
    cfg.write_text(json.dumps(v2))
    assert mempal("install-mcp", "--agent", "opencode").returncode == 0
    after = json.loads(cfg.read_text())
    assert set(after["mcp"]) == {"servers"}, "OpenCode 2 takes its servers under mcp.servers only"
    assert after["mcp"]["servers"]["docs"] == v2["mcp"]["servers"]["docs"] and after["theme"] == "system"
    assert after["mcp"]["servers"]["mempal"]["type"] == "local" and "enabled" not in after["mcp"]["servers"]["mempal"]


def test_a_commented_jsonc_config_is_never_rewritten(home: Path) -> None:
    folder = home / ".config" / "opencode"
    folder.mkdir(parents=True)
    cfg = folder / "opencode.jsonc"
    text = '{\n  // my theme\n  "theme": "nord",\n  "mcp": {\n    "a": {"type": "local", "command": ["a"]},\n  },\n}\n'
    cfg.write_text(text)
    out = mempal("install-mcp", "--agent", "opencode")
    assert out.returncode == 0, out.stderr
    assert cfg.read_text() == text and not (folder / "opencode.json").exists()
    assert '"mempal"' in out.stderr and "by hand" in out.stderr


def test_a_config_that_is_not_an_object_is_left_alone(home: Path) -> None:
    cfg = home / ".config" / "opencode" / "opencode.json"
    cfg.parent.mkdir(parents=True)
    cfg.write_text('{"mcp": [1, 2]}')
    out = mempal("install-mcp", "--agent", "opencode")
    assert out.returncode == 1 and '"mcp" is not an object' in out.stderr
    assert cfg.read_text() == '{"mcp": [1, 2]}'
