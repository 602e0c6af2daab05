"""OpenCode, live, through a real daemon: a home laid out as OpenCode lays it out (its storage folder of small
JSON files, its SQLite database, an export dropped in a watched folder), found and watched by default; OpenCode
writes a new prompt as it does (a message file and its part files; message and part rows), and the new prompt is
found by search, with no duplicate of anything stored before."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.unit.normalize.opencode_samples import EXPORT, STORAGE, build_db

MAIN_SESSION = "ses_9c8e9f580001e71lHFE8l6hlvY"
LONG_SESSION = "ses_9ce10518002fdaJPZr0JIDRobc"
FRESH_S = 2.0  # issue 42: a new prompt is keyword-searchable within 2 s of the agent writing it


def hits(d: Daemon, query: str, **kw: Any) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = d.call("search", {"query": query, "limit": 50, **kw})["hits"]
    return result


def mempal(d: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mempal.cli.main", *args], capture_output=True, text=True, env=d.env,
                          timeout=120)


def keys_of(found: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(h["session_id"], h["exchange_key"], int(h.get("chunk_index") or 0)) for h in found]


def data_dir(home: Path) -> Path:
    return home / ".local" / "share" / "opencode"


def _write(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False))


def new_prompt_files(storage: Path, session: str, word: str, stamp: int) -> str:
    """OpenCode 1.x writing a prompt and its answer: the user message file, its text part, then the answer."""
    user, answer = f"msg_f{stamp:011x}U1wXyZ", f"msg_f{stamp:011x}A1wXyZ"
    _write(storage / "message" / session / f"{user}.json", {
        "id": user, "sessionID": session, "role": "user", "time": {"created": stamp}, "summary": {"diffs": []},
        "agent": "build", "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}})
    _write(storage / "part" / user / f"prt_f{stamp:011x}P1wXyZ.json", {
        "id": f"prt_f{stamp:011x}P1wXyZ", "sessionID": session, "messageID": user, "type": "text",
        "text": f"Why does the {word} scheduler drop the cancellation scope on retry?",
        "time": {"start": stamp, "end": stamp}})
    _write(storage / "message" / session / f"{answer}.json", {
        "id": answer, "sessionID": session, "role": "assistant", "time": {"created": stamp + 10},
        "parentID": user, "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build",
        "agent": "build", "path": {"cwd": "/home/ana/src/tidewater", "root": "/home/ana/src/tidewater"}, "cost": 0,
        "tokens": {"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}}})
    _write(storage / "part" / answer / f"prt_f{stamp:011x}P2wXyZ.json", {
        "id": f"prt_f{stamp:011x}P2wXyZ", "sessionID": session, "messageID": answer, "type": "text",
        "text": "The retry wrapper opens a new task group, so the outer scope is lost.",
        "time": {"start": stamp + 20, "end": stamp + 30}})
    return user


def find_new(d: Daemon, word: str, key: str) -> list[dict[str, Any]]:
    return [h for h in hits(d, word) if h["exchange_key"] == key]


@pytest.mark.timeout(420)
def test_opencode_storage_folder_is_watched_and_a_new_prompt_is_found(daemon: Daemon, home: Path) -> None:
    storage = data_dir(home) / "storage"
    shutil.copytree(STORAGE, storage)
    daemon.start()
    daemon.idle(timeout=240)
    before = hits(daemon, "Why does test_retry_backoff flake on CI", agent="opencode")
    first = [h for h in before if h["session_id"] == MAIN_SESSION]
    assert first and first[0]["wing"] == "tidewater" and first[0]["agent"] == "opencode"
    assert "Called the Read tool" not in first[0]["text"], "OpenCode's synthetic text is no prompt"
    japanese = hits(daemon, "この再試行ロジックを日本語で説明してください")
    assert any("指数バックオフ" in h["text"] for h in japanese)
    stored = {h["exchange_key"] for h in hits(daemon, "port scheduler module part", limit=100)}

    word = "zqkestrelwing"
    t0 = time.monotonic()
    key = new_prompt_files(storage, LONG_SESSION, word, 1760200000000)
    found = daemon.wait_for(lambda: find_new(daemon, word, key), timeout=60, interval=0.05)
    took = time.monotonic() - t0
    assert len(found) == 1 and found[0]["session_id"] == LONG_SESSION
    assert "task group, so the outer scope is lost" in found[0]["text"]
    print(f"opencode storage: new prompt searchable after {took:.2f}s")

    daemon.idle(timeout=120)
    again = hits(daemon, "port scheduler module part", limit=100)
    assert {h["exchange_key"] for h in again} >= stored
    assert len(keys_of(again)) == len(set(keys_of(again))), "no exchange stored twice"
    assert len(find_new(daemon, word, key)) == 1
    st = mempal(daemon, "status", "--json")
    assert st.returncode == 0 and "opencode" in st.stdout.lower()


@pytest.mark.timeout(420)
def test_opencode_database_is_watched_and_new_rows_are_found(daemon: Daemon, home: Path) -> None:
    db = data_dir(home) / "opencode.db"
    db.parent.mkdir(parents=True)
    build_db(STORAGE, db)
    shutil.copytree(STORAGE, data_dir(home) / "storage")  # migrated: OpenCode 1.2 leaves the old files beside
    daemon.start()
    daemon.idle(timeout=240)
    main = [h for h in hits(daemon, "Use the explore agent to find where the backoff ceiling is configured")
            if h["session_id"] == MAIN_SESSION]
    assert main and main[0]["agent"] == "opencode" and main[0]["wing"] == "tidewater"
    sub = hits(daemon, "maximum backoff ceiling report file and line", agent="opencode/subagent")
    assert sub and all(h["kind"] == "subagent" for h in sub)
    stored = keys_of(hits(daemon, "port scheduler module part", limit=100))
    assert len(stored) == len(set(stored)), "a session read from the database and the old files is stored once"

    word = "zqheronfield"
    stamp = int(time.time() * 1000)
    user = {"role": "user", "time": {"created": stamp}, "agent": "build",
            "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}
    text = {"type": "text", "text": f"Make the {word} retry budget configurable per queue", "time": {"start": stamp}}
    con = sqlite3.connect(db)  # OpenCode's own write: a message row, then its part row, in WAL mode
    con.execute("INSERT INTO message VALUES (?,?,?,?,?)", ("msg_f0000000001aNewRowXyZ", LONG_SESSION, stamp, stamp,
                                                          json.dumps(user)))
    con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", ("prt_f0000000001aNewRowXyZ", "msg_f0000000001aNewRowXyZ",
                                                         LONG_SESSION, stamp, stamp, json.dumps(text)))
    con.commit()
    t0 = time.monotonic()
    found = daemon.wait_for(lambda: find_new(daemon, word, "msg_f0000000001aNewRowXyZ"), timeout=60, interval=0.05)
    took = time.monotonic() - t0
    assert len(found) == 1
    print(f"opencode database: new prompt searchable after {took:.2f}s")
    # the answer streams in: its part row updated in place, again and again
    answer = {"role": "assistant", "parentID": "msg_f0000000001aNewRowXyZ", "time": {"created": stamp + 5},
              "modelID": "claude-sonnet-4-5", "path": {"cwd": "/home/ana/src/tidewater"}}
    con.execute("INSERT INTO message VALUES (?,?,?,?,?)", ("msg_f0000000002aNewRowXyZ", LONG_SESSION, stamp + 5,
                                                          stamp + 5, json.dumps(answer)))
    con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", ("prt_f0000000002aNewRowXyZ", "msg_f0000000002aNewRowXyZ",
                                                         LONG_SESSION, stamp + 5, stamp + 5, "{}"))
    for i in range(1, 21):
        streamed = {"type": "text", "text": "Per-queue budgets: " + " ".join(f"t{j}" for j in range(i))
                    + (" zqbudgetdone" if i == 20 else "")}
        con.execute("UPDATE part SET data = ?, time_updated = ? WHERE id = ?",
                    (json.dumps(streamed), stamp + 5 + i, "prt_f0000000002aNewRowXyZ"))
        con.commit()
        time.sleep(0.02)
    con.close()
    done = daemon.wait_for(lambda: [h for h in hits(daemon, "zqbudgetdone") if h["exchange_key"] ==
                                    "msg_f0000000001aNewRowXyZ" and "t19 zqbudgetdone" in h["text"]], timeout=60)
    assert len(done) == 1 and word in done[0]["text"], "the prompt and its whole streamed answer, in one drawer"
    daemon.idle(timeout=120)
    # reading a WAL database writes the reader's marks in its -shm: that is no change to read again (it was a loop
    # that re-read the database ~10 times a second, counted here in the thousands)
    source = next(s for s in daemon.call("status")["sources"] if s["path"] == str(db.parent))
    assert source["exchanges"] < 400, source
    daemon.idle(timeout=120)
    again = keys_of(hits(daemon, "port scheduler module part", limit=100))
    assert set(again) >= set(stored) and len(again) == len(set(again)), "no exchange stored twice"


@pytest.mark.timeout(300)
def test_an_export_dropped_in_a_watched_folder_adds_nothing_twice(daemon: Daemon, home: Path,
                                                                   tmp_path: Path) -> None:
    shutil.copytree(STORAGE, data_dir(home) / "storage")
    exports = tmp_path / "exports"
    exports.mkdir()
    daemon.start()
    assert mempal(daemon, "watch", "add", str(exports)).returncode == 0
    daemon.idle(timeout=240)
    live = keys_of(hits(daemon, "Here is the CI screenshot, does the failure match?"))
    shutil.copy(next(EXPORT.glob("ses_*.json")), exports / "tidewater-flaky-retry.json")
    # the export's drawers are the live session's: the same ids, now citing the export
    daemon.wait_for(lambda: any(str(h.get("source_path", "")).startswith(str(exports)) for h in hits(
        daemon, "Here is the CI screenshot")), timeout=60)
    daemon.idle(timeout=120)
    after = keys_of(hits(daemon, "Here is the CI screenshot, does the failure match?"))
    assert set(after) == set(live) and len(after) == len(set(after)), \
        "an export of a session already read live is the same drawers"


@pytest.mark.timeout(420)
def test_a_streamed_answer_and_a_half_written_file_end_as_one_drawer(daemon: Daemon, home: Path) -> None:
    """OpenCode rewrites a part file as its text streams in, and a file may be read mid-write: the exchange ends
    with the whole answer, stored once; ``inspect`` accounts for every file of the session."""
    storage = data_dir(home) / "storage"
    shutil.copytree(STORAGE, storage)
    daemon.start()
    daemon.idle(timeout=240)
    stamp = 1760300000000
    user, answer = f"msg_f{stamp:011x}U2wXyZ", f"msg_f{stamp:011x}A2wXyZ"
    prompt_part = storage / "part" / user / f"prt_f{stamp:011x}P3wXyZ.json"
    whole = json.dumps({"id": prompt_part.stem, "sessionID": LONG_SESSION, "messageID": user, "type": "text",
                        "text": "How should the zqosprey backoff cap interact with jitter?"})
    _write(storage / "message" / LONG_SESSION / f"{user}.json", {
        "id": user, "sessionID": LONG_SESSION, "role": "user", "time": {"created": stamp}, "agent": "build"})
    prompt_part.parent.mkdir(parents=True)
    prompt_part.write_text(whole[: len(whole) // 2])  # mid-write: an event for a file that is not JSON yet
    prompt_part.write_text(whole)
    _write(storage / "message" / LONG_SESSION / f"{answer}.json", {
        "id": answer, "sessionID": LONG_SESSION, "role": "assistant", "time": {"created": stamp + 10},
        "parentID": user, "modelID": "claude-sonnet-4-5", "path": {"cwd": "/home/ana/src/tidewater"}})
    part = storage / "part" / answer / f"prt_f{stamp:011x}P4wXyZ.json"
    words = [f"w{i}" for i in range(30)]
    for i in range(1, len(words) + 1):  # the answer streams in: its part file rewritten 30 times
        _write(part, {"id": part.stem, "sessionID": LONG_SESSION, "messageID": answer, "type": "text",
                      "text": "Cap first, then jitter: " + " ".join(words[:i]) + (" zqfinalword" if i == 30 else "")})
        time.sleep(0.02)  # the writer's pace (tokens arriving), not a wait for the daemon
    found = daemon.wait_for(lambda: [h for h in hits(daemon, "zqfinalword") if h["exchange_key"] == user
                                     and "w29 zqfinalword" in h["text"]], timeout=60, interval=0.05)
    assert len(found) == 1 and "zqosprey" in found[0]["text"]
    daemon.idle(timeout=120)
    mine = [h for h in hits(daemon, "zqosprey backoff cap interact with jitter") if h["exchange_key"] == user]
    assert len(mine) == 1, "one drawer for the exchange, however often its files were rewritten"
    out = mempal(daemon, "inspect", str(storage / "message" / LONG_SESSION), "--counts-only", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert sum(report["accounted"].values()) == len(list((storage / "message" / LONG_SESSION).glob("*.json"))) + sum(
        len(list((storage / "part" / p.stem).glob("*.json"))) for p in (storage / "message" / LONG_SESSION).glob(
            "*.json")) + 2, "every file of the session (and its session and project records) accounted for"


@pytest.mark.timeout(420)
def test_kilos_database_is_found_in_its_place_and_read(daemon: Daemon, home: Path) -> None:
    """Kilo (an OpenCode fork) keeps its sessions in ``$XDG_DATA_HOME/kilo/kilo.db``, OpenCode's schema: watched
    by default, searchable under agent ``kilo``, listed in status."""
    db = home / ".local" / "share" / "kilo" / "kilo.db"
    db.parent.mkdir(parents=True)
    build_db(STORAGE, db)
    daemon.start()
    daemon.idle(timeout=240)
    main = [h for h in hits(daemon, "Use the explore agent to find where the backoff ceiling is configured")
            if h["session_id"] == MAIN_SESSION]
    assert main and main[0]["agent"] == "kilo" and main[0]["source_kind"] == "kilo" and main[0]["wing"] == "tidewater"
    assert hits(daemon, "maximum backoff ceiling report file and line", agent="kilo/subagent")
    agents = {a["agent"]: a for a in daemon.call("status")["agents"]}
    assert agents["Kilo"]["found"] and agents["Kilo"]["watched"] and agents["Kilo"]["exchanges"] > 0
