"""The contract every registered format keeps, run over each format's samples (real files of
``../shared/fixtures/formats`` read by path, and a note written here for plain text), through the daemon's own
ingest into a real embedded store in a temp dir:

- every line or record is accounted for (the ledger: stored, folded or skipped with a reason, each once);
- exchange ids are stable: reading the unit again, from scratch, gives the same drawer ids and texts;
- a grown unit stores only its new exchanges (lines appended to a transcript; a document rewritten with more),
  ending with exactly the drawers of reading the whole unit at once;
- a truncated or rewritten unit never duplicates a drawer.

A new format registered in ``mempald.normalize.registry`` must name its samples in ``SAMPLES`` (the first test
fails until it does).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from mempald.config import parse_settings
from mempald.embed.embedder import Embedder
from mempald.ingest.queues import BACKFILL
from mempald.ingest.units import gather
from mempald.normalize import registry
from mempald.normalize.format import Input
from mempald.normalize.model import CursorContext
from mempald.runtime.root import Backends, Daemon
from mempald.search import ranking
from mempald.state.db import State
from mempald.store.base import Filters
from mempald.store.edge import EdgeStore
from tests.conftest import FORMATS, REPO, lines_in
from tests.copilot_samples import write_cli_session, write_json_session, write_jsonl_session
from tests.cursor_agent_samples import build_chat
from tests.cursor_samples import build_cursor_user
from tests.unit.normalize.test_cursor_export import EXPORT, SPECSTORY_V2

pytestmark = pytest.mark.anyio

NOTE = ("# Deploy notes\n\nWe deploy the docs with mkdocs gh-deploy from main.\n\n"
        "## Rollback\n\nA bad deploy is rolled back by re-running the previous tag's workflow.\n")

# Each registered format's samples: paths under ../shared/fixtures/formats; "repo:" + a path of this repository
# (samples written here in the real shape, where no real file is public); ":" + a name: written by the test
SAMPLES: dict[str, tuple[str, ...]] = {
    "claude_code": ("claude_code/short_session_v2.1.38.jsonl",
                    "claude_code/real2/projects/-Users-jeremy-Projects-Thanos/"
                    "d4983b3a-ddde-4a22-9bff-98a04c19bfe7.jsonl"),
    "codex": ("codex/rtchess_turn_aborted_excerpt.jsonl",
              "codex/localpush_redacted_compaction_excerpt.jsonl"),
    "gemini": ("gemini_cli/session-2025-11-21T20-38-8016034b.json",
               "gemini_cli/real2/tmp/9cfc5cfa6f8fd18d3d1ecfcfd77bd22358803e86899edd66537e36fc1bc8652a/"
               "checkpoint-kvantum.json",
               "repo:tests/fixtures/gemini/checkpoint-importer.json"),
    "antigravity": ("repo:tests/fixtures/antigravity/brain/3f2a9c1e-7b4d-4e8a-9c2f-1d6e5b8a0c47/"
                    ".system_generated/logs/transcript_full.jsonl",),
    "aider": ("aider/real2/Ahmedrali__rfp_response_platform__backend/.aider.chat.history.md",),
    "chatgpt": ("chatgpt/conversations.subset.json",),
    "claude_ai": ("repo:tests/fixtures/claude_ai/conversations.json",),
    "slack": ("slack/slackdump_export_2025",),
    "cline": ("repo:tests/fixtures/cline/cline_vscode_task/1773478931000",
              "repo:tests/fixtures/cline/roo_parent_task/0195f3a0-1c2d-7e3f-8a9b-0c1d2e3f4a5b",
              "repo:tests/fixtures/cline/roo_subtask/0195f3c2-7b1e-7a41-9c2e-5d8f6e2a1b07",
              "repo:tests/fixtures/cline/cline_api_only/1741500000000",
              "repo:tests/fixtures/cline/cline_sdk_session/1781203311842_k3f9q"),
    "opencode": ("repo:tests/fixtures/opencode/storage",),
    "opencode_db": ("repo:tests/fixtures/opencode/opencode.db",),
    "kilo_db": (":kilo.db",),
    "opencode_export": ("repo:tests/fixtures/opencode/export/ses_9c8e9f580001e71lHFE8l6hlvY.json",),
    "text": (":note.md",),
    "cursor": (":state.vscdb",),  # a Cursor store in the real schema, built by tests/cursor_samples.py
    "cursor_agent": (":store.db",),  # a cursor-agent chat store in the real shape, tests/cursor_agent_samples.py
    "copilot": (":chat_session.json", ":chat_session.jsonl"),  # tests/copilot_samples.py
    "copilot_cli": (":events.jsonl",),
    "specstory": (":specstory.md",),  # tests/unit/normalize/test_cursor_export.py
    "cursor_export": (":cursor_export.md",),
    "cursor_transcript": tuple(  # Cursor's agent transcripts, written here in the real shapes
        "repo:tests/fixtures/cursor_transcript/projects/home-dev-code-spotter/agent-transcripts/" + rel for rel in (
            "4f0c2a9e-5b1d-4c7e-9a3f-2d8e6b1c0a57/4f0c2a9e-5b1d-4c7e-9a3f-2d8e6b1c0a57.jsonl",
            "4f0c2a9e-5b1d-4c7e-9a3f-2d8e6b1c0a57/subagents/9b2e7d41-3c6a-4f58-8e1d-0a7c5b3f2e96.jsonl",
            "c3a81f0e-6d2b-4e95-b7c4-18f2a9d05e3b.txt")),
    "agent_memory": (
        "repo:tests/fixtures/agent_memory/.claude/projects/-home-u-heronry/memory/feedback_real_database.md",
        "repo:tests/fixtures/agent_memory/.codex/memories/memory_summary.md"),
}
WRITTEN: dict[str, Callable[[Path], Path]] = {
    ":chat_session.json": write_json_session, ":chat_session.jsonl": write_jsonl_session,
    ":events.jsonl": write_cli_session,
    ":specstory.md": lambda folder: _write(folder / "2026-11-02_09-12Z-flaky.md", SPECSTORY_V2),
    ":cursor_export.md": lambda folder: _write(folder / "cursor_rate_limiter.md", EXPORT),
    # Kilo (an OpenCode fork) keeps OpenCode's schema: the OpenCode database sample under Kilo's name
    ":kilo.db": lambda folder: Path(shutil.copyfile(REPO / "tests/fixtures/opencode/opencode.db", folder / "kilo.db")),
}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@dataclass
class Unit:
    fmt: str
    path: Path  # the file (or folder) as the daemon reads it, inside the watched folder
    original: Path | None  # the sample it was copied from (None: written here)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def test_every_registered_format_has_samples() -> None:
    assert set(SAMPLES) == set(registry.names()), "name the samples of every registered format in SAMPLES"


def _samples() -> list[tuple[str, str]]:
    return [(fmt, rel) for fmt, rels in SAMPLES.items() for rel in rels]


@pytest.fixture(scope="module")
async def palace(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Daemon, Path]]:
    if not FORMATS.is_dir():
        pytest.skip(f"the shared format fixtures are not at {FORMATS} (they live beside the repo)")
    work = tmp_path_factory.mktemp("contract")
    watched = work / "watched"
    watched.mkdir()
    embedder = Embedder(models_dir=work / "models")
    store = EdgeStore(work / "store", embedder.dim, ranker=ranking.rank)
    state = State(work / "state.sqlite3")
    settings = parse_settings({"store": {"machine": "contract"},
                               "sources": {"claude_projects": "", "codex_sessions": "",
                                           "watch": [{"path": str(watched)}]},
                               "ingest": {"redact_secrets": False, "lock_timeout_s": 120}}, env={})
    daemon = Daemon(settings, Backends(embedder, store, None, state))
    try:
        yield daemon, watched
    finally:
        store.close()
        state.close()


def _place(fmt: str, rel: str, folder: Path) -> Unit:
    folder.mkdir(parents=True, exist_ok=True)
    if rel == ":store.db":
        return Unit(fmt, build_chat(folder / "chats"), None)
    if rel in WRITTEN:
        return Unit(fmt, WRITTEN[rel](folder), None)
    if rel.startswith(":") and registry.by_name(fmt).reads == "rows":
        return Unit(fmt, build_cursor_user(folder), None)
    if rel.startswith(":"):
        path = folder / rel[1:]
        path.write_text(NOTE)
        return Unit(fmt, path, None)
    src = (REPO / rel[5:]).resolve() if rel.startswith("repo:") else (FORMATS / rel).resolve()
    if not src.exists():
        pytest.skip(f"{src} is not in the shared fixtures")
    path = folder / src.name
    if src.is_dir():
        shutil.copytree(src, path)
    else:
        shutil.copyfile(src, path)
    return Unit(fmt, path, src)


async def _ingest(daemon: Daemon, path: Path) -> None:
    source = daemon.sources.source_for(path)
    assert source is not None, path
    await daemon.ingestor.ingest_path(path, source, BACKFILL)


async def _drawers(daemon: Daemon, under: Path) -> dict[str, str]:
    """Drawer id -> text of every drawer read from a file under ``under``."""
    out: dict[str, str] = {}
    async for page in daemon.store.pages(Filters(include_deleted=True)):
        for pt in page:
            if str(pt.payload.get("source_path") or "").startswith(str(under)):
                out[pt.id] = str(pt.payload.get("text") or "")
    return out


async def _count_by_content(daemon: Daemon, under: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    async for page in daemon.store.pages(Filters(include_deleted=True)):
        for pt in page:
            if str(pt.payload.get("source_path") or "").startswith(str(under)):
                key = f"{pt.payload.get('session_id')}|{pt.payload.get('exchange_key')}|{pt.payload.get('chunk_index')}"
                counts[key] = counts.get(key, 0) + 1
    return counts


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("fmt", "rel"), _samples())
async def test_every_record_is_accounted_for_once(fmt: str, rel: str, tmp_path: Path) -> None:
    unit = _place(fmt, rel, tmp_path)
    found = registry.by_name(fmt)
    if found.unit != "file":  # a folder or a database: read through its declared gather, as the intake reads it
        inp = gather(unit.path, found, CursorContext(format=fmt))
        parsed = found.parse(inp)
        if found.unit == "database" and all("key" in r for r in inp.rows):  # rows named by table and key (Cursor's;
            # OpenCode's rows are accounted for by their records in tests/unit/normalize/test_opencode.py)
            refs = sorted(str(a.ref) for a in parsed.ledger.entries)
            assert refs == sorted(f"{r['table']}/{r['key']}" for r in inp.rows), "every row read has one outcome"
    elif found.reads == "lines":
        lines = lines_in(unit.path.read_bytes())
        parsed = found.parse(Input(name=str(unit.path), lines=lines, context=CursorContext(format=fmt)))
        refs = [a.ref for a in parsed.ledger.entries]
        assert sorted(refs, key=str) == sorted((ln.offset for ln in lines), key=str), \
            "every line has exactly one outcome"
    else:
        detected = registry.detect_file(unit.path.read_bytes()[: registry.HEAD_BYTES], unit.path.name)
        assert detected is found, (fmt, detected)
        parsed = found.parse(Input(name=str(unit.path), data=unit.path.read_bytes(), context=CursorContext(format=fmt)))
    assert parsed.exchanges, "a sample with no exchange proves nothing"
    entries = parsed.ledger.entries
    assert len({(a.ref, a.outcome) for a in entries}) == len(entries), "no record is accounted for twice"
    stored = {a.exchange for a in entries if a.outcome == "stored"}
    assert all(a.what for a in entries if a.outcome != "stored"), "every fold and skip names what or why"
    keys = [e.key for e in parsed.exchanges]
    assert len(set(keys)) == len(keys), "exchange keys are unique in a unit"
    assert stored <= set(keys) | {""}, "what is stored is in an exchange"


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("fmt", "rel"), _samples())
async def test_ids_are_stable_grown_units_add_only_and_rewrites_never_duplicate(
        palace: tuple[Daemon, Path], fmt: str, rel: str) -> None:
    daemon, watched = palace
    base = watched / fmt / rel.replace("/", "_").strip(":")
    whole = _place(fmt, rel, base / "whole")
    await _ingest(daemon, whole.path)
    first = await _drawers(daemon, base / "whole")
    assert first, f"{rel}: nothing stored"

    # read again from scratch (a fresh copy under another name reads as the same ids there: compare texts)
    await _ingest(daemon, whole.path)
    assert await _drawers(daemon, base / "whole") == first, "a re-read changes nothing"

    found = registry.by_name(fmt)
    grown = base / "grown"
    if found.copy:  # a copy adds only drawers no other file wrote: the grown one below must be the first to write
        await daemon.store.delete(Filters(source_path=(str(whole.path),), include_deleted=True))
    if found.reads == "lines":
        data = whole.path.read_bytes()
        lines = data.splitlines(keepends=True)
        half = b"".join(lines[: max(1, len(lines) // 2)])
        target = grown / whole.path.name
        grown.mkdir(parents=True)
        target.write_bytes(half)
        await _ingest(daemon, target)
        target.write_bytes(data)  # the rest appended, as the agent writes it
        await _ingest(daemon, target)
        assert sorted((await _drawers(daemon, grown)).values()) == sorted(first.values()), \
            "a grown transcript ends with the drawers of reading it whole"
        counts = await _count_by_content(daemon, grown)
        assert max(counts.values()) == 1, "no exchange chunk stored twice"
        # truncated to half and written again (a rewrite in place): nothing is duplicated, nothing lost
        target.write_bytes(half)
        await _ingest(daemon, target)
        target.write_bytes(data)
        await _ingest(daemon, target)
        counts = await _count_by_content(daemon, grown)
        assert max(counts.values()) == 1 and len(counts) == len(first)
    elif found.reads == "document" and whole.path.suffix == ".json":
        # a rewritten document: the same content serialised again (other bytes, other size) keeps its ids
        raw = json.loads(whole.path.read_bytes())
        target = grown / whole.path.name
        grown.mkdir(parents=True)
        target.write_text(json.dumps(raw, indent=4, ensure_ascii=False))
        await _ingest(daemon, target)
        once = await _drawers(daemon, grown)
        target.write_text(json.dumps(raw, separators=(",", ":"), ensure_ascii=True))
        await _ingest(daemon, target)
        assert await _drawers(daemon, grown) == once, "a rewritten document keeps its drawers' ids"
        assert sorted(once.values()) == sorted(first.values())
    elif found.reads == "document":
        # a text document that grows (Aider appends to its history; a note is edited): cut at a line, then whole
        data = whole.path.read_bytes()
        lines = data.splitlines(keepends=True)
        target = grown / whole.path.name
        grown.mkdir(parents=True)
        target.write_bytes(b"".join(lines[: max(1, len(lines) // 2)]))
        await _ingest(daemon, target)
        target.write_bytes(data)
        await _ingest(daemon, target)
        assert sorted((await _drawers(daemon, grown)).values()) == sorted(first.values()), \
            "a grown document ends with the drawers of reading it whole"
        assert max((await _count_by_content(daemon, grown)).values()) == 1
    else:
        # folder and database units: written again whole, nothing duplicated
        target = _place(fmt, rel, grown)
        await _ingest(daemon, target.path)
        once = await _drawers(daemon, grown)
        await _ingest(daemon, target.path)
        assert await _drawers(daemon, grown) == once
        counts = await _count_by_content(daemon, grown)
        assert max(counts.values()) == 1
