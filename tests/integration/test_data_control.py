"""The user's control over their memory (issue 21), through real daemons, the real CLI and the MCP SDK client:
forget (and the forget list that keeps a transcript on disk from bringing it back), exclusions (config globs
over paths and session cwds, ``.mempalignore``, counted in status, applied at once), export and import (a
round trip into a fresh palace), backup during a backfill and ``mempald restore``."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.integration.test_crash import no_duplicates, points
from tests.integration.test_skeleton import assistant_line, user_line

ENV = {"MEMPAL_INGEST_DEBOUNCE_MS": "50"}
S1 = "d1700000-0000-4000-8000-000000000001"
S2 = "d1700000-0000-4000-8000-000000000002"
S3 = "d1700000-0000-4000-8000-000000000003"


def exchanges(sid: str, cwd: str, tag: str, n: int, *, day: str = "2026-09-01", start: int = 0) -> str:
    out = []
    for i in range(start, start + n):
        ts = f"{day}T08:{i % 60:02d}:00.000Z"
        out.append(user_line(sid, cwd, f"Question {tag}{i}: how does the {tag} pipeline handle case {i}?",
                             f"{tag}-u{i}", ts))
        out.append(assistant_line(sid, cwd, f"Case {i} of the {tag} pipeline is handled by the {tag} retry stage.",
                                  f"{tag}-a{i}", f"{tag}-u{i}", ts))
    return "\n".join(out) + "\n"


def write(path: Path, body: str, mode: str = "a") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode) as fh:
        fh.write(body)
    return path


def now_exchange(sid: str, cwd: str, tag: str, key: str = "later") -> str:
    """An exchange that happens now (after any forget made before it)."""
    ts = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return (user_line(sid, cwd, f"Later question about the {tag} pipeline ({key})", f"{tag}-{key}-u", ts) + "\n"
            + assistant_line(sid, cwd, f"The {tag} pipeline now has a second retry stage ({key}).", f"{tag}-{key}-a",
                             f"{tag}-{key}-u", ts) + "\n")


def mempal(d: Daemon, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mempal.cli.main", *args], capture_output=True, text=True,
                          env=d.env, timeout=300, input=stdin)


def mempald(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mempald", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def ids(d: Daemon, **flt: Any) -> set[str]:
    out: set[str] = set()
    offset = None
    while True:
        page = d.call("drawers", {"limit": 1000, "offset": offset, "fields": ["session_id"], **flt})
        out |= {x["drawer_id"] for x in page["drawers"]}
        offset = page["next"]
        if offset is None:
            return out


def payloads(d: Daemon, **flt: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset = None
    while True:
        page = d.call("drawers", {"limit": 1000, "offset": offset, **flt})
        out += page["drawers"]
        offset = page["next"]
        if offset is None:
            return out


def cursor_offset(home: Path, path: Path) -> int | None:
    db = sqlite3.connect(f"file:{home / '.local/share/mempald/state.sqlite3'}?mode=ro", uri=True)
    try:
        row = db.execute("SELECT offset FROM cursors WHERE path = ?", (str(path),)).fetchone()
    finally:
        db.close()
    return None if row is None else int(row[0])


Palace = Callable[[str], dict[str, str]]


@pytest.fixture
def other_palace(home: Path, tmp_path: Path) -> Iterator[Palace]:
    """The environment of another palace beside the test's: its own data, config and runtime folders (the same
    HOME and transcripts)."""
    runtimes: list[str] = []

    def make(name: str) -> dict[str, str]:
        runtimes.append(tempfile.mkdtemp(prefix="mp-"))  # a socket path must stay short
        env = dict(os.environ)
        env.update({"MEMPAL_DATA_DIR": str(tmp_path / name / "data"),
                    "MEMPAL_CONFIG_DIR": str(tmp_path / name / "config"), "MEMPAL_RUNTIME_DIR": runtimes[-1] + "/run"})
        return env

    yield make
    for r in runtimes:
        shutil.rmtree(r, ignore_errors=True)


# forget -------------------------------------------------------------------------------------------------------
@pytest.mark.timeout(300)
def test_a_forgotten_session_stays_forgotten_until_reingested(daemon: Daemon, home: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-alpha"
    f1 = write(proj / f"{S1}.jsonl", exchanges(S1, "/home/u/alpha", "heron", 5))
    write(proj / f"{S2}.jsonl", exchanges(S2, "/home/u/alpha", "otter", 5))
    daemon.start(extra_env=ENV)
    daemon.idle()
    before = ids(daemon, session_id=S1)
    assert len(before) == 5 and len(ids(daemon, session_id=S2)) == 5

    # Counts first; without --yes (and no terminal to ask on) nothing changes.
    asked = mempal(daemon, "forget", "--session", S1)
    assert asked.returncode == 1, asked.stderr
    assert "5 drawers in 1 session from" in asked.stderr and "--yes" in asked.stderr
    dry = json.loads(mempal(daemon, "forget", "--session", S1, "--dry-run", "--json").stdout)
    assert dry["drawers"] == 5 and dry["dry_run"] and dry["wings"] == {"alpha": 5}
    assert ids(daemon, session_id=S1) == before

    done = mempal(daemon, "forget", "--session", S1, "--yes", "--reason", "a private chat")
    assert done.returncode == 0, done.stderr
    assert "forgot 5 drawers" in done.stdout
    assert ids(daemon, session_id=S1) == set() and len(ids(daemon, session_id=S2)) == 5
    hits = daemon.call("search", {"query": "how does the heron pipeline handle case 3", "min_score": 0})["hits"]
    assert all(h["session_id"] != S1 for h in hits)
    db = sqlite3.connect(f"file:{home / '.local/share/mempald/state.sqlite3'}?mode=ro", uri=True)
    (actor, reason, detail), = db.execute(
        "SELECT actor, reason, detail FROM audit WHERE action = 'forget'").fetchall()
    db.close()
    assert actor == "user" and reason == "a private chat" and json.loads(detail)["drawers"] == 5

    # What the session says after the forget is stored; what was forgotten is not, even read from the start
    # again after a purge (the transcript is still on disk).
    write(f1, now_exchange(S1, "/home/u/alpha", "heron"))
    later = daemon.wait_for(lambda: ids(daemon, session_id=S1), timeout=60)
    assert len(later) == 1 and not later & before
    assert daemon.call("purge", {})["purged"] == 5
    reread = mempal(daemon, "reread", str(f1), "--json")
    assert reread.returncode == 0, reread.stderr
    assert json.loads(reread.stdout)["files"] == 1
    assert ids(daemon, session_id=S1) == later

    # The way back: --reingest reads the transcript again, the same drawer ids.
    back = mempal(daemon, "forget", "--session", S1, "--reingest", "--yes")
    assert back.returncode == 0, back.stderr
    assert "read 1 transcripts again" in back.stdout
    assert daemon.wait_for(lambda: ids(daemon, session_id=S1) == before | later, timeout=60)
    no_duplicates(points(daemon))


@pytest.mark.anyio
@pytest.mark.timeout(300)
async def test_forget_a_wing_room_before_a_date_and_over_mcp(daemon: Daemon, home: Path) -> None:
    from mcp import types

    from tests.integration.test_mcp import shim, text_of

    proj = home / ".claude" / "projects" / "-home-u-beta"
    write(proj / f"{S3}.jsonl", exchanges(S3, "/home/u/beta", "wren", 4, day="2026-01-10")
          + exchanges(S3, "/home/u/beta", "wren", 3, day="2026-11-20", start=10))
    write(home / ".claude" / "projects" / "-home-u-alpha" / f"{S1}.jsonl", exchanges(S1, "/home/u/alpha", "heron", 2))
    daemon.start(extra_env=ENV)
    daemon.idle()
    beta = payloads(daemon, wing="beta")
    assert len(beta) == 7
    old = {p["drawer_id"] for p in beta if p["timestamp"].startswith("2026-01")}

    async with shim(daemon.env, home, "claude-code") as (session, _init):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        ann = tools["forget"].annotations
        assert ann is not None and ann.destructiveHint is True and ann.readOnlyHint is False
        res = await session.call_tool("forget", {"wing": "beta", "before": "2026-06-01", "dry_run": "true"})
        assert not res.isError, text_of(res)
        assert json.loads(text_of(res))["drawers"] == 4 and len(ids(daemon, wing="beta")) == 7  # counted only
        res = await session.call_tool("forget", {"wing": "beta", "before": "2026-06-01", "reason": "stale"})
        assert not res.isError, text_of(res)
        assert isinstance(res.content[0], types.TextContent)
        forgot = json.loads(text_of(res))
        assert forgot["forgotten"] == 4 and forgot["contexts_mended"] == 1
    left = ids(daemon, wing="beta")
    assert left == {p["drawer_id"] for p in beta} - old and len(ids(daemon, wing="alpha")) == 2
    # The first newer drawer had the last forgotten one's text as its indexing context: no longer.
    kept = json.dumps(payloads(daemon, wing="beta"))
    assert all(f"wren{i}:" not in kept for i in range(4)) and "wren10:" in kept
    db = sqlite3.connect(f"file:{home / '.local/share/mempald/state.sqlite3'}?mode=ro", uri=True)
    actors = [r[0] for r in db.execute("SELECT actor FROM audit WHERE action = 'forget'")]
    db.close()
    assert actors == ["claude"]
    # A room narrows a wing's forget.
    rooms = {p["room"] for p in payloads(daemon, wing="beta")}
    room = sorted(rooms)[0]
    r = daemon.call("forget", {"wing": "beta", "room": room, "dry_run": True})
    assert r["drawers"] == sum(1 for p in payloads(daemon, wing="beta") if p["room"] == room)
    with pytest.raises(Exception, match="say what to forget"):
        daemon.call("forget", {"room": room})


# exclusions ---------------------------------------------------------------------------------------------------
@pytest.mark.timeout(300)
def test_what_the_user_excludes_is_never_read(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    projects = home / ".claude" / "projects"
    stealth = tmp_path / "work" / "stealth"
    stealth.mkdir(parents=True)
    (stealth / ".mempalignore").write_text("# this whole project stays out of memory\n")
    app = tmp_path / "work" / "app"
    (app / "experiments").mkdir(parents=True)
    (app / ".mempalignore").write_text("experiments/\n")
    sa = write(projects / "-work-stealth" / "a.jsonl", exchanges("sa", str(stealth), "falcon", 2))
    sb = write(projects / "-work-app" / "b.jsonl", exchanges("sb", str(app), "badger", 2))
    sc = write(projects / "-work-app-experiments" / "c.jsonl", exchanges("sc", str(app / "experiments"), "mole", 2))
    sd = write(projects / "-x-private" / "d.jsonl", exchanges("sd", "/home/u/diary", "lark", 2))
    se = write(projects / "-home-u-clients-acme" / "e.jsonl", exchanges("se", "/home/u/clients/acme", "stoat", 2))
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "drafts").mkdir()
    (repo / "src" / "app.py").write_text("def pelican():\n    return 'the pelican module is public'\n")
    (repo / "drafts" / "plan.md").write_text("The flamingo acquisition plan is confidential.\n")
    (repo / ".mempalignore").write_text("drafts/\n")
    cfg = home / ".config" / "mempald" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[ingest]\nexclude = ["{projects / "-x-private"}", "**/clients/**"]\n')

    daemon.start(extra_env=ENV)
    assert mempal(daemon, "watch", "add", str(repo), "--mode", "projects").returncode == 0
    st = daemon.idle()
    sessions = {p["session_id"] for p in payloads(daemon)}
    assert sessions == {"sb", "src/app.py"}, sessions
    texts = json.dumps(payloads(daemon))
    assert "flamingo" not in texts and "falcon" not in texts and "mole" not in texts
    assert cursor_offset(home, sd) is None, "an excluded transcript is never read"
    ex = st["excluded"]
    assert ex["files"] == {str(projects / "-x-private"): 1, str(repo / ".mempalignore"): 1}
    assert ex["sessions"] == {"**/clients/**": 1, str(stealth / ".mempalignore"): 1, str(app / ".mempalignore"): 1}
    shown = mempal(daemon, "status").stdout
    assert "excluded: 2 files, 3 sessions" in shown
    for f in (sa, sc, se):
        assert cursor_offset(home, f) is not None  # read (to learn their cwd), nothing stored

    # A new rule applies at once (no restart) and says what was already stored of it.
    added = mempal(daemon, "exclude", "add", str(projects / "-work-app"), "--json")
    assert added.returncode == 0, added.stderr
    r = json.loads(added.stdout)
    assert r["stored"]["drawers"] == 2 and "--forget" in r["hint"]
    offset = cursor_offset(home, sb)
    write(sb, exchanges("sb", str(app), "badger", 1, start=5))
    control = write(projects / "-home-u-alpha" / f"{S1}.jsonl", exchanges(S1, "/home/u/alpha", "heron", 1))
    daemon.wait_for(lambda: ids(daemon, session_id=S1), timeout=60)  # written after sb: its events came first
    assert cursor_offset(home, sb) == offset and cursor_offset(home, control) is not None, "sb was read"
    listed = mempal(daemon, "exclude", "list", "--stored").stdout
    assert f"{projects / '-work-app'}  (config)" in listed and "2 drawers stored before it" in listed
    forgot = json.loads(mempal(daemon, "exclude", "add", str(projects / "-work-app"), "--forget", "--json").stdout)
    assert forgot["stored"]["forgotten"] == 2 and ids(daemon, session_id="sb") == set()

    # Removing it: the transcript is read again; what the session said up to the forget stays forgotten (the
    # exchange appended while it was excluded included), what it says after is stored.
    gone = mempal(daemon, "exclude", "remove", str(projects / "-work-app"))
    assert gone.returncode == 0, gone.stderr
    write(sb, now_exchange("sb", str(app), "badger", "after"))
    daemon.wait_for(lambda: len(ids(daemon, session_id="sb")) == 1, timeout=60)
    kept = json.dumps(payloads(daemon, session_id="sb"))
    assert "(after)" in kept and "badger5" not in kept, "forgotten text is in a stored drawer (its context?)"
    assert mempal(daemon, "exclude", "remove", "/nowhere").returncode == 1
    refused = mempal(daemon, "exclude", "add", "work/app")
    assert refused.returncode == 1 and "relative" in refused.stderr

    # Editing a .mempalignore applies at the next file: the whole app project now.
    (app / ".mempalignore").write_text("")
    size = sb.stat().st_size
    write(sb, now_exchange("sb", str(app), "badger", "whole"))
    daemon.wait_for(lambda: cursor_offset(home, sb) == size, timeout=60)  # read up to its new last exchange
    assert len(ids(daemon, session_id="sb")) == 1
    # ... and everything the exclusions cover that is still stored can be forgotten in one go.
    (repo / ".mempalignore").write_text("src/\n")
    r = daemon.call("forget", {"excluded": True, "dry_run": True})
    assert r["drawers"] == 2  # sb's exchange (its cwd) and src/app.py
    assert daemon.call("forget", {"excluded": True})["forgotten"] == 2
    assert {p["session_id"] for p in payloads(daemon)} == {S1}


# export and import --------------------------------------------------------------------------------------------
QUERIES = ("how does the heron pipeline handle case 3", "otter retry stage", "wren pipeline case 11",
           "which pipeline has a retry stage", "ONNX runtime wheel pin")


def answers(d: Daemon) -> list[list[tuple[str, float]]]:
    out = []
    for q in QUERIES:
        hits = d.call("search", {"query": q, "limit": 5, "min_score": 0})["hits"]
        out.append([(h["drawer_id"], float(h["score"])) for h in hits])
    return out


def same_answers(a: list[list[tuple[str, float]]], b: list[list[tuple[str, float]]]) -> bool:
    return all([i for i, _ in x] == [i for i, _ in y]
               and all(abs(s - t) < 1e-4 for (_, s), (_, t) in zip(x, y, strict=True))
               for x, y in zip(a, b, strict=True))


def stored(store_dir: Path) -> dict[str, tuple[dict[str, Any], list[float] | None]]:
    from mempald.store.base import Filters
    from mempald.store.edge import EdgeStore

    s = EdgeStore(store_dir, 384)
    out: dict[str, tuple[dict[str, Any], list[float] | None]] = {}
    try:
        offset = None
        while True:
            page, offset = s.scroll(Filters(include_deleted=True), 500, offset, with_vectors=True)
            out.update({p.id: (dict(p.payload), list(p.dense) if p.dense is not None else None) for p in page})
            if offset is None:
                return out
    finally:
        s.close()


@pytest.mark.timeout(600)
def test_export_then_import_into_a_fresh_palace_is_the_same_palace(daemon: Daemon, home: Path, tmp_path: Path,
                                                                     other_palace: Palace) -> None:
    projects = home / ".claude" / "projects"
    write(projects / "-home-u-alpha" / f"{S1}.jsonl", exchanges(S1, "/home/u/alpha", "heron", 6))
    write(projects / "-home-u-alpha" / f"{S2}.jsonl", exchanges(S2, "/home/u/alpha", "otter", 4))
    write(projects / "-home-u-beta" / f"{S3}.jsonl", exchanges(S3, "/home/u/beta", "wren", 4, start=10))
    daemon.start(extra_env=ENV)
    assert mempal(daemon, "save", "We pin numpy below 2 because the ONNX runtime wheel needs it", "--wing",
                  "alpha").returncode == 0
    daemon.idle()
    first = answers(daemon)
    assert all(first)
    n = len(ids(daemon))

    out = tmp_path / "export" / "palace.jsonl"
    r = mempal(daemon, "export", "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["drawers"] == n
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and stat.S_IMODE(out.parent.stat().st_mode) == 0o700
    lines = out.read_text().splitlines()
    assert json.loads(lines[0])["mempal_export"] == 1 and len(lines) == n + 1
    notes = tmp_path / "export" / "notes"
    md = json.loads(mempal(daemon, "export", "-o", str(notes), "--format", "md", "--json").stdout)
    assert md["drawers"] == n and md["sessions"] == 4  # three transcripts and the memory saved by hand
    files = sorted(p.relative_to(notes).as_posix() for p in notes.rglob("*.md"))
    assert len(files) == 5 and "index.md" in files and sum(f.startswith("alpha/") for f in files) == 3
    for p in notes.rglob("*"):
        assert stat.S_IMODE(p.stat().st_mode) == (0o700 if p.is_dir() else 0o600), p
    heron = next(p for p in notes.rglob("*.md") if S1[-8:] in p.name)
    body = heron.read_text()
    assert body.startswith("---\nwing: \"alpha\"\n") and f'session: "{S1}"' in body
    for line in lines[1:]:
        rec = json.loads(line)
        if rec["session_id"] == S1:
            assert rec["text"] in body  # verbatim
    assert "[[alpha/" in (notes / "index.md").read_text()
    # Refused: relative (the CLI makes paths absolute: asked over the socket), inside the daemon's own folders,
    # an existing file (unless --force).
    with pytest.raises(Exception, match="absolute"):
        daemon.call("export", {"output": "rel.jsonl"})
    for bad, needle in ((home / ".local/share/mempald/x.jsonl", "daemon's own"), (out, "exists")):
        res = mempal(daemon, "export", "-o", str(bad))
        assert res.returncode == 1 and needle in res.stderr, res.stderr
    assert mempal(daemon, "export", "-o", str(out), "--force").returncode == 0
    daemon.stop()

    env = other_palace("fresh")
    cfg = Path(env["MEMPAL_CONFIG_DIR"]) / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(f'[sources]\nclaude_projects = "{tmp_path / "nothing"}"\ncodex_sessions = ""\n')
    fresh = Daemon(env, tmp_path / "fresh.log").start()
    try:
        once = json.loads(mempal(fresh, "import", str(out), "--json").stdout)
        assert (once["added"], once["replaced"], once["unchanged"], once["bad"]) == (n, 0, 0, 0)
        fresh.idle()
        assert same_answers(answers(fresh), first), (answers(fresh), first)
        twice = json.loads(mempal(fresh, "import", str(out), "--json").stdout)
        assert (twice["added"], twice["replaced"], twice["unchanged"]) == (0, 0, n)
        assert fresh.call("status")["dense_backlog"] == 0
        # Every line accounted for; bad lines named, none stopping the rest.
        mixed = tmp_path / "mixed.jsonl"
        mixed.write_text(lines[0] + "\n" + lines[1] + "\nnot json at all\n\n" + json.dumps({"id": "nope", "text": "x"})
                         + "\n" + json.dumps({"id": json.loads(lines[2])["id"]}) + "\n")
        m = json.loads(mempal(fresh, "import", str(mixed), "--json").stdout)
        assert (m["lines"], m["unchanged"], m["bad"], m["blank"]) == (6, 1, 3, 1)
        assert [b.split(":")[0] for b in m["bad_lines"]] == ["line 3", "line 5", "line 6"]
    finally:
        fresh.stop()
    a = stored(home / ".local/share/mempald/store")
    b = stored(Path(env["MEMPAL_DATA_DIR"]) / "store")
    assert a.keys() == b.keys() and len(a) == n
    worst = 0.0
    for pid, (payload, dense) in a.items():
        assert b[pid][0] == payload, pid
        again = b[pid][1]
        assert dense is not None and again is not None
        worst = max(worst, *(abs(x - y) for x, y in zip(dense, again, strict=True)))
    assert worst < 1e-5, worst
    print(f"round trip: {n} drawers, dense vectors differ by at most {worst:.2e}")


# backup and restore -------------------------------------------------------------------------------------------
@pytest.mark.timeout(900)
def test_a_backup_taken_during_a_backfill_restores_everything_once(daemon: Daemon, home: Path, tmp_path: Path,
                                                                    other_palace: Palace) -> None:
    projects = home / ".claude" / "projects"
    for k in range(12):
        sid = f"d17b0000-0000-4000-8000-{k:012d}"
        write(projects / f"-home-u-p{k % 4}" / f"{sid}.jsonl", exchanges(sid, f"/home/u/p{k % 4}", f"t{k}x", 16))
    cfg = home / ".config" / "mempald" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text('[ingest]\nexclude = ["*-never"]\n')
    (home / ".config" / "mempald" / "identity.md").write_text("I am the one who backs up.\n")
    daemon.start(extra_env=ENV)
    st = daemon.wait_for(lambda: (s := daemon.call("status"))["drawers"] > 0 and s, timeout=60)
    assert st["dense_backlog"] + st["file_backlog"] > 0
    bk = tmp_path / "backups" / "one"
    r = mempal(daemon, "backup", str(bk), "--json")
    assert r.returncode == 0, r.stderr
    taken = json.loads(r.stdout)
    after = daemon.call("status")
    assert after["dense_backlog"] + after["file_backlog"] > 0, "the backfill was over before the backup"
    assert (bk / "MANIFEST.json").is_file() and taken["drawers"] > 0
    assert stat.S_IMODE(bk.stat().st_mode) == 0o700
    extra = projects / "-home-u-p0" / "d17b0000-0000-4000-8000-000000000000.jsonl"
    write(extra, exchanges("d17b0000-0000-4000-8000-000000000000", "/home/u/p0", "t0x", 3, start=40))
    full = mempal(daemon, "backup", str(bk))
    assert full.returncode == 1 and "not empty" in full.stderr
    inside = mempal(daemon, "backup", str(home / ".local/share/mempald/bk"))
    assert inside.returncode == 1 and "daemon's own" in inside.stderr
    daemon.idle(timeout=600)
    everything = ids(daemon)
    assert len(everything) == 12 * 16 + 3
    busy = mempald(daemon.env, "restore", str(bk))
    assert busy.returncode == 4 and "stop it first" in busy.stderr
    daemon.stop()

    env = other_palace("restored")
    done = mempald(env, "restore", str(bk), "--json")
    assert done.returncode == 0, done.stderr
    restored = json.loads(done.stdout)
    assert restored["drawers"] == taken["drawers"] and restored["config"]["config.toml"] == "restored"
    assert "*-never" in (Path(env["MEMPAL_CONFIG_DIR"]) / "config.toml").read_text()
    again = mempald(env, "restore", str(bk))
    assert again.returncode == 2 and "not empty" in again.stderr
    back = Daemon(env, tmp_path / "restored.log").start()
    try:
        back.idle(timeout=600)
        assert ids(back) == everything
        no_duplicates(points(back))
    finally:
        back.stop()
    (bk / "state.sqlite3").write_bytes(b"damaged")
    env2 = other_palace("second")
    bad = mempald(env2, "restore", str(bk))
    assert bad.returncode == 2 and "differs from what the backup recorded" in bad.stderr


@pytest.mark.timeout(300)
def test_a_backup_is_refused_when_its_disk_is_too_small(home: Path, tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=2m none {small}"],
                           capture_output=True, text=True, timeout=30) if os.path.exists("/usr/bin/unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs in a user namespace here ({probe.stderr if probe else 'no unshare'})")
    d = Daemon(dict(os.environ), tmp_path / "small.log")
    with d.log_path.open("ab") as log:  # the daemon sees a 2 MB disk at ``small``
        d.proc = subprocess.Popen(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=2m none {small} && "
                                   f"exec {sys.executable} -m mempald"], env=d.env, stdout=log,
                                  stderr=subprocess.STDOUT)
    try:
        d.wait_ready()
        r = mempal(d, "backup", str(small / "bk"))
        assert r.returncode == 1 and "too small for the backup" in r.stderr and "MB are free" in r.stderr, r.stderr
        again = mempal(d, "backup", str(small / "bk"))  # (the tmpfs is the daemon's: only it sees what is there)
        assert "too small" in again.stderr, "a refused backup left something behind"
        ok = mempal(d, "backup", str(tmp_path / "bk"))
        assert ok.returncode == 0, ok.stderr
    finally:
        d.stop()
