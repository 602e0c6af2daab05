"""The agents' own memories through the real daemon (issue 45 point 4): with nothing configured, the daemon finds
them where the agents keep them (the format's places: ~/.claude's CLAUDE.md and projects/*/memory/*.md, ~/.codex's
AGENTS.md and memories/), reads them into the room agent-memory (kind agent_memory) under the project of the
sessions beside them, replaces them when they change, shows them in the wake-up as what the agent already
believes, and never writes them."""

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
                              "fields": ["text", "kind", "source_path", "title", "wing", "cwd"]})
    out: list[dict[str, Any]] = page["drawers"]
    return out


def snapshot(root: Path) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in root.rglob("*.md")}


@pytest.mark.timeout(300)
def test_the_agents_memories_are_found_read_updated_and_shown_by_the_wake_up(daemon: Daemon, home: Path) -> None:
    shutil.copytree(SAMPLES / ".claude", home / ".claude", dirs_exist_ok=True)
    shutil.copytree(SAMPLES / ".codex", home / ".codex")
    user_md = home / ".claude" / "CLAUDE.md"
    project = home / ".claude" / "projects" / "-home-u-heronry"
    write(project / f"{S1}.jsonl", exchanges(S1, "/home/u/heronry", "heron", 3))  # the sessions beside the memory
    (home / ".claude" / "settings.md").write_text("not a memory: outside the place's globs\n")
    before = snapshot(home / ".claude") | snapshot(home / ".codex")
    daemon.start(extra_env=ENV)
    names = {"CLAUDE.md", "MEMORY.md", "feedback_real_database.md", "project_release_freeze.md", "AGENTS.md",
             "memory_summary.md"}

    def all_read() -> list[dict[str, Any]] | None:
        m = memory_drawers(daemon)
        return m if names <= {Path(d["source_path"]).name for d in m} else None

    found = daemon.wait_for(all_read, timeout=90)
    assert {d["kind"] for d in found} == {"agent_memory"}
    assert "settings.md" not in {Path(d["source_path"]).name for d in found}
    by_name = {Path(d["source_path"]).name: d for d in found}
    assert by_name["feedback_real_database.md"]["wing"] == "heronry"  # the project of the sessions beside it
    assert by_name["CLAUDE.md"]["cwd"] == ""  # the user's own: no project
    daemon.idle()
    wake = daemon.call("wake_up", {"wing": "heronry", "budget": 800})["text"]
    assert "what the agent already believes" in wake
    assert "Integration tests must hit a real Postgres" in wake and "Answer in short paragraphs" in wake

    user_md.write_text("# My preferences\n\n- Always write the tests first, then the code.\n")  # the user edits it
    daemon.wait_for(lambda: any("tests first" in d["text"] for d in memory_drawers(daemon)), timeout=60)
    texts = [d["text"] for d in memory_drawers(daemon) if Path(d["source_path"]).name == "CLAUDE.md"]
    assert len(texts) == 1 and "short paragraphs" not in texts[0]  # replaced, not added beside
    daemon.idle()
    assert "tests first" in daemon.call("wake_up", {"wing": "heronry", "budget": 800})["text"]
    after = snapshot(home / ".claude") | snapshot(home / ".codex")
    assert {p: v for p, v in after.items() if p != user_md} == {p: v for p, v in before.items() if p != user_md}


@pytest.mark.timeout(300)
def test_a_watched_projects_claude_md_and_agents_md_are_agent_memory_not_code_notes(daemon: Daemon, home: Path,
                                                                                   tmp_path: Path) -> None:
    """Issue 45 point 4, each watched project's CLAUDE.md / AGENTS.md: in a folder watched as a code project they
    are read as what the agent believes (room agent-memory, the project's wing), a notes file beside them is
    still a note, and an edit replaces the memory."""
    project = tmp_path / "tidewater"
    project.mkdir()
    (project / "CLAUDE.md").write_text("# Tidewater\n\n- Never run migrations against production by hand.\n")
    (project / "AGENTS.md").write_text("# Agents\n\nUse pnpm, not npm, in this repository.\n")
    (project / "NOTES.md").write_text("# Notes\n\nThe harbour tide tables come from the port authority feed.\n")
    daemon.start(extra_env=ENV)
    daemon.call("watch_add", {"path": str(project), "mode": "projects"})

    def both() -> list[dict[str, Any]] | None:
        m = [d for d in memory_drawers(daemon) if Path(d["source_path"]).parent == project]
        return m if {Path(d["source_path"]).name for d in m} == {"CLAUDE.md", "AGENTS.md"} else None

    found = daemon.wait_for(both, timeout=90)
    assert {d["kind"] for d in found} == {"agent_memory"} and {d["wing"] for d in found} == {"tidewater"}
    daemon.idle()
    notes = daemon.call("drawers", {"limit": 100, "wing": "tidewater", "fields": ["source_path", "room", "kind"]})
    rooms = {Path(d["source_path"]).name: d["room"] for d in notes["drawers"]}
    assert rooms["NOTES.md"] != "agent-memory" and rooms["CLAUDE.md"] == "agent-memory"
    (project / "CLAUDE.md").write_text("# Tidewater\n\n- Migrations go through the release pipeline only.\n")
    daemon.wait_for(lambda: any("release pipeline" in d["text"] for d in memory_drawers(daemon)), timeout=60)
    texts = [d["text"] for d in memory_drawers(daemon) if d["source_path"] == str(project / "CLAUDE.md")]
    assert len(texts) == 1 and "by hand" not in texts[0]
