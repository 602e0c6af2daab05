"""Files in motion: transcripts change under the daemon's feet. None of this crashes it, and each case is
handled as DESIGN.md section 4 says: only complete lines are read, a shrunk or replaced file is re-read
from the start (deterministic ids: no duplicates), conversations outlive their files, unreadable and giant
lines are skipped with a count."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mempald.normalize.claude_code import parse_lines
from tests.conftest import Daemon
from tests.integration.test_crash import keyword_idle, no_duplicates, points
from tests.integration.test_skeleton import assistant_line, lines_of, user_line

ENV = {"MEMPAL_INGEST_DEBOUNCE_MS": "50"}
CWD = "/home/u/motion"


def exchange(sid: str, i: int, tag: str = "x", answer: str = "") -> str:
    ts = f"2026-09-01T08:{i % 60:02d}:00.000Z"
    u = user_line(sid, CWD, f"Question {tag}{i}: how does the {tag} pipeline handle case {i}?", f"{tag}-u{i}", ts)
    a = assistant_line(sid, CWD, answer or f"Case {i} of {tag} is handled by the retry stage.", f"{tag}-a{i}",
                       f"{tag}-u{i}", ts)
    return u + "\n" + a + "\n"


def write(path: Path, sid: str, rng: range, tag: str = "x", mode: str = "a") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode) as fh:
        fh.write("".join(exchange(sid, i, tag) for i in rng))


def keys(d: Daemon) -> dict[str, list[dict[str, Any]]]:
    return no_duplicates(points(d))


def wait_keys(d: Daemon, expected: set[str], timeout: float = 60) -> dict[str, list[dict[str, Any]]]:
    d.wait_for(lambda: set(keys(d)) == expected, timeout=timeout, interval=0.3)
    found = keys(d)
    assert all(len(v) == 1 for v in found.values()), "an exchange is stored twice"
    return found


def file_keys(*paths: Path) -> set[str]:
    return {ex.key for p in paths for ex in parse_lines(lines_of(p))}


def healthy(d: Daemon) -> None:
    assert d.proc is not None and d.proc.poll() is None, d.logs()[-3000:]
    assert d.call("ping") == {"pong": True}
    assert "ingest_crashed" not in d.logs() and "handler_crashed" not in d.logs()


@pytest.fixture
def proj(home: Path) -> Path:
    p = home / ".claude" / "projects" / "-home-u-motion"
    p.mkdir(parents=True)
    return p


SID = "a0710000-0000-4000-8000-000000000001"


@pytest.mark.timeout(240)
def test_appends_while_reading(daemon: Daemon, proj: Path) -> None:
    f = proj / f"{SID}.jsonl"
    write(f, SID, range(400))
    daemon.start(extra_env={**ENV, "MEMPAL_INGEST_READ_CHUNK_BYTES": "16384"})
    rnd = random.Random(3)

    def writer() -> None:  # appends in odd-sized pieces, so the daemon often sees half a line
        data = "".join(exchange(SID, i) for i in range(400, 600)).encode()
        pos = 0
        while pos < len(data):
            n = rnd.randint(1, 3000)
            with f.open("ab") as fh:
                fh.write(data[pos : pos + n])
            pos += n

    t = threading.Thread(target=writer)
    t.start()
    t.join(120)
    wait_keys(daemon, file_keys(f), timeout=120)
    healthy(daemon)


@pytest.mark.timeout(240)
def test_partial_last_line_waits(daemon: Daemon, proj: Path) -> None:
    f = proj / f"{SID}.jsonl"
    write(f, SID, range(2))
    nxt = exchange(SID, 2)
    with f.open("a") as fh:
        fh.write(nxt[:25])  # half of the next prompt line
    daemon.start(extra_env=ENV)
    wait_keys(daemon, {"x-u0", "x-u1"})
    # Everything read that can be: the half line stays in the backlog, unparsed.
    daemon.wait_for(lambda: (s := daemon.call("status"))["scans"] and not s["file_backlog"], timeout=60)
    assert set(keys(daemon)) == {"x-u0", "x-u1"}
    with f.open("a") as fh:
        fh.write(nxt[25:])
    found = wait_keys(daemon, {"x-u0", "x-u1", "x-u2"})
    daemon.wait_for(lambda: "retry stage" in keys(daemon)["x-u2"][0]["text"], timeout=30)
    assert len(found["x-u2"]) == 1
    healthy(daemon)


@pytest.mark.timeout(240)
def test_truncation_rereads_and_keeps_old_conversations(daemon: Daemon, proj: Path) -> None:
    f = proj / f"{SID}.jsonl"
    write(f, SID, range(6))
    daemon.start(extra_env=ENV)
    wait_keys(daemon, file_keys(f))
    # Truncated to a shorter prefix, then rewritten with different content: re-read from the start.
    with f.open("r+") as fh:
        fh.truncate(0)
    write(f, SID, range(3), tag="y")
    wait_keys(daemon, {f"x-u{i}" for i in range(6)} | {f"y-u{i}" for i in range(3)})
    # Truncated to the same bytes it had (a tool rewriting the same prefix): nothing twice.
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    f.write_bytes(data)
    keyword_idle(daemon, 60)
    wait_keys(daemon, {f"x-u{i}" for i in range(6)} | {f"y-u{i}" for i in range(3)})
    healthy(daemon)


@pytest.mark.timeout(240)
def test_replaced_by_rename_is_reread_without_duplicates(daemon: Daemon, proj: Path) -> None:
    f = proj / f"{SID}.jsonl"
    write(f, SID, range(5))
    daemon.start(extra_env=ENV)
    wait_keys(daemon, file_keys(f))
    tmp = proj / ".export.tmp"  # an editor or export tool writes a new file and renames it over the old one
    tmp.write_bytes(f.read_bytes() + exchange(SID, 5).encode() + exchange(SID, 6).encode())
    old_inode = f.stat().st_ino
    os.replace(tmp, f)
    assert f.stat().st_ino != old_inode
    wait_keys(daemon, {f"x-u{i}" for i in range(7)})
    healthy(daemon)


@pytest.mark.timeout(240)
def test_rotation(daemon: Daemon, proj: Path) -> None:
    f = proj / f"{SID}.jsonl"
    write(f, SID, range(4))
    daemon.start(extra_env=ENV)
    wait_keys(daemon, file_keys(f))
    rotated = proj / f"{SID}.1.jsonl"
    f.rename(rotated)  # log-style rotation: the old file moves aside, a new one takes the name
    write(f, SID, range(4, 8))
    found = wait_keys(daemon, {f"x-u{i}" for i in range(8)})
    # The moved exchanges are the same drawers (ids do not depend on the path), now citing where they are.
    def cited() -> bool:
        page = daemon.call("drawers", {"limit": 100, "fields": ["exchange_key", "source_path"]})["drawers"]
        where = {p["exchange_key"]: p["source_path"] for p in page}
        return all(where[f"x-u{i}"] == str(rotated) for i in range(4)) and all(
            where[f"x-u{i}"] == str(f) for i in range(4, 8))

    daemon.wait_for(cited, timeout=30)
    assert len(found) == 8
    healthy(daemon)


@pytest.mark.timeout(240)
def test_deleted_and_recreated_with_the_same_name(daemon: Daemon, proj: Path) -> None:
    f = proj / f"{SID}.jsonl"
    write(f, SID, range(3))
    daemon.start(extra_env=ENV)
    wait_keys(daemon, file_keys(f))
    f.unlink()
    daemon.wait_for(lambda: daemon.call("status")["sources"][0]["files"] == 0, timeout=30)
    assert set(keys(daemon)) == {"x-u0", "x-u1", "x-u2"}  # conversations outlive their files
    write(f, SID, range(2), tag="z")
    wait_keys(daemon, {"x-u0", "x-u1", "x-u2", "z-u0", "z-u1"})
    healthy(daemon)


@pytest.mark.timeout(240)
def test_directory_renamed(daemon: Daemon, proj: Path) -> None:
    f = proj / f"{SID}.jsonl"
    write(f, SID, range(3))
    daemon.start(extra_env=ENV)
    wait_keys(daemon, file_keys(f))
    moved = proj.parent / "-home-u-motion-renamed"
    proj.rename(moved)
    g = moved / f.name
    daemon.wait_for(lambda: all(p["source_path"] == str(g) for p in daemon.call(
        "drawers", {"fields": ["source_path"]})["drawers"]), timeout=60)
    write(g, SID, range(3, 5))  # the watch follows the folder to its new name
    wait_keys(daemon, {f"x-u{i}" for i in range(5)})
    healthy(daemon)


# A folder's mode change sends no file event: the periodic reconcile (here every 2 s) finds what it unlocked.
PERM_ENV = {**ENV, "MEMPAL_INGEST_RECONCILE_INTERVAL_S": "2"}


def _start_without_root_override(d: Daemon) -> None:
    """As root, drop CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH so file modes apply to the daemon too."""
    if os.geteuid() != 0:
        d.start(extra_env=PERM_ENV)
        return
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: root reads any file, so permission denied cannot happen")
    env = {**d.env, **PERM_ENV}
    with d.log_path.open("ab") as log:
        d.proc = subprocess.Popen([setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--",
                                   sys.executable, "-m", "mempald"], env=env, stdout=log, stderr=subprocess.STDOUT)
    d.wait_ready()


@pytest.mark.timeout(240)
def test_permission_denied_is_an_error_then_recovers(daemon: Daemon, proj: Path) -> None:
    ok = proj / f"{SID}.jsonl"
    write(ok, SID, range(2))
    locked_sid = "a0710000-0000-4000-8000-0000000000ff"
    locked = proj / f"{locked_sid}.jsonl"
    write(locked, locked_sid, range(2), tag="p")
    locked.chmod(0)
    locked_dir = proj.parent / "-home-u-locked"
    write(locked_dir / "b0710000-0000-4000-8000-000000000001.jsonl", "b0710000-0000-4000-8000-000000000001",
          range(1), tag="d")
    locked_dir.chmod(0)
    try:
        _start_without_root_override(daemon)
        wait_keys(daemon, {"x-u0", "x-u1"})
        st = daemon.wait_for(lambda: (s := daemon.call("status"))["sources"][0]["errors"] and s, timeout=30)
        assert "Permission denied" in st["sources"][0]["last_error"]
        healthy(daemon)
        locked.chmod(0o644)  # access granted: the change is noticed and the file read
        locked_dir.chmod(0o755)
        wait_keys(daemon, {"x-u0", "x-u1", "p-u0", "p-u1", "d-u0"}, timeout=60)
    finally:
        locked.chmod(0o644)
        locked_dir.chmod(0o755)
    healthy(daemon)


@pytest.mark.timeout(240)
def test_symlink_loops(daemon: Daemon, proj: Path) -> None:
    f = proj / f"{SID}.jsonl"
    write(f, SID, range(2))
    (proj / "self.jsonl").symlink_to(proj / "self.jsonl")  # ELOOP on open
    (proj / "a.jsonl").symlink_to(proj / "b.jsonl")
    (proj / "b.jsonl").symlink_to(proj / "a.jsonl")
    (proj / "up").symlink_to(proj.parent, target_is_directory=True)  # a folder loop
    daemon.start(extra_env=ENV)
    wait_keys(daemon, {"x-u0", "x-u1"})
    (proj / "later.jsonl").symlink_to(proj / "later.jsonl")  # one created while running
    write(f, SID, range(2, 3))
    wait_keys(daemon, {"x-u0", "x-u1", "x-u2"})
    keyword_idle(daemon, 60)
    healthy(daemon)


def vm_hwm_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


@pytest.mark.timeout(300)
def test_a_20mb_line_is_skipped_in_bounded_memory(daemon: Daemon, proj: Path) -> None:
    f = proj / f"{SID}.jsonl"
    write(f, SID, range(1))
    daemon.start(extra_env=ENV)
    wait_keys(daemon, {"x-u0"})
    keyword_idle(daemon, 60)
    assert daemon.proc is not None
    before = vm_hwm_kb(daemon.proc.pid)
    huge = json.dumps({"type": "user", "sessionId": SID, "uuid": "huge", "timestamp": "2026-09-01T09:00:00Z",
                       "message": {"role": "user", "content": "A" * (20 * 1024 * 1024)}})
    with f.open("a") as fh:
        fh.write(huge[: len(huge) // 2])  # half of it first: the reader must not hold it while it grows
    with f.open("a") as fh:
        fh.write(huge[len(huge) // 2 :] + "\n")
        fh.write(exchange(SID, 1))
    wait_keys(daemon, {"x-u0", "x-u1"}, timeout=120)
    st = daemon.wait_for(lambda: (s := daemon.call("status"))["sources"][0]["skipped"].get("long_line") and s,
                         timeout=60)
    assert st["sources"][0]["skipped"]["long_line"] == 1
    grown_mb = (vm_hwm_kb(daemon.proc.pid) - before) / 1024
    print(f"RELIABILITY long_line peak_rss_growth_mb={grown_mb:.0f}")
    assert grown_mb < 200, f"peak memory grew by {grown_mb:.0f} MB for a 20 MB line"
    assert "long_lines_skipped" in daemon.logs()
    healthy(daemon)


@pytest.mark.timeout(240)
def test_invalid_utf8_and_deeply_nested_json(daemon: Daemon, proj: Path) -> None:
    f = proj / f"{SID}.jsonl"
    bad = [
        b"\xff\xfe\xfd not even json \x80\n",
        user_line(SID, CWD, "broken \udcff bytes", "bad-utf8", "2026-09-01T10:00:00Z").encode(
            "utf-8", "surrogateescape").replace(b"\\udcff", b"\xff") + b"\n",
        b"[" * 200_000 + b"\n",
        b'{"type":"user","message":{"content":' + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"}}\n",
        b'{"type":"user","message":{"role":"user","content":' + b"[" * 5000 + b"]" * 5000 + b"}}\n",
        b"\x00\x00\x00\n",
        b'{"type": 5, "message": null, "uuid": ["x"]}\n',
    ]
    with f.open("wb") as fh:
        fh.write(exchange(SID, 0).encode())
        fh.writelines(bad)
        fh.write(exchange(SID, 1).encode())
    daemon.start(extra_env=ENV)
    expected = file_keys(f)
    assert {"x-u0", "x-u1"} <= expected
    wait_keys(daemon, expected)
    with f.open("ab") as fh:  # and again while running
        fh.writelines(bad)
        fh.write(exchange(SID, 2).encode())
    wait_keys(daemon, file_keys(f))
    healthy(daemon)
    print(f"RELIABILITY motion bad_lines={len(bad) * 2}")
