"""The agents' own memories through the real daemon (issue 45 point 4): CLAUDE.md and Claude Code auto-memory
files in a watched folder are read into the room agent-memory (kind agent_memory), replaced when they change,
shown by the wake-up as what the agent already believes, and never written by mempald."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, Daemon
from tests.integration.test_data_control import ENV, exchanges, write

SAMPLES = REPO / "tests" / "fixtures" / "agent_memory"
S1 = "e4500000-0000-4000-8000-000000000009"


def memory_drawers(d: Daemon) -> list[dict[str, Any]]:
    page = d.call("drawers", {"limit": 1000, "room": "agent-memory",
                              "fields": ["text", "kind", "source_path", "title", "wing"]})
    out: list[dict[str, Any]] = page["drawers"]
    return out


@pytest.mark.timeout(300)
def test_the_agents_memories_are_read_updated_and_shown_by_the_wake_up(daemon: Daemon, home: Path) -> None:
    agents = home / "agents"  # (a watched folder's hidden folders are not read: the copy of ~/.claude is not one)
    shutil.copytree(SAMPLES / ".claude", agents / "claude")
    user_md = agents / "claude" / "CLAUDE.md"
    feedback = agents / "claude" / "projects" / "-home-u-heronry" / "memory" / "feedback_real_database.md"
    write(home / ".claude" / "projects" / "-home-u-heronry" / f"{S1}.jsonl", exchanges(S1, "/home/u/heronry",
                                                                                       "heron", 3))
    before = {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in agents.rglob("*.md")}
    daemon.start(extra_env=ENV)
    daemon.call("watch_add", {"path": str(agents), "mode": "convos"})
    found = daemon.wait_for(lambda: len(m := memory_drawers(daemon)) >= 4 and m, timeout=90)
    assert {d["kind"] for d in found} == {"agent_memory"}
    assert {Path(d["source_path"]).name for d in found} >= {"CLAUDE.md", "MEMORY.md", "feedback_real_database.md",
                                                             "project_release_freeze.md"}
    daemon.idle()
    wake = daemon.call("wake_up", {"wing": "heronry", "budget": 800})
    assert "what the agent already believes" in wake["text"]
    assert "Answer in short paragraphs" in wake["text"]  # the user's CLAUDE.md: shown in every project

    user_md.write_text("# My preferences\n\n- Always write the tests first, then the code.\n")  # the user edits it
    daemon.wait_for(lambda: any("tests first" in d["text"] for d in memory_drawers(daemon)), timeout=60)
    texts = [d["text"] for d in memory_drawers(daemon) if Path(d["source_path"]) == user_md]
    assert len(texts) == 1 and "short paragraphs" not in texts[0]  # replaced, not added beside
    daemon.idle()
    assert "tests first" in daemon.call("wake_up", {"wing": "heronry", "budget": 800})["text"]
    after = {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in agents.rglob("*.md") if p != user_md}
    assert after == {p: v for p, v in before.items() if p != user_md}  # never written by mempald
    assert feedback.read_bytes() == before[feedback][0]
