"""The walking skeleton, end to end: a real daemon watching a fake ~/.claude/projects, a real socket,
the real embedded store and the packaged model."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mempald.normalize.claude_code import parse_lines
from tests.conftest import Daemon, copy_tree, lines_of

LAYOUT = "claude_code/projects_layout/-home-USER-projects-spotter-worktrees-spotter-4te"


def user_line(session: str, cwd: str, text: str, uid: str, ts: str) -> str:
    return json.dumps({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd,
                       "sessionId": session, "version": "2.1.38", "gitBranch": "main", "type": "user",
                       "message": {"role": "user", "content": text}, "uuid": uid, "timestamp": ts})


def assistant_line(session: str, cwd: str, text: str, uid: str, parent: str, ts: str) -> str:
    return json.dumps({"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
                       "sessionId": session, "version": "2.1.38", "gitBranch": "main", "type": "assistant",
                       "message": {"model": "claude-opus-4-6", "id": f"msg_{uid[:8]}", "type": "message",
                                   "role": "assistant", "content": [{"type": "text", "text": text}]},
                       "uuid": uid, "timestamp": ts})


def search(d: Daemon, query: str, **kw: Any) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = d.call("search", {"query": query, **kw})["hits"]
    return hits


@pytest.mark.timeout(240)
def test_fixtures_are_searchable_with_citations(daemon: Daemon, home: Path, formats_dir: Path) -> None:
    projects = home / ".claude" / "projects"
    copy_tree(formats_dir / LAYOUT, projects / LAYOUT.rsplit("/", 1)[1])
    short = projects / "-home-marco-projects-spotter" / "55604662-cf2a-4331-851a-ec234028f8ca.jsonl"
    short.parent.mkdir()
    short.write_bytes((formats_dir / "claude_code" / "short_session_v2.1.38.jsonl").read_bytes())
    daemon.start()
    st = daemon.idle()
    # 1 (short) + 2 (main: exchange + compaction summary, keyed by its words) + 1 (subagent); the acompact agent file
    # is skipped.
    keys = {d["exchange_key"] for d in all_points(daemon)}
    assert keys == {"7d48cbd2-6615-4dd8-87f6-38f12b8167d6", "858a6db7-6721-4caa-b306-39ec1f17cbf1",
                    "compact:8767bcea3f3392ac52ebf4ac", "f1eb9ac5-1928-4a73-b605-aaf2f3a24db9"}
    # a worktree's cwd (/home/USER/projects/spotter-worktrees/spotter-4te) files under its project's wing
    assert set(st["wings"]) == {"spotter"}

    hits = search(daemon, "mix phx.server doesnt seem to start", limit=3)
    top = hits[0]
    assert top["text"].startswith("> mix phx.server doesnt seem to start")
    assert top["wing"] == "spotter"
    assert top["source_path"] == str(short)
    assert top["session_id"] == "55604662-cf2a-4331-851a-ec234028f8ca"
    assert top["timestamp"] == "2026-02-10T21:11:56.846Z"
    assert top["exchange_key"] == "7d48cbd2-6615-4dd8-87f6-38f12b8167d6"

    sub = search(daemon, "latest hex.pm versions of the opentelemetry packages", limit=5)
    assert sub[0]["agent"] == "claude/subagent:aac57f5"
    assert sub[0]["session_id"] == "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
    assert search(daemon, "phx.server", wing="no-such-wing") == []

    # The CLI cites where the hit came from.
    out = subprocess.run([sys.executable, "-m", "mempal.cli.main", "search", "phx.server", "--limit", "1"],
                         capture_output=True, text=True, env=daemon.env, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "from " + str(short) in out.stdout and "drawer" in out.stdout


@pytest.mark.timeout(240)
def test_appended_exchange_becomes_searchable(daemon: Daemon, home: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-acme"
    proj.mkdir(parents=True)
    session = "11111111-2222-3333-4444-555555555555"
    live = proj / f"{session}.jsonl"
    live.write_text(user_line(session, "/home/u/acme", "How do we rotate the staging database password?",
                              "u-1", "2026-03-01T10:00:00.000Z") + "\n"
                    + assistant_line(session, "/home/u/acme", "Use the vault CLI and restart the pods.", "a-1",
                                     "u-1", "2026-03-01T10:00:05.000Z") + "\n")
    daemon.start()
    daemon.idle()
    assert search(daemon, "rotate staging database password")[0]["exchange_key"] == "u-1"

    # Append a new exchange; a partial last line must wait until it is complete.
    t0 = time.monotonic()
    line_u = user_line(session, "/home/u/acme", "Why did the flamingo deploy fail on Tuesday?", "u-2",
                       "2026-03-02T09:00:00.000Z")
    line_a = assistant_line(session, "/home/u/acme", "The flamingo deploy failed because the quota ran out.",
                            "a-2", "u-2", "2026-03-02T09:00:03.000Z")
    with live.open("a") as fh:
        fh.write(line_u + "\n" + line_a[:40])
    with live.open("a") as fh:
        fh.write(line_a[40:] + "\n")

    def found() -> Any:
        hits = search(daemon, "flamingo deploy", limit=3)
        return hits and hits[0]["exchange_key"] == "u-2" and "quota ran out" in hits[0]["text"]

    daemon.wait_for(found, timeout=15, interval=0.1)
    assert time.monotonic() - t0 < 15
    # And only once, even though the file was read while the exchange was growing.
    st = daemon.idle()
    assert st["drawers"] == 2


def synthetic_session(path: Path, session: str, n: int, seed: int) -> None:
    rnd = random.Random(seed)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
             "lima", "mike", "november"]
    with path.open("w") as fh:
        for i in range(n):
            ts = f"2026-04-{1 + i % 28:02d}T{i % 24:02d}:00:00.000Z"
            q = f"question {i} about " + " ".join(rnd.choices(words, k=12))
            a = f"answer {i}: " + " ".join(rnd.choices(words, k=rnd.randint(20, 400)))
            fh.write(user_line(session, "/home/u/bulk", q, f"{session[:8]}-u{i}", ts) + "\n")
            fh.write(assistant_line(session, "/home/u/bulk", a, f"{session[:8]}-a{i}", f"u{i}", ts) + "\n")


def all_points(d: Daemon) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset = None
    while True:
        fields = ["exchange_key", "chunk_index", "content_hash", "chunk_count"]
        page = d.call("drawers", {"limit": 500, "offset": offset, "fields": fields})
        out.extend(page["drawers"])
        offset = page["next"]
        if offset is None:
            return out


@pytest.mark.timeout(600)
def test_kill_during_ingest_leaves_every_exchange_once(daemon: Daemon, home: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-bulk"
    proj.mkdir(parents=True)
    files = []
    for k in range(3):
        sid = f"{k}0000000-0000-0000-0000-000000000000"
        path = proj / f"{sid}.jsonl"
        synthetic_session(path, sid, 120, seed=k)
        files.append(path)
    expected = {ex.key for f in files for ex in parse_lines(lines_of(f))}
    rnd = random.Random(7)
    for _ in range(3):
        daemon.start()
        time.sleep(rnd.uniform(0.2, 2.5))
        daemon.kill()
    daemon.start()
    daemon.idle(timeout=400)
    points = all_points(daemon)
    by_key: dict[str, list[int]] = {}
    for p in points:
        by_key.setdefault(p["exchange_key"], []).append(p["chunk_index"])
    assert set(by_key) == expected
    for key, idx in by_key.items():
        assert sorted(idx) == list(range(len(idx))), key
    hashes = [(p["exchange_key"], p["content_hash"]) for p in points]
    assert len(hashes) == len(set(hashes))


@pytest.mark.timeout(120)
def test_second_daemon_on_same_data_dir_exits_4(daemon: Daemon, tmp_path: Path) -> None:
    daemon.start()
    second = subprocess.run([sys.executable, "-m", "mempald"], env=daemon.env, capture_output=True, text=True,
                            timeout=60)
    assert second.returncode == 4
    assert "another mempald" in second.stderr
    assert daemon.call("ping") == {"pong": True}
    assert daemon.stop() == 0


def test_cli_says_how_to_start_when_daemon_is_down(home: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "mempal.cli.main", "status"], capture_output=True, text=True,
                         env=dict(os.environ), timeout=30)
    assert out.returncode == 3
    assert "mempald is not running" in out.stderr and "start it" in out.stderr
    assert out.stderr.count("\n") == 1
