"""The spellings users of MemPal, mempal (Rust) and memorypack type: each one does what our own spelling does,
through the real ``mempal`` command line against a real daemon (README: "Switching from another tool")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import REPO, Daemon

pytestmark = pytest.mark.anyio


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    code = "import sys\nfrom mempal.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=cwd, timeout=120)


def as_json(*args: str) -> Any:
    out = cli(*args, "--json")
    assert out.returncode == 0, (args, out.stderr)
    return json.loads(out.stdout)


@pytest.mark.timeout(400)
def test_the_seed_tools_spellings_do_what_ours_do(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    daemon.start()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "heron.md").write_text("# Heron exporter\n\nWe chose parquet over csv because csv lost the column "
                                    "types of the invoice table. Owner: Kai.\n")
    (notes / "pelican.md").write_text("# Pelican gateway\n\nThe gateway retries twice: the upstream drops one "
                                      "request in ten.\n")

    # mempal (Rust): `ingest DIR --wing W`  ==  `mine DIR --wing W`
    mined = as_json("ingest", str(notes), "--wing", "notes-wing")
    assert mined["files"] == 2
    daemon.idle()
    assert as_json("wings")["wings"].get("notes-wing", 0) >= 2

    # `search Q --results N` (MemPal) and `--top-k N` (mempal) == `--limit N`
    ours = as_json("search", "why parquet", "--limit", "1")
    assert len(ours["hits"]) == 1
    for flag in ("--results", "--top-k"):
        assert [h["drawer_id"] for h in as_json("search", "why parquet", flag, "1")["hits"]] == \
            [h["drawer_id"] for h in ours["hits"]]

    # kg: `add S P O --source-drawer ID`, `query --subject S [--predicate P]`, `timeline ENTITY`
    drawer = ours["hits"][0]["drawer_id"]
    added = as_json("kg", "add", "Kai", "owns", "heron-exporter", "--source-drawer", drawer)
    assert added["triple"]["source_drawer"] == drawer
    as_json("kg", "add", "Kai", "reviews", "pelican-gateway")
    assert len(as_json("kg", "query", "--subject", "Kai")["triples"]) == 2
    (only,) = as_json("kg", "query", "--subject", "Kai", "--predicate", "owns")["triples"]
    assert only["object"] == "heron-exporter"
    assert {t["object"] for t in as_json("kg", "timeline", "Kai")["triples"]} == {"heron-exporter",
                                                                                 "pelican-gateway"}

    # cowork-status --cwd DIR, cowork-drain --target T
    proj = str(tmp_path / "proj")
    assert cli("cowork", "push", "--to", "codex", "--cwd", proj, "look at the exporter").returncode == 0
    assert as_json("cowork-status", "--cwd", proj) == as_json("cowork", "status", "--cwd", proj)
    drained = as_json("cowork-drain", "--target", "codex", "--cwd", proj)
    assert [m["text"] for m in drained["messages"]] == ["look at the exporter"]

    # fact-check --wing/--room/--now: the instant's date is the day checked; the scope is the whole graph
    claim = tmp_path / "claim.txt"
    claim.write_text("Kai owns the heron-exporter.")
    ours_fc = cli("fact-check", str(claim), "--today", "2026-03-01", "--json")
    theirs_fc = cli("fact-check", str(claim), "--wing", "notes-wing", "--room", "general",
                    "--now", "2026-03-01T09:30:00Z", "--json")
    assert (theirs_fc.returncode, theirs_fc.stdout) == (ours_fc.returncode, ours_fc.stdout)
    assert "--wing/--room change nothing" in theirs_fc.stderr

    # compress --config entities.json: accepted; says where entity codes come from
    entities = tmp_path / "entities.json"
    entities.write_text(json.dumps({"people": {"Kai": "KAI"}}))
    compressed = cli("compress", "Kai chose parquet for the heron exporter.", "--config", str(entities),
                     "--dry-run")
    assert compressed.returncode == 0, compressed.stderr
    assert "[people] table of config.toml" in compressed.stderr and "people.Kai KAI" in compressed.stderr
    assert cli("compress", "x", "--config", str(tmp_path / "missing.json")).returncode == 2

    # memorypack: `watch DIR --interval N` == `watch add DIR`
    watched = tmp_path / "watched"
    watched.mkdir()
    out = cli("watch", str(watched), "--interval", "5")
    assert out.returncode == 0, out.stderr
    assert "watches folders continuously" in out.stderr
    assert str(watched) in {s["path"] for s in as_json("watch", "list")["sources"]}

    # --palace PATH on any command, before or after it: the daemon of that data directory, or a plain refusal
    ddir = os.environ["MEMPAL_DATA_DIR"]
    assert as_json("--palace", ddir, "status")["data_dir"] == ddir
    assert as_json("status", f"--palace={ddir}")["data_dir"] == ddir
    elsewhere = tmp_path / "another-palace"
    refused = cli("search", "parquet", "--palace", str(elsewhere))
    assert refused.returncode == 3
    assert f"not this client's data directory {elsewhere}" in refused.stderr and "\n" not in refused.stderr.strip()
    # the Python API says the same
    from mempal import Client, DaemonUnavailable

    with Client(palace=ddir) as client:
        assert client.status()["data_dir"] == ddir
    with Client(palace=elsewhere) as client, pytest.raises(DaemonUnavailable, match="not this client's data"):
        client.status()


@pytest.mark.timeout(120)
def test_cowork_install_hooks_is_install_hooks(home: Path) -> None:
    out = cli("cowork-install-hooks", "--global-codex")
    assert out.returncode == 0, out.stderr
    claude = json.loads((home / ".claude" / "settings.json").read_text())
    codex = json.loads((home / ".codex" / "hooks.json").read_text())
    assert "UserPromptSubmit" in claude["hooks"] and "PreToolUse" in claude["hooks"]
    assert "UserPromptSubmit" in codex["hooks"]
    # Codex's PreToolUse runs the rules' check only (issue 46; the file gate is Claude Code's)
    codex_pre = [h["command"] for g in codex["hooks"].get("PreToolUse", []) for h in g["hooks"]]
    assert codex_pre and all(c.split("'")[-1].split()[0] == "rule" for c in codex_pre), codex_pre
    assert cli("cowork-install-hooks").stderr.count("already up to date") == 1


@pytest.mark.timeout(120)
async def test_serve_mcp_is_the_mcp_server(home: Path, tmp_path: Path) -> None:
    code = "import sys\nfrom mempal.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    params = StdioServerParameters(command=sys.executable, args=["-c", code, "serve", "--mcp"], cwd=str(tmp_path),
                                   env={**os.environ, "PYTHONPATH": str(REPO)})
    async with stdio_client(params, errlog=sys.stderr) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.serverInfo.name == "mempal"
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"search", "get", "timeline"} <= names
    bare = cli("serve")
    assert bare.returncode == 2 and "mempal serve --mcp" in bare.stderr
