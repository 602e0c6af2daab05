"""The agents' own memories (issue 45 point 4): Claude Code's auto-memory files and index, CLAUDE.md / AGENTS.md,
Codex's memories, read as one rewritten document each into the room agent-memory, kind agent_memory, with the
project found beside the memory folder; samples in ``tests/fixtures/agent_memory`` in the agents' real shape."""

from __future__ import annotations

import json
import shutil
from pathlib import Path, PurePath
from typing import Any

import pytest

from mempald.config import parse_settings
from mempald.ingest.drawers import SourceInfo, build_drawers
from mempald.normalize import agent_memory, registry
from mempald.normalize.format import Input
from mempald.normalize.model import CursorContext, Line
from mempald.sources.catalog import SourceSet
from tests.conftest import REPO

SAMPLES = REPO / "tests" / "fixtures" / "agent_memory"
PROJECT = SAMPLES / ".claude" / "projects" / "-home-u-heronry"


class DiskLook:
    """A ``Look`` over the real files of a temp dir (what the intake hands a format's hooks)."""

    def is_file(self, path: PurePath) -> bool:
        return Path(path).is_file()

    def is_dir(self, path: PurePath) -> bool:
        return Path(path).is_dir()

    def entries(self, folder: PurePath) -> tuple[str, ...]:
        return tuple(p.name for p in Path(folder).iterdir()) if Path(folder).is_dir() else ()

    def head(self, path: PurePath, size: int) -> bytes:
        with Path(path).open("rb") as fh:
            return fh.read(size)

    def read(self, path: PurePath, max_bytes: int) -> bytes | None:
        data = Path(path).read_bytes()
        return data if len(data) <= max_bytes else None

    def lines(self, path: PurePath, max_bytes: int) -> list[Line]:
        return []

    def rows(self, database: PurePath, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return []


def parse(path: Path, ctx: CursorContext | None = None) -> Any:
    return agent_memory.parse(Input(name=str(path), data=path.read_bytes(),
                                    context=ctx or CursorContext(format="agent_memory")))


def test_every_agent_memory_file_is_detected_and_plain_notes_are_not() -> None:
    for path in [*SAMPLES.rglob("*.md")]:
        found = registry.detect_file(path.read_bytes()[:registry.HEAD_BYTES], path.name)
        assert found is agent_memory.FORMAT, path
    assert registry.detect_file(b"# Deploy notes\n\nWe deploy from main.\n", "notes.md") is registry.TEXT
    assert registry.detect_file(b"---\ntitle: a blog post\n---\nHello\n", "post.md") is registry.TEXT
    assert registry.wanted("CLAUDE.md") and registry.wanted("AGENTS.md") and registry.wanted("MEMORY.md")


def test_an_auto_memory_file_is_one_exchange_in_its_own_room_with_no_prompt() -> None:
    path = PROJECT / "memory" / "feedback_real_database.md"
    parsed = parse(path)
    ex, = parsed.exchanges
    assert (ex.kind, ex.key, ex.user, ex.agent) == ("agent_memory", "memory", "", "claude_code")
    assert ex.assistant == path.read_text().strip()  # verbatim: every line of the file
    assert ex.title == "auto-memory: feedback-real-database" and ex.timestamp == "2026-09-08T19:29:56.864Z"
    assert parsed.ledger.counts() == {"stored": 1}
    info = SourceInfo(kind="agent_memory", path=str(path), source_key="k", machine="m", user="u")
    drawers = build_drawers([ex], info, lambda t: len(t.split()), 256)
    assert {d.payload["room"] for d in drawers} == {"agent-memory"}
    assert {d.payload["kind"] for d in drawers} == {"agent_memory"}


def test_the_project_of_a_memory_is_read_beside_it_from_a_session_transcript(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-u-my-heron"
    shutil.copytree(PROJECT / "memory", project / "memory")
    memory = project / "memory" / "MEMORY.md"
    look = DiskLook()
    # no transcript yet: the folder's name, decoded (a hyphen in a name cannot be told from a slash)
    assert agent_memory.beside(memory, CursorContext(), look).cwd == "/home/u/my/heron"
    (project / "e4500000-0000-4000-8000-000000000001.jsonl").write_text(
        json.dumps({"type": "user", "cwd": "/home/u/my-heron", "sessionId": "e45"}) + "\n")
    ctx = agent_memory.beside(memory, CursorContext(), look)
    assert ctx.cwd == "/home/u/my-heron"
    ex, = parse(memory, ctx).exchanges
    assert ex.cwd == ex.project == "/home/u/my-heron" and ex.title == "auto-memory index (MEMORY.md)"
    user_level = SAMPLES / ".claude" / "CLAUDE.md"
    assert agent_memory.beside(user_level, CursorContext(), look).cwd == ""  # the user's own: no project
    assert parse(user_level).exchanges[0].title == "user instructions (CLAUDE.md)"


def test_codex_memories_and_agents_md_are_read_as_codex_s() -> None:
    summary, = parse(SAMPLES / ".codex" / "memories" / "memory_summary.md").exchanges
    assert summary.agent == "codex" and summary.title == "Codex memories: memory_summary.md"
    agents, = parse(SAMPLES / ".codex" / "AGENTS.md").exchanges
    assert agents.agent == "codex" and "Run the linters" in agents.assistant


def test_an_empty_or_injected_only_file_stores_nothing_and_says_why() -> None:
    for data in (b"", b"\n\n", b"<mempal-context source=\"x\">recalled</mempal-context>\n"):
        parsed = agent_memory.parse(Input(name="/h/.claude/CLAUDE.md", data=data))
        assert parsed.exchanges == [] and parsed.ledger.counts() == {"skipped: empty": 1}


def test_the_format_declares_where_the_agents_keep_their_memories() -> None:
    fmt = agent_memory.FORMAT
    assert fmt.reads == "document" and fmt.unit == "file" and fmt.change == "rewritten" and not fmt.archive
    globs = {g for p in fmt.places for g in p.globs}
    assert {"/CLAUDE.md", "/projects/*/memory/*.md", "/AGENTS.md", "/memories/*.md"} <= globs
    assert {p.agent for p in fmt.places} == {"Claude Code", "Codex"}
    assert all(p.linux and p.macos and p.windows for p in fmt.places)


def test_nested_places_send_each_file_to_the_source_that_reads_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """~/.claude (the agents' memories) holds ~/.claude/projects (Claude Code's sessions): a memory file under a
    project goes to the memory source, a transcript beside it to Claude Code's."""
    monkeypatch.setenv("HOME", str(tmp_path))
    shutil.copytree(SAMPLES / ".claude", tmp_path / ".claude")
    sources = SourceSet(parse_settings({}, env={}))
    project = (tmp_path / ".claude" / "projects" / "-home-u-heronry").resolve()
    memory = sources.source_for(project / "memory" / "MEMORY.md")
    transcript = sources.source_for(project / "e4500000-0000-4000-8000-000000000001.jsonl")
    user_md = sources.source_for((tmp_path / ".claude" / "CLAUDE.md").resolve())
    assert memory is not None and memory.fmt == "agent_memory" and memory.wants(project / "memory" / "MEMORY.md")
    assert transcript is not None and transcript.fmt == "claude_code"
    assert user_md is memory or (user_md is not None and user_md.fmt == "agent_memory")
    assert not memory.wants((tmp_path / ".claude" / "settings.md").resolve())  # only what its globs name
