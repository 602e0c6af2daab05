"""Bringing a palace filled by the old adapters up to date (issue #17 point 5), with the daemon's real
components in this process (the packaged model, an embedded store in a temp dir, the state database): the
drawers the old Claude Code adapter made from a real project folder (../shared real2: a session, its Task
sub-agent, two Warmup sidechains) are seeded as it made them, then `reread` replaces them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mempald.config import parse_settings
from mempald.embed.embedder import Embedder
from mempald.ingest.drawers import SourceInfo
from mempald.ingest.queues import BACKFILL
from mempald.ingest.review import SourceReview
from mempald.normalize.model import CursorContext, Exchange
from mempald.runtime.root import Backends, Daemon
from mempald.search import ranking
from mempald.sources.reader import prefix_hash
from mempald.state.db import Cursor, State
from mempald.store.base import Filters
from mempald.store.edge import EdgeStore
from tests.conftest import copy_tree

THANOS = "claude_code/real2/projects/-Users-jeremy-Projects-Thanos"
SESSION = "d4983b3a-ddde-4a22-9bff-98a04c19bfe7"


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def old_exchanges(folder: Path) -> dict[Path, list[Exchange]]:
    """What the adapter before issue #17 stored for these files (its rules: every text user line of a sidechain
    file is a prompt, agent ``claude/subagent:<id>``, no title, no parent)."""
    out: dict[Path, list[Exchange]] = {}
    for name in ("agent-ae96867.jsonl", "agent-a7cbd0e.jsonl", "agent-a58cb7d.jsonl"):
        recs = records(folder / name)
        first, reply = recs[0], next(r for r in recs[1:] if r["type"] == "assistant")
        msg = first["message"]
        assert isinstance(msg, dict) and isinstance(reply["message"], dict)
        text = next(b["text"] for b in reply["message"]["content"] if b.get("type") == "text")
        out[folder / name] = [Exchange(
            source_kind="claude_code", session_id=SESSION, key=str(first["uuid"]), user=str(msg["content"]),
            assistant=str(text), timestamp=str(first["timestamp"]), cwd=str(first["cwd"]),
            agent=f"claude/subagent:{first['agentId']}", offset=0)]
    return out


@pytest.mark.anyio
@pytest.mark.timeout(600)
async def test_reread_replaces_what_the_old_adapter_stored(home: Path, formats_dir: Path, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    copy_tree(formats_dir / THANOS, projects / "Thanos")
    folder = projects / "Thanos"
    settings = parse_settings({"sources": {"claude_projects": str(projects), "codex_sessions": ""},
                               "ingest": {"lock_timeout_s": 60}})
    embedder = Embedder(models_dir=tmp_path / "models")
    store = EdgeStore(tmp_path / "store", embedder.dim, ranker=ranking.rank)
    state = State(tmp_path / "state.sqlite3")
    daemon = Daemon(settings, Backends(embedder, store, None, state))
    try:
        source = next(s for s in daemon.sources if s.root == projects.resolve())  # (beside ~/.claude's memories)
        machine = daemon.ingestor.machine
        old_ids: dict[Path, list[str]] = {}
        for path, exchanges in old_exchanges(folder).items():
            info = SourceInfo(kind="claude_code", path=str(path), source_key=source.key, machine=machine, user="u")
            written = await daemon.ingestor.writer.write(exchanges, info, BACKFILL)
            old_ids[path] = written.ids
            st = path.stat()  # the old daemon had read each file to its end
            state.put_cursor(Cursor(str(path), source.key, st.st_ino, st.st_size, st.st_mtime, st.st_size,
                                    prefix_hash(path, st.st_size), CursorContext(format="claude_code"), 1))
        session_file = folder / f"{SESSION}.jsonl"
        res = await daemon.ingestor.ingest_path(session_file, source)  # the session itself read as before
        main_ids = set(res.ids)

        review = SourceReview(daemon.settings, daemon.sources, daemon.ingestor, daemon.state, daemon.store, embedder,
                              machine, "u", lambda: None)
        out = await review.reread(str(folder))
        assert out["files"] == 4 and not out["errors"]
        warmups = [folder / "agent-ae96867.jsonl", folder / "agent-a7cbd0e.jsonl"]
        assert out["removed"] == sum(len(old_ids[w]) for w in warmups) == 3  # the two Warmup "prompts" (3 drawers)

        async def live(path: Path) -> dict[str, dict[str, object]]:
            found: dict[str, dict[str, object]] = {}
            async for page in daemon.store.pages(Filters(source_path=(str(path),))):
                found.update({p.id: dict(p.payload) for p in page})
            return found

        for w in warmups:
            assert await live(w) == {}
        sub = await live(folder / "agent-a58cb7d.jsonl")
        (sub_id,) = old_ids[folder / "agent-a58cb7d.jsonl"]
        assert sub_id in sub  # the same exchange: the same id (chunk 0), its drawer replaced
        assert {p["exchange_key"] for p in sub.values()} == {sub[sub_id]["exchange_key"]}
        payload = sub[sub_id]
        assert payload["kind"] == "subagent" and not str(payload["text"]).startswith(">")
        assert str(payload["text"]).startswith("[sub-agent claude-code-guide task] Look up how Claude Code hooks")
        parent = await daemon.store.retrieve([str(payload["parent_id"])])
        assert parent and parent[0].payload["session_id"] == SESSION and "Task" in parent[0].payload["tools"]
        session = await live(session_file)
        assert set(session) == main_ids  # stable ids; the title found in the file is on every drawer
        assert {p["title"] for p in session.values()} == {"Load Life OS State Check"}
        total = inspected = 0
        for p in folder.iterdir():
            total += len(await live(p))
            inspected += (await review.inspect(str(p), "auto", True))["drawers"]
        assert total == inspected
        again = await review.reread(str(folder))  # nothing left to correct
        assert again["removed"] == 0 and again["written"] == 0
    finally:
        store.close()
        state.close()
