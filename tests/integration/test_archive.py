"""The transcript archive through the real daemon, socket, store and CLI (issue 45): a Claude Code session and
its sub-agent archived as they are read and as they grow, deleted by the agent, listed as deleted upstream,
restored byte for byte by `mempal restore-session` and not ingested twice; forget removes its archive (the
audit says so) and exclude stops archiving; a disk almost full pauses archiving while ingest goes on; a damaged
chunk is named by `mempald doctor` and refused by restore."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.integration.test_crash import no_duplicates, points
from tests.integration.test_data_control import ENV, exchanges, ids, mempal, mempald, now_exchange, write

S1 = "e4500000-0000-4000-8000-000000000001"
S2 = "e4500000-0000-4000-8000-000000000002"
CWD = "/home/u/heronry"


def subagent(sid: str, n: int) -> str:
    """A sub-agent's transcript: its records carry the parent's session id (as Claude Code writes them)."""
    out = []
    for line in exchanges(sid, CWD, "sparrow", n).splitlines():
        rec = json.loads(line)
        rec.update(isSidechain=True, agentId="a4500aa")
        out.append(json.dumps(rec))
    return "\n".join(out) + "\n"


def archive(d: Daemon) -> dict[str, Any]:
    st: dict[str, Any] = d.call("archive_status")
    return st


def source_files(d: Daemon) -> int:
    return sum(int(s["files"]) for s in d.call("status")["sources"])


def archived_all(d: Daemon, *files: Path) -> bool:
    return archive(d)["bytes"] == sum(f.stat().st_size for f in files) and archive(d)["files"] == len(files)


@pytest.mark.timeout(300)
def test_a_deleted_session_is_restored_byte_for_byte_and_not_ingested_twice(daemon: Daemon, home: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-heronry"
    main = write(proj / f"{S1}.jsonl", exchanges(S1, CWD, "heron", 6))
    sub = write(proj / S1 / "subagents" / "agent-a4500aa.jsonl", subagent(S1, 2))
    daemon.start(extra_env=ENV)
    daemon.idle()
    daemon.wait_for(lambda: archived_all(daemon, main, sub), timeout=60)
    write(main, now_exchange(S1, CWD, "heron"))  # the live session grows: its new bytes are appended
    daemon.wait_for(lambda: archived_all(daemon, main, sub), timeout=60)
    st = archive(daemon)
    assert st["sessions"] == 1 and st["versions"] == 2 and st["ratio"] > 1
    assert daemon.call("status")["archive"]["files"] == 2
    originals = {p: p.read_bytes() for p in (main, sub)}
    daemon.idle()
    before = ids(daemon)
    files_read = source_files(daemon)

    shutil.rmtree(proj)  # Claude Code's cleanup after 30 days
    gone = daemon.wait_for(lambda: daemon.call("archive_list", {"deleted_upstream": True})["sessions"], timeout=30)
    assert [s["session"] for s in gone] == [S1] and len(gone[0]["files"]) == 2
    daemon.wait_for(lambda: source_files(daemon) < files_read, timeout=60)  # the daemon saw them go
    listed = mempal(daemon, "archive", "list", "--deleted-upstream")
    assert listed.returncode == 0 and S1 in listed.stdout and "deleted upstream" in listed.stdout, listed.stderr

    dry = mempal(daemon, "restore-session", S1, "--dry-run")
    assert dry.returncode == 0 and "would write" in dry.stdout and not main.exists(), dry.stderr
    done = mempal(daemon, "restore-session", S1)
    assert done.returncode == 0, done.stderr
    assert {p: p.read_bytes() for p in (main, sub)} == originals  # byte for byte, the sub-agent's file included
    daemon.wait_for(lambda: source_files(daemon) == files_read, timeout=60)  # read again ...
    daemon.idle()
    assert ids(daemon) == before  # ... and not ingested twice
    no_duplicates(points(daemon))
    again = archive(daemon)
    assert (again["files"], again["versions"], again["bytes"]) == (2, 2, st["bytes"])  # nor archived twice

    same = json.loads(mempal(daemon, "restore-session", S1, "--json").stdout)
    assert same["written"] == 0 and {f["action"] for f in same["files"]} == {"same"}
    elsewhere = home / "elsewhere"  # (not watched: in the agent's folder the daemon would archive the change)
    taken = write(elsewhere / "-home-u-heronry" / f"{S1}.jsonl", "other bytes\n")
    refused = mempal(daemon, "restore-session", S1, "--to", str(elsewhere))
    assert refused.returncode != 0 and "--force" in refused.stderr and taken.read_bytes() == b"other bytes\n"
    forced = mempal(daemon, "restore-session", S1, "--to", str(elsewhere), "--force")
    assert forced.returncode == 0 and taken.read_bytes() == originals[main], forced.stderr
    assert (elsewhere / "-home-u-heronry" / S1 / "subagents" / "agent-a4500aa.jsonl").read_bytes() == originals[sub]


@pytest.mark.timeout(300)
def test_forget_removes_the_archive_and_exclude_stops_archiving(daemon: Daemon, home: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-heronry"
    first = write(proj / f"{S1}.jsonl", exchanges(S1, CWD, "heron", 3))
    daemon.start(extra_env=ENV)
    daemon.idle()
    daemon.wait_for(lambda: archived_all(daemon, first), timeout=60)
    done = mempal(daemon, "forget", "--session", S1, "--yes", "--reason", "private")
    assert done.returncode == 0, done.stderr
    assert archive(daemon)["files"] == 0 and not list((home / ".local/share/mempald/archive").rglob("*.zst"))
    db = sqlite3.connect(f"file:{home / '.local/share/mempald/state.sqlite3'}?mode=ro", uri=True)
    (detail,), = db.execute("SELECT detail FROM audit WHERE action = 'forget'").fetchall()
    db.close()
    assert json.loads(detail)["archive_files_removed"] == 1 and json.loads(detail)["archive_bytes_removed"] > 0
    write(first, now_exchange(S1, CWD, "heron"))  # the forgotten session goes on: not archived again
    daemon.wait_for(lambda: ids(daemon, session_id=S1), timeout=60)
    assert archive(daemon)["files"] == 0

    added = mempal(daemon, "exclude", "add", "/home/u/secret")
    assert added.returncode == 0, added.stderr
    write(proj / f"{S2}.jsonl", exchanges(S2, "/home/u/secret", "otter", 2))
    daemon.idle()
    assert archive(daemon)["files"] == 0


@pytest.mark.timeout(300)
def test_a_disk_almost_full_stops_archiving_first_and_ingest_goes_on(daemon: Daemon, home: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-heronry"
    write(proj / f"{S1}.jsonl", exchanges(S1, CWD, "heron", 3))
    daemon.start(extra_env={**ENV, "MEMPAL_ARCHIVE_RESERVE_MB": str(10**9)})  # more than any disk has free
    st = daemon.idle()
    assert len(ids(daemon, session_id=S1)) == 3  # ingest went on
    assert st["archive"]["paused"] and st["disk"]["archive_paused"] and not st["disk"]["paused"]
    assert any("archiving is paused" in w for w in st["warnings"]) and st["archive"]["files"] == 0


@pytest.mark.timeout(300)
def test_a_damaged_chunk_is_named_by_doctor_and_its_session_refused(daemon: Daemon, home: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-heronry"
    main = write(proj / f"{S1}.jsonl", exchanges(S1, CWD, "heron", 4))
    daemon.start(extra_env=ENV)
    daemon.idle()
    daemon.wait_for(lambda: archived_all(daemon, main), timeout=60)
    chunk, = (home / ".local/share/mempald/archive").rglob("*.zst")
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))
    main.unlink()
    refused = mempal(daemon, "restore-session", S1)
    assert refused.returncode != 0 and f"session {S1} is not restored" in refused.stderr, refused.stderr
    assert chunk.name in refused.stderr and not main.exists()
    daemon.stop()
    doctor = mempald(daemon.env, "doctor")
    assert "transcript archive" in doctor.stdout and str(chunk) in doctor.stdout, doctor.stdout + doctor.stderr


@pytest.mark.timeout(300)
def test_a_backup_holds_the_archive_and_restore_brings_it_back(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-heronry"
    main = write(proj / f"{S1}.jsonl", exchanges(S1, CWD, "heron", 4))
    daemon.start(extra_env=ENV)
    daemon.idle()
    daemon.wait_for(lambda: archived_all(daemon, main), timeout=60)
    kept = archive(daemon)
    bk = tmp_path / "backups" / "one"
    taken = mempal(daemon, "backup", str(bk), "--json")
    assert taken.returncode == 0, taken.stderr
    assert json.loads(taken.stdout)["archive"]["files"] == kept["versions"] + 1  # its chunks and its index
    exported = mempal(daemon, "export", "-o", str(tmp_path / "out.jsonl"), "--json")
    assert "not included" in json.loads(exported.stdout)["archive"]  # an export says it has no archive
    daemon.stop()
    original = main.read_bytes()
    main.unlink()
    runtime = tempfile.mkdtemp(prefix="mp-")  # (a socket path must stay short)
    env = {**daemon.env, "MEMPAL_DATA_DIR": str(tmp_path / "restored" / "data"),
           "MEMPAL_CONFIG_DIR": str(tmp_path / "restored" / "config"), "MEMPAL_RUNTIME_DIR": runtime + "/run"}
    done = mempald(env, "restore", str(bk), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["archive_chunks"] == kept["versions"], done.stderr
    back = Daemon(env, tmp_path / "restored.log").start()
    try:
        assert {k: archive(back)[k] for k in ("sessions", "files", "bytes")} == \
               {k: kept[k] for k in ("sessions", "files", "bytes")}
        out = back.call("restore_session", {"id": S1})
        assert out["written"] == 1 and main.read_bytes() == original
    finally:
        back.stop()
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.mark.timeout(300)
def test_a_deleted_codex_rollout_is_restored_for_resume(daemon: Daemon, home: Path, formats_dir: Path) -> None:
    """A real Codex rollout (from ../shared/fixtures/formats): archived as Codex's folder is read, deleted,
    restored by its session id where Codex keeps it (its day folder), byte for byte."""
    name = "rollout-2026-07-03T15-12-18-019f26d2-378f-7123-aaab-925df3e2bf7b.jsonl"
    rollout = home / ".codex" / "sessions" / "2026" / "07" / "03" / name
    rollout.parent.mkdir(parents=True)
    original = (formats_dir / "codex" / "real2" / name).read_bytes()
    rollout.write_bytes(original)
    daemon.start(extra_env=ENV)
    daemon.wait_for(lambda: archived_all(daemon, rollout), timeout=120)
    status = mempal(daemon, "archive", "status")
    assert status.returncode == 0 and "1 sessions, 1 files" in status.stdout and "x smaller" in status.stdout
    rollout.unlink()
    daemon.wait_for(lambda: daemon.call("archive_list", {"deleted_upstream": True})["count"] == 1, timeout=30)
    done = mempal(daemon, "restore-session", "019f26d2-378f-7123-aaab-925df3e2bf7b")
    assert done.returncode == 0 and rollout.read_bytes() == original, done.stderr
