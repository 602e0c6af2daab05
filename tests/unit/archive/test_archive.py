"""The byte-exact archive (issue 45): kept incrementally as a transcript grows, a rewritten or shrunk file kept
as a new version beside the old one, small appends merged, chunks checksummed and 0600, a full disk that pauses
archiving without losing bytes, a damaged chunk named and refused, a session restored byte for byte."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from mempald.archive import keeper, restore, views
from mempald.archive.chunks import ArchiveDamaged, read_chunk
from mempald.archive.keeper import MERGE_AT, Archive
from mempald.config import ArchiveSettings, Settings, SettingsRef, StoreSettings
from mempald.errors import InvalidInput, NotFound
from mempald.normalize import registry
from mempald.normalize.model import CursorContext
from mempald.sources.roots import Source

SID = "a1450000-0000-4000-8000-000000000001"


def line(i: int, text: str = "") -> bytes:
    body = text or f"exchange {i}: the retry stage of the ingest pipeline handles case {i} " * 3
    return (f'{{"type":"user","sessionId":"{SID}","uuid":"u{i}","message":{{"role":"user","content":"{body}"}}}}'
            "\n").encode()


def make(tmp_path: Path, *, min_free_mb: int = 0, reserve_mb: int = 0) -> Archive:
    settings = Settings(store=StoreSettings(min_free_mb=min_free_mb), archive=ArchiveSettings(reserve_mb=reserve_mb))
    return Archive(tmp_path / "data" / "archive", SettingsRef(settings))


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "claude" / "projects"
    path = root / "-home-u-proj" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    return root, path


def keep(a: Archive, root: Path, path: Path, session: str = SID) -> keeper.Kept:
    return a.keep_file(path, root, session, "proj", "claude_code")


def test_a_growing_transcript_is_archived_incrementally_and_restored_byte_for_byte(
        tmp_path: Path, store: tuple[Path, Path]) -> None:
    root, path = store
    a = make(tmp_path)
    path.write_bytes(b"".join(line(i) for i in range(5)))
    first = keep(a, root, path)
    assert (first.appended, first.version) == (path.stat().st_size, 1)
    with path.open("ab") as fh:
        fh.write(line(5) + b'{"partial')  # a live session: the last line not finished yet
    second = keep(a, root, path)
    assert second.appended == len(line(5)) + len(b'{"partial') and second.version == 1 and not second.new_version
    assert keep(a, root, path).appended == 0  # nothing new: nothing written
    unit = a.index.unit(str(path))
    assert unit is not None and restore.rebuild(a, unit) == path.read_bytes()
    assert [c.start for c in a.index.chunks(str(path))] == [0, first.appended]
    original = path.read_bytes()
    path.unlink()
    out = restore.restore_session(a, SID)
    assert out["written"] == 1 and path.read_bytes() == original
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for f in (a.folder / "index.sqlite3", *(a.folder / c.file for c in a.index.chunks(str(path)))):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f


def test_a_shrunk_or_rewritten_transcript_keeps_every_version(tmp_path: Path, store: tuple[Path, Path]) -> None:
    root, path = store
    a = make(tmp_path)
    v1 = b"".join(line(i) for i in range(8))
    path.write_bytes(v1)
    keep(a, root, path)
    v2 = b"".join(line(i) for i in range(3))  # shrunk (a compaction, a rewrite)
    path.write_bytes(v2)
    assert keep(a, root, path).new_version
    v3 = line(0, "rewritten in place with other words entirely, the same length as before ...") + v2[len(line(0)):]
    path.write_bytes(v3)
    assert keep(a, root, path).version == 3
    versions = {}
    for c in a.index.chunks(str(path)):
        versions.setdefault(c.version, b"")
        versions[c.version] += read_chunk(a.folder / c.file, c.sha256, c.length)
    assert versions == {1: v1, 2: v2, 3: v3}  # nothing archived before is lost
    assert views.status(a)["versions"] == 3


def test_a_live_sessions_small_appends_are_merged_into_one_chunk(tmp_path: Path, store: tuple[Path, Path]) -> None:
    root, path = store
    a = make(tmp_path)
    for i in range(MERGE_AT + 4):
        with path.open("ab") as fh:
            fh.write(line(i))
        keep(a, root, path)
    chunks = a.index.chunks(str(path))
    assert len(chunks) < MERGE_AT
    unit = a.index.unit(str(path))
    assert unit is not None and restore.rebuild(a, unit) == path.read_bytes()
    on_disk = {p.relative_to(a.folder).as_posix() for p in a.folder.rglob("*.zst")}
    assert on_disk == {c.file for c in chunks}  # the merged chunks' files are gone


def test_restore_never_replaces_a_different_file_without_force(tmp_path: Path, store: tuple[Path, Path]) -> None:
    root, path = store
    sub = path.parent / SID / "subagents" / "agent-a1b2c3.jsonl"
    sub.parent.mkdir(parents=True)
    a = make(tmp_path)
    path.write_bytes(line(1) + line(2))
    sub.write_bytes(line(3))
    keep(a, root, path)
    keep(a, root, sub)
    path.write_bytes(b"someone else's bytes\n")
    with pytest.raises(InvalidInput, match="--force"):
        restore.restore_session(a, SID)
    assert path.read_bytes() == b"someone else's bytes\n"
    dry = restore.restore_session(a, SID, dry_run=True)
    assert dry["written"] == 0 and {f["action"] for f in dry["files"]} == {"same", "replace"}
    other = tmp_path / "elsewhere"
    moved = restore.restore_session(a, SID, to=str(other))
    assert (other / "-home-u-proj" / f"{SID}.jsonl").read_bytes() == line(1) + line(2)
    assert (other / "-home-u-proj" / SID / "subagents" / "agent-a1b2c3.jsonl").read_bytes() == line(3)
    assert moved["written"] == 2
    forced = restore.restore_session(a, SID, force=True)
    assert path.read_bytes() == line(1) + line(2)
    assert [f["action"] for f in forced["files"] if f["path"] == str(path)] == ["replaced"]
    with pytest.raises(NotFound):
        restore.restore_session(a, "no-such-session")


def test_a_damaged_chunk_is_named_and_its_session_refused(tmp_path: Path, store: tuple[Path, Path]) -> None:
    root, path = store
    a = make(tmp_path)
    path.write_bytes(b"".join(line(i) for i in range(20)))
    keep(a, root, path)
    chunk = a.folder / a.index.chunks(str(path))[0].file
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))
    found = views.damaged(a)
    assert [d["chunk"] for d in found] == [str(chunk)] and found[0]["session"] == SID
    path.unlink()
    with pytest.raises(ArchiveDamaged, match=f"session {SID} is not restored.*{chunk.name}"):
        restore.restore_session(a, SID)
    assert not path.exists()  # no corrupt file written
    assert not list(path.parent.iterdir())


def test_a_disk_almost_full_pauses_archiving_and_loses_no_bytes(tmp_path: Path, store: tuple[Path, Path]) -> None:
    root, path = store
    a = make(tmp_path, min_free_mb=1, reserve_mb=10**9)  # more than any disk holds: archiving must pause
    path.write_bytes(line(1))
    kept = keep(a, root, path)
    assert kept.paused and "archiving is paused (ingest goes on)" in kept.paused
    st = views.status(a)
    assert st["paused"] and st["files"] == 0 and st["reads_not_archived"] == 1
    a.settings.swap(Settings(store=StoreSettings(min_free_mb=0)))  # space is back
    with path.open("ab") as fh:
        fh.write(line(2))
    assert keep(a, root, path).appended == len(line(1) + line(2))
    assert not views.status(a)["paused"]


def test_a_write_failing_for_space_pauses_archiving_and_leaves_nothing_half_written(
        tmp_path: Path, store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, path = store
    a = make(tmp_path)
    path.write_bytes(line(1))

    def full(target: Path, raw: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(keeper, "write_chunk", full)  # the disk fills under the write (an edge: the filesystem)
    assert "the disk is full" in keep(a, root, path).paused
    assert a.index.unit(str(path)) is None and not list(a.folder.rglob("*.zst"))
    monkeypatch.undo()
    assert keep(a, root, path).appended == len(line(1))


def test_what_was_forgotten_is_removed_and_never_archived_again(tmp_path: Path, store: tuple[Path, Path]) -> None:
    root, path = store
    a = make(tmp_path)
    path.write_bytes(line(1))
    keep(a, root, path)
    assert views.remove(a, sessions=[SID]) == {"files": 1, "bytes": len(line(1))}
    assert not list(a.folder.rglob("*.zst")) and views.status(a)["files"] == 0
    a.forgotten = lambda p, s: s == SID
    with path.open("ab") as fh:
        fh.write(line(2))
    assert keep(a, root, path).appended == 0 and views.status(a)["files"] == 0


def test_list_names_sessions_whose_transcript_was_deleted(tmp_path: Path, store: tuple[Path, Path]) -> None:
    root, path = store
    a = make(tmp_path)
    path.write_bytes(line(1))
    keep(a, root, path)
    other = path.with_name("b1450000-0000-4000-8000-000000000002.jsonl")
    other.write_bytes(line(2))
    a.keep_file(other, root, "b1450000-0000-4000-8000-000000000002", "other", "claude_code")
    assert views.listing(a)["count"] == 2 and views.listing(a, wing="other")["count"] == 1
    assert views.listing(a, deleted_upstream=True)["count"] == 0
    path.unlink()
    gone = views.listing(a, deleted_upstream=True)["sessions"]
    assert [s["session"] for s in gone] == [SID]
    st = views.status(a)
    assert st["sessions"] == 2 and st["bytes"] == len(line(1)) + len(line(2)) and st["bytes_on_disk"] > 0


def test_archiving_is_declared_by_the_format_and_configurable_per_source(tmp_path: Path) -> None:
    claude, text = registry.by_name("claude_code"), registry.TEXT
    agents = Source("claude_code:/h/.claude/projects", Path("/h/.claude/projects"), "convos", "claude_code")
    notes = Source("convos:/h/notes", Path("/h/notes"), "convos", "auto")
    ctx = CursorContext(session_id=SID, cwd="/home/u/proj")

    def wanted(**archive: Any) -> tuple[bool, bool]:
        a = Archive(tmp_path / "a", SettingsRef(Settings(archive=ArchiveSettings(**archive))))
        return a.wanted(agents, claude, ctx), a.wanted(notes, text, ctx)

    assert claude.archive and not text.archive
    assert wanted() == (True, False)  # on by default for the agents' own transcripts only
    assert wanted(off=("claude_code:/h/.claude/projects",)) == (False, False)  # by source key
    assert wanted(off=("/h/.claude/projects",), on=("/h/notes",)) == (False, True)  # by root folder
    assert wanted(enabled=False, on=("/h/notes",)) == (False, False)  # all off


@pytest.mark.anyio
async def test_a_damaged_index_never_stops_the_ingest(tmp_path: Path, store: tuple[Path, Path]) -> None:
    root, path = store
    a = make(tmp_path)
    a.folder.mkdir(parents=True)
    (a.folder / "index.sqlite3").write_bytes(b"not a database at all, " * 100)
    path.write_bytes(line(1))
    source = Source("claude_code:x", root, "convos", "claude_code")
    await a.keep(path, source, registry.by_name("claude_code"), CursorContext(session_id=SID))  # logged, not raised
    assert path.read_bytes() == line(1)
