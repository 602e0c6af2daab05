"""`mempal inspect FILE`, `mempal mine --dry-run` and `mempal reread` through a real daemon and the real CLI, on
real transcripts of ../shared/fixtures/formats/*/real2: the dry run and inspect read exactly as the ingest
does and store nothing; a mine then stores what they announced; a re-read changes nothing that is right."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon, copy_tree

BYTE = "-Users-cedricmukolonga-00-vibe-projects-byte-bridges"
THANOS = "-Users-jeremy-Projects-Thanos"


def mempal(d: Daemon, *args: str) -> Any:
    out = subprocess.run([sys.executable, "-m", "mempal.cli.main", *args, "--json"], capture_output=True, text=True,
                         env=d.env, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def text_of(d: Daemon, *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "mempal.cli.main", *args], capture_output=True, text=True,
                         env=d.env, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.timeout(600)
def test_inspect_dry_run_mine_and_reread(daemon: Daemon, home: Path, formats_dir: Path, tmp_path: Path) -> None:
    projects = formats_dir / "claude_code" / "real2" / "projects"
    work = tmp_path / "transcripts"
    copy_tree(projects / BYTE, work / BYTE)
    copy_tree(projects / THANOS, work / THANOS)
    aider_repo = work / "pong"
    aider_repo.mkdir()
    shutil.copy(formats_dir / "aider" / "real2" / "ping13__aider-testing" / "aider-chat-pong.md",
                aider_repo / ".aider.chat.history.md")
    daemon.start()
    daemon.idle()

    one = work / BYTE / "f156e813-a767-437a-898c-1110895e08b2.jsonl"
    r = mempal(daemon, "inspect", str(one))
    lines = one.read_bytes().count(b"\n")
    assert r["format"] == "claude_code" and r["records"] == lines == 243
    assert sum(row["records"] for row in r["rows"]) == lines  # every line in the table, once
    assert r["prompts"] == 14 and len(r["exchanges"]) == 15 and r["drawers"] >= 15  # 14 prompts + the summary
    assert r["accounted"]["skipped: meta: command expansion"] == 5
    table = text_of(daemon, "inspect", str(one))
    assert "lines 2-10" in table and "skipped (file snapshot)" in table and "#0 exchange by claude: /speckit.clarify" \
        in table

    dry = mempal(daemon, "mine", str(work), "--dry-run")
    assert dry["dry_run"] is True and dry["files"] == 6  # 2 session files, 3 agent files, the aider history
    inspected = [mempal(daemon, "inspect", str(p), "--counts-only") for p in sorted(work.rglob("*"))
                 if p.is_file() and p.suffix in (".jsonl", ".md")]
    assert dry["exchanges"] == sum(len(i["exchanges"]) for i in inspected)
    assert dry["drawers"] == sum(i["drawers"] for i in inspected)
    assert dry["prompts"] == 14 + 3 + 11  # byte-bridges, Thanos (PROVENANCE), pong (every #### line read)
    assert dry["accounted"]["skipped: warmup sidechain"] == 4
    assert daemon.call("status")["drawers"] == 0  # nothing stored by inspect or the dry run

    done = mempal(daemon, "mine", str(work))
    assert done["exchanges"] == dry["exchanges"] and done["drawers"] == dry["drawers"]
    st = daemon.idle()
    assert st["drawers"] == dry["drawers"]
    session = daemon.call("session_drawers", {"session_id": "d4983b3a-ddde-4a22-9bff-98a04c19bfe7", "after": 50})
    drawers = session["drawers"]
    kinds = [(d["kind"], d["text"].startswith("> ")) for d in drawers if d["chunk_index"] == 0]
    # Thanos: 3 prompts and the Task sub-agent's work (kept, never as a prompt); the two Warmups are not stored
    assert kinds.count(("exchange", True)) == 3 and kinds.count(("subagent", False)) == 1
    sub = next(d for d in drawers if d["kind"] == "subagent")
    parent = next(d for d in drawers if d["exchange_key"] == sub["parent_exchange"])
    assert sub["parent_id"] == parent["drawer_id"] and sub["agent"] == "claude/subagent:a58cb7d"
    assert sub["subagent_type"] == "claude-code-guide" and "Warmup" not in " ".join(d["text"] for d in drawers)

    # a code project is read as one without --mode (issue 17: only its .md files were read)
    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    (repo / "src" / "cart.py").write_text("def add(cart, item):\n    cart.append(item)  # the wombat fix\n" * 20)
    (repo / "README.md").write_text("# Shop\n\nA small shop.\n")
    plan = mempal(daemon, "mine", str(repo), "--dry-run")
    assert plan["modes"] == {"projects": 1} and plan["files"] == 2 and plan["drawers"] >= 2
    assert daemon.call("status")["drawers"] == st["drawers"]  # still nothing stored by a dry run

    daemon.call("watch_add", {"path": str(work), "mode": "convos"})
    again = mempal(daemon, "reread", str(work))
    assert again["files"] == 6 and again["removed"] == 0 and again["written"] == 0  # nothing was wrong
    assert daemon.idle()["drawers"] == dry["drawers"]
